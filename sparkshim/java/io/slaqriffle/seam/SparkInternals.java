package io.slaqriffle.seam;

import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;
import org.apache.spark.CleanerListener;
import org.apache.spark.ContextCleaner;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.MapStatus$;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.ShuffleMapStage;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.util.kvstore.KVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function0;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.xml.Node;

/**
 * Every access the shim makes to Spark members that are not public API ({@code private[spark]}
 * classes and members, and private fields through reflection): the only class that uses reflection
 * and the only one that calls such members. Modelled on Apache Celeborn's {@code SparkUtils}: each
 * handle is resolved once, annotated below with the Spark class and the versions it was checked
 * against, and {@link #selfCheck} tells at attach which {@link Feature}s still work on the running
 * Spark. A feature whose members are missing is switched off with one WARN; the component that needs
 * it asks {@link #available} before it casts or calls anything here.
 *
 * <p>What cannot live here is subclassing: SLAQ's {@code JobsPool}/{@code TokenPool} and Riffle's
 * {@code GateRootPool} extend the scheduler's {@link Pool}, Riffle's listener implements
 * {@code CleanerListener}, SLAQ's tab extends {@code SparkUITab}/{@code WebUIPage}. The members those
 * classes override or call are listed below and checked by the self-check of their feature, so a
 * changed Spark switches the feature off before any of those classes is loaded.
 *
 * <p>"4.3.0" means checked against that release's bytecode (javap of spark-core_2.13-4.3.0, the
 * pyspark this project runs) and exercised by the live tests; "since" notes come from Spark's source
 * history (JIRA where known). The supported line is pyproject.toml's pyspark requirement (4.3; the
 * sources do not compile against 4.0-4.2); a driver on another line gets one WARN at attach and this self-check.
 *
 * <table>
 * <caption>Members reached, and where they were checked</caption>
 * <tr><th>member</th><th>feature</th><th>checked</th></tr>
 * <tr><td>{@code SparkContext.taskScheduler()} (private[spark]), {@code TaskSchedulerImpl} (private[spark] class):
 *     {@code rootPool()}, {@code backend()} ({@code SchedulerBackend.reviveOffers()}), the scheduler lock
 *     (the TaskSchedulerImpl object)</td><td>GATE, POOLS</td><td>4.3.0 (all since 1.x)</td></tr>
 * <tr><td>{@code TaskSchedulerImpl.rootPool} (private final val; overwritten), {@code schedulableBuilder},
 *     {@code FIFO/FairSchedulableBuilder.rootPool} (since 1.x)</td><td>GATE</td><td>4.3.0</td></tr>
 * <tr><td>{@code Pool} (private[spark]): constructor {@code (String, SchedulingMode, int, int)},
 *     {@code getSortedTaskSetQueue()}, {@code schedulableQueue()}, {@code addSchedulable},
 *     {@code removeSchedulable}, {@code increase/decreaseRunningTasks(int)}, {@code runningTasks()},
 *     {@code schedulingMode()}; {@code TaskSetManager.stageId()}, {@code taskInfos()}</td>
 *     <td>GATE, POOLS</td><td>4.3.0 (since 1.x)</td></tr>
 * <tr><td>{@code TaskSchedulerImpl.CPUS_PER_TASK} (an Int in the 3.x line, a {@code scala.math.BigDecimal}
 *     on 4.3.0: read by name, either accepted)</td><td>POOLS</td><td>4.3.0</td></tr>
 * <tr><td>{@code CoarseGrainedSchedulerBackend.totalCoreCount()}, {@code SchedulerBackend.defaultParallelism()}
 *     (private[spark])</td><td>POOLS</td><td>4.3.0</td></tr>
 * <tr><td>{@code SparkContext.cleaner()}, {@code ContextCleaner.attachListener(CleanerListener)}
 *     (private[spark])</td><td>CLEANER</td><td>4.3.0</td></tr>
 * <tr><td>{@code ShuffleStatus.writeLock} (private, from {@code val (readLock, writeLock)}; the read/write
 *     lock pair replaced {@code synchronized} in the 3.x line)</td><td>COMMIT</td><td>4.3.0</td></tr>
 * <tr><td>{@code MapOutputTrackerMaster.shuffleStatuses()} (private[spark] accessor; ShuffleStatus since
 *     2.3, SPARK-20715), {@code ShuffleStatus.mapStatuses()/mapIdToMapIndex()} (map ids since 3.0,
 *     SPARK-25341), {@code invalidateSerializedMapOutputStatusCache()},
 *     {@code MapOutputTrackerMaster.incrementEpoch()}, {@code MapStatus.apply(loc, sizes, mapId, checksum)},
 *     {@code MapStatus.location()/mapId()/checksumValue()} (checksums since 4.0)</td><td>COMMIT</td><td>4.3.0</td></tr>
 * <tr><td>{@code MapStatus.getSizeForBlock(int)}, {@code Utils$.median(long[], boolean)} (private[spark]; the median
 *     {@code OptimizeSkewedJoin} uses), {@code ShufflePartitionsUtil$.splitSizeListByTargetSize(long[], long, double)} and
 *     {@code SMALL_PARTITION_FACTOR()} (spark-sql; what {@code createSkewPartitionSpecs} splits a skewed partition with),
 *     {@code SparkSession$.getDefaultSession()/getActiveSession()} and {@code RuntimeConfig.getOption}</td>
 *     <td>SKEW_SPLITS</td><td>4.3.0 (the smallPartitionFactor parameter since 3.3)</td></tr>
 * <tr><td>{@code Serializer.supportsRelocationOfSerializedObjects()},
 *     {@code CompressionCodec.supportsConcatenationOfSerializedStreams/createCodec} (private[spark])</td>
 *     <td>COMMIT (safety check)</td><td>4.3.0</td></tr>
 * <tr><td>{@code DAGScheduler.shuffleIdToMapStage} (private[scheduler] HashMap; read off its event loop,
 *     see {@link #shuffleDependency})</td><td>COMMIT (safety check)</td><td>4.3.0</td></tr>
 * <tr><td>{@code NettyRpcEnv.dispatcher}, {@code Dispatcher.endpointRefs} (Netty RPC, since 1.6),
 *     {@code BlockManagerMasterEndpoint.executorIdToLocalDirs} (a Guava cache since 3.0, SPARK-27651;
 *     Guava relocated to {@code org.sparkproject.guava})</td><td>LOCAL_DIRS</td><td>4.3.0</td></tr>
 * <tr><td>Spark Connect (spark-connect jar, private[connect]): {@code SparkConnectService$.MODULE$.executionManager()},
 *     {@code SparkConnectExecutionManager.listExecuteHolders()}, {@code ExecuteHolder.jobTag()/request()/executeKey()},
 *     {@code ExecuteKey.operationId()}; the public protos {@code ExecutePlanRequest -> Plan -> Command -> MlCommand.Fit}
 *     ({@code MlOperator.getName()}, {@code MlParams.getParamsMap()}); the listener events
 *     {@code SparkListenerConnectOperation{Finished,Failed,Canceled,Closed}.jobTag()}; the task set's
 *     {@code TaskSetManager.taskSet().properties()} and the root pool's {@code default} pool (replaced,
 *     {@code Pool.getSchedulableByName}); ML on Connect since 4.0</td><td>CONNECT</td><td>4.3.0</td></tr>
 * <tr><td>{@code SparkContext.ui()}, {@code WebUI.attachTab}, {@code SparkUITab}/{@code WebUIPage} (subclassed),
 *     {@code UIUtils.headerSparkPage/prependBaseUri} (all private[spark]; the SQL and Streaming tabs use them)</td>
 *     <td>UI_TAB</td><td>4.3.0</td></tr>
 * <tr><td>{@code SparkContext.listenerBus()}, {@code LiveListenerBus.post} (private[spark]); in the History Server
 *     {@code AppHistoryServerPlugin} (implemented), {@code ElementTrackingStore.write}, {@code SparkUI.store()},
 *     {@code AppStatusStore.store()} (private[spark]; the SQL tab's history plugin uses them)</td><td>EVENT_LOG</td><td>4.3.0</td></tr>
 * <tr><td>{@code SparkEnv.metricsSystem()}, {@code MetricsSystem.registerSource(Source)}, {@code Source} (implemented by
 *     {@link MetricSource}; all private[spark], as Spark's own sources and SparkPlugin metric registries use them)</td>
 *     <td>METRICS</td><td>4.3.0 (since 1.x)</td></tr>
 * </table>
 */
public final class SparkInternals {
  private static final Logger LOG = LoggerFactory.getLogger(SparkInternals.class);

  /** What breaks when a handle is missing; each is switched off on its own, with what the application loses. */
  public enum Feature {
    /** Holding a shuffle's reducers (the root-pool replacement). */
    GATE("Riffle", "shuffles run unmerged (plain Spark)"),
    /** Rewriting a shuffle's map statuses to point at merged files. */
    COMMIT("Riffle", "shuffles run unmerged (plain Spark)"),
    /** Reading an executor's ordered local dirs from the block manager master. */
    LOCAL_DIRS("Riffle", "shuffles run unmerged (plain Spark)"),
    /** Reading AQE's skew-split plan of a shuffle (SQL confs, Spark's own split function) so merged groups never straddle a split. */
    SKEW_SPLITS("Riffle", "merged groups are committed without regard to AQE's skew splits: a skewed partition of a merged shuffle may be split unevenly"),
    /** Hearing that Spark cleaned a shuffle. */
    CLEANER("Riffle", "merged files of cleaned shuffles are deleted only when the application ends"),
    /** SLAQ's token pools under the task scheduler's root pool. */
    POOLS("SLAQ", "allocations are not enforced: jobs share cores as Spark's scheduler decides"),
    /** SLAQ's and Riffle's tabs in the driver's Spark UI. */
    UI_TAB("SLAQ/Riffle", "the Spark UI has no SLAQ or Riffle tab; scheduling and merging are unaffected and the status stays in the driver log"),
    /** SLAQ's and Riffle's metric sources in the driver's metrics system. */
    METRICS("SLAQ/Riffle", "no slaq.* or riffle.* metrics reach the configured sinks; the tabs and the driver log still show the numbers"),
    /** Posting the tabs' models on the listener bus, so the event log carries them to the History Server. */
    EVENT_LOG("SLAQ/Riffle", "the tabs' models are not written to the event log, so Spark's History Server shows no SLAQ or Riffle tab; "
        + "the live tabs are unaffected"),
    /** Spark Connect's running operations, to make each spark.ml fit a Connect client submits a SLAQ job. */
    CONNECT("SLAQ", "spark.ml fits submitted by Spark Connect clients run as plain Spark work, outside SLAQ's jobs");

    private final String product;
    private final String consequence;

    Feature(String product, String consequence) {
      this.product = product;
      this.consequence = consequence;
    }
  }

  private static final String NETTY_RPC_ENV = "org.apache.spark.rpc.netty.NettyRpcEnv";
  private static final String DISPATCHER = "org.apache.spark.rpc.netty.Dispatcher";
  private static final String BLOCK_MANAGER_MASTER_ENDPOINT = "org.apache.spark.storage.BlockManagerMasterEndpoint";
  private static final String SHUFFLE_PARTITIONS_UTIL = "org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil$";
  private static final String SCHEDULING_MODE_VALUE = "scala.Enumeration$Value";
  private static final String ARRAY_BUFFER = "scala.collection.mutable.ArrayBuffer";

  private static final String CONNECT_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$";
  private static final String CONNECT_MANAGER = "org.apache.spark.sql.connect.service.SparkConnectExecutionManager";
  private static final String CONNECT_HOLDER = "org.apache.spark.sql.connect.service.ExecuteHolder";
  /** Prefix of the job tag Spark Connect gives every Spark job of one operation ({@code ExecuteHolder.jobTag}). */
  public static final String CONNECT_OPERATION_TAG = "SparkConnect_OperationTag_";
  private static final List<String> CONNECT_END_EVENTS = List.of(
      "org.apache.spark.sql.connect.service.SparkListenerConnectOperationFinished",
      "org.apache.spark.sql.connect.service.SparkListenerConnectOperationFailed",
      "org.apache.spark.sql.connect.service.SparkListenerConnectOperationCanceled",
      "org.apache.spark.sql.connect.service.SparkListenerConnectOperationClosed");

  private static final Field TS_ROOT_POOL = field("org.apache.spark.scheduler.TaskSchedulerImpl", "rootPool");
  private static final Field TS_SCHEDULABLE_BUILDER = field("org.apache.spark.scheduler.TaskSchedulerImpl", "schedulableBuilder");
  private static final Field FIFO_BUILDER_ROOT_POOL = field("org.apache.spark.scheduler.FIFOSchedulableBuilder", "rootPool");
  private static final Field FAIR_BUILDER_ROOT_POOL = field("org.apache.spark.scheduler.FairSchedulableBuilder", "rootPool");
  private static final Field STATUS_WRITE_LOCK = field("org.apache.spark.ShuffleStatus", "writeLock");
  private static final Field RPC_DISPATCHER = field(NETTY_RPC_ENV, "dispatcher");
  private static final Field DISPATCHER_ENDPOINT_REFS = field(DISPATCHER, "endpointRefs");
  private static final Field MASTER_LOCAL_DIRS = field(BLOCK_MANAGER_MASTER_ENDPOINT, "executorIdToLocalDirs");
  private static final Method TS_CPUS_PER_TASK = method("org.apache.spark.scheduler.TaskSchedulerImpl", "CPUS_PER_TASK");

  private static final Map<Feature, String> MISSING = Collections.synchronizedMap(new EnumMap<>(Feature.class));
  private static final Set<String> WARNED = Collections.synchronizedSet(new HashSet<>());

  private SparkInternals() {}

  private static Class<?> cls(String className) {
    try {
      return Class.forName(className, false, SparkContext.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  private static Field field(String className, String name) {
    Class<?> owner = cls(className);
    if (owner == null) {
      return null;
    }
    try {
      Field f = owner.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static Method method(String className, String name) {
    Class<?> owner = cls(className);
    try {
      return owner == null ? null : owner.getMethod(name);
    } catch (NoSuchMethodException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  // ---------------------------------------------------------------- the self-check

  /** Every feature, checked against the running Spark (the contract the tests hold this project's Spark to). */
  public static Map<Feature, String> selfCheck(SparkContext sc) {
    return selfCheck(sc, java.util.EnumSet.allOf(Feature.class));
  }

  /**
   * Checks the handles of {@code features} against the running Spark, at attach, and logs one WARN per
   * feature that is switched off (once per reason per JVM). Returns the features of those that are
   * missing, with why; {@link #available} answers from the latest check of each feature.
   */
  public static Map<Feature, String> selfCheck(SparkContext sc, Set<Feature> features) {
    Map<Feature, String> missing = new EnumMap<>(Feature.class);
    for (Feature f : features) {
      List<String> problems = new ArrayList<>();
      try {
        check(f, sc, problems);
      } catch (RuntimeException | LinkageError e) {
        problems.add(e.toString());
      }
      if (problems.isEmpty()) {
        MISSING.remove(f);
      } else {
        String why = String.join("; ", problems);
        missing.put(f, why);
        MISSING.put(f, why);
        if (WARNED.add(f + why)) {
          LOG.warn("{}: feature {} is switched off on Spark {} ({}): {}.", f.product, f, sc.version(), why, f.consequence);
        }
      }
    }
    return missing;
  }

  private static void check(Feature feature, SparkContext sc, List<String> problems) {
    switch (feature) {
      case GATE -> {
        checkScheduler(sc, problems);
        requireField(problems, TS_ROOT_POOL, "TaskSchedulerImpl.rootPool", Pool.class);
        requireField(problems, TS_SCHEDULABLE_BUILDER, "TaskSchedulerImpl.schedulableBuilder", Object.class);
        requireField(problems, FIFO_BUILDER_ROOT_POOL, "FIFOSchedulableBuilder.rootPool", Pool.class);
        requireField(problems, FAIR_BUILDER_ROOT_POOL, "FairSchedulableBuilder.rootPool", Pool.class);
        requireMethod(problems, "org.apache.spark.scheduler.TaskSetManager", "taskInfos");
        requireMethod(problems, "org.apache.spark.scheduler.TaskSetManager", "stageId");
      }
      case POOLS -> {
        checkScheduler(sc, problems);
        if (TS_CPUS_PER_TASK == null) {
          problems.add("TaskSchedulerImpl.CPUS_PER_TASK not found");
        }
        requireMethod(problems, "org.apache.spark.scheduler.SchedulerBackend", "defaultParallelism");
        requireMethod(problems, "org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend", "totalCoreCount");
        requireMethod(problems, "org.apache.spark.scheduler.Pool", "increaseRunningTasks", "int");
        requireMethod(problems, "org.apache.spark.scheduler.Pool", "decreaseRunningTasks", "int");
        requireMethod(problems, "org.apache.spark.scheduler.Pool", "runningTasks");
        requireMethod(problems, "org.apache.spark.scheduler.Pool", "removeSchedulable", "org.apache.spark.scheduler.Schedulable");
      }
      case COMMIT -> {
        requireField(problems, STATUS_WRITE_LOCK, "ShuffleStatus.writeLock", Lock.class);
        mapOutputTracker().shuffleStatuses();
        sc.dagScheduler().shuffleIdToMapStage();
        requireMethod(problems, "org.apache.spark.ShuffleStatus", "mapStatuses");
        requireMethod(problems, "org.apache.spark.ShuffleStatus", "mapIdToMapIndex");
        requireMethod(problems, "org.apache.spark.ShuffleStatus", "invalidateSerializedMapOutputStatusCache");
        requireMethod(problems, "org.apache.spark.MapOutputTrackerMaster", "incrementEpoch");
        requireMethod(problems, "org.apache.spark.scheduler.MapStatus$", "apply",
            "org.apache.spark.storage.BlockManagerId", "[J", "long", "long");
        requireMethod(problems, "org.apache.spark.scheduler.MapStatus", "checksumValue");
        requireMethod(problems, "org.apache.spark.scheduler.MapStatus", "mapId");
        requireMethod(problems, "org.apache.spark.scheduler.MapStatus", "location");
        requireMethod(problems, "org.apache.spark.serializer.Serializer", "supportsRelocationOfSerializedObjects");
        requireMethod(problems, "org.apache.spark.io.CompressionCodec$", "supportsConcatenationOfSerializedStreams",
            "org.apache.spark.io.CompressionCodec");
        requireMethod(problems, "org.apache.spark.io.CompressionCodec$", "createCodec", "org.apache.spark.SparkConf", "java.lang.String");
      }
      case SKEW_SPLITS -> {
        requireMethod(problems, "org.apache.spark.scheduler.MapStatus", "getSizeForBlock", "int");
        requireMethod(problems, "org.apache.spark.util.Utils$", "median", "[J", "boolean");
        requireMethod(problems, SHUFFLE_PARTITIONS_UTIL, "splitSizeListByTargetSize", "[J", "long", "double");
        requireMethod(problems, SHUFFLE_PARTITIONS_UTIL, "SMALL_PARTITION_FACTOR");
        requireMethod(problems, "org.apache.spark.sql.SparkSession$", "getDefaultSession");
        requireMethod(problems, "org.apache.spark.sql.SparkSession$", "getActiveSession");
        requireMethod(problems, "org.apache.spark.sql.RuntimeConfig", "getOption", "java.lang.String");
      }
      case LOCAL_DIRS -> {
        try {
          masterEndpoint();
        } catch (IllegalStateException e) {
          problems.add(e.getMessage());
        }
      }
      case CLEANER -> {
        sc.cleaner();
        requireMethod(problems, "org.apache.spark.ContextCleaner", "attachListener", "org.apache.spark.CleanerListener");
      }
      case UI_TAB -> {
        sc.ui();
        requireMethod(problems, "org.apache.spark.ui.WebUI", "attachTab", "org.apache.spark.ui.WebUITab");
        requireMethod(problems, "org.apache.spark.ui.UIUtils", "prependBaseUri",
            "jakarta.servlet.http.HttpServletRequest", "java.lang.String", "java.lang.String");
        requireMethod(problems, "org.apache.spark.ui.UIUtils", "headerSparkPage", "jakarta.servlet.http.HttpServletRequest",
            "java.lang.String", "scala.Function0", "org.apache.spark.ui.SparkUITab", "scala.Option", "boolean", "boolean", "boolean");
      }
      case EVENT_LOG -> {
        sc.listenerBus();
        requireMethod(problems, "org.apache.spark.scheduler.LiveListenerBus", "post", "org.apache.spark.scheduler.SparkListenerEvent");
      }
      case METRICS -> {
        // called, not looked up: reflecting over SparkEnv's methods loads types missing from pyspark's jars
        if (sc.env() == null || sc.env().metricsSystem() == null) {
          problems.add("the context has no metrics system");
        }
        requireMethod(problems, "org.apache.spark.metrics.MetricsSystem", "registerSource", "org.apache.spark.metrics.source.Source");
        requireMethod(problems, "org.apache.spark.metrics.source.Source", "sourceName");
        requireMethod(problems, "org.apache.spark.metrics.source.Source", "metricRegistry");
      }
      case CONNECT -> {
        requireMethod(problems, CONNECT_SERVICE, "executionManager");
        requireMethod(problems, CONNECT_MANAGER, "listExecuteHolders");
        requireMethod(problems, CONNECT_HOLDER, "jobTag");
        requireMethod(problems, CONNECT_HOLDER, "request");
        requireMethod(problems, CONNECT_HOLDER, "executeKey");
        requireMethod(problems, "org.apache.spark.sql.connect.service.ExecuteKey", "operationId");
        requireMethod(problems, "org.apache.spark.connect.proto.ExecutePlanRequest", "getPlan");
        requireMethod(problems, "org.apache.spark.connect.proto.Plan", "getCommand");
        requireMethod(problems, "org.apache.spark.connect.proto.Command", "hasMlCommand");
        requireMethod(problems, "org.apache.spark.connect.proto.Command", "getMlCommand");
        requireMethod(problems, "org.apache.spark.connect.proto.MlCommand", "hasFit");
        requireMethod(problems, "org.apache.spark.connect.proto.MlCommand", "getFit");
        requireMethod(problems, "org.apache.spark.connect.proto.MlCommand$Fit", "getEstimator");
        requireMethod(problems, "org.apache.spark.connect.proto.MlCommand$Fit", "getParams");
        requireMethod(problems, "org.apache.spark.connect.proto.MlOperator", "getName");
        requireMethod(problems, "org.apache.spark.connect.proto.MlParams", "getParamsMap");
        requireMethod(problems, "org.apache.spark.connect.proto.Expression$Literal", "getLiteralTypeCase");
        for (String event : CONNECT_END_EVENTS) {
          requireMethod(problems, event, "jobTag");
        }
        requireMethod(problems, "org.apache.spark.scheduler.TaskSetManager", "taskSet");
        requireMethod(problems, "org.apache.spark.scheduler.TaskSet", "properties");
        requireMethod(problems, "org.apache.spark.scheduler.Pool", "getSchedulableByName", "java.lang.String");
      }
      default -> throw new IllegalArgumentException(feature.toString());
    }
  }

  /** The task scheduler is Spark's TaskSchedulerImpl with the Pool API the shim's pools build on. */
  private static void checkScheduler(SparkContext sc, List<String> problems) {
    Object ts = sc.taskScheduler();
    if (!(ts instanceof TaskSchedulerImpl)) {
      problems.add("task scheduler is " + (ts == null ? "null" : ts.getClass().getName()) + ", not TaskSchedulerImpl");
      return;
    }
    requireMethod(problems, "org.apache.spark.scheduler.TaskSchedulerImpl", "rootPool");
    requireMethod(problems, "org.apache.spark.scheduler.TaskSchedulerImpl", "backend");
    requireMethod(problems, "org.apache.spark.scheduler.SchedulerBackend", "reviveOffers");
    requireConstructor(problems, "org.apache.spark.scheduler.Pool", "java.lang.String", SCHEDULING_MODE_VALUE, "int", "int");
    requireMethod(problems, "org.apache.spark.scheduler.Pool", "getSortedTaskSetQueue");
    requireReturns(problems, "org.apache.spark.scheduler.Pool", "getSortedTaskSetQueue", ARRAY_BUFFER);
    requireMethod(problems, "org.apache.spark.scheduler.Pool", "schedulableQueue");
    requireMethod(problems, "org.apache.spark.scheduler.Pool", "schedulingMode");
    requireMethod(problems, "org.apache.spark.scheduler.Pool", "addSchedulable", "org.apache.spark.scheduler.Schedulable");
  }

  private static void requireField(List<String> problems, Field f, String name, Class<?> type) {
    if (f == null) {
      problems.add(name + " not found");
    } else if (!type.isAssignableFrom(f.getType())) {
      problems.add(name + " is a " + f.getType().getName() + ", expected " + type.getName());
    }
  }

  private static Class<?>[] types(String... names) {
    Class<?>[] out = new Class<?>[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = switch (names[i]) {
        case "int" -> int.class;
        case "long" -> long.class;
        case "boolean" -> boolean.class;
        case "double" -> double.class;
        case "[J" -> long[].class;
        default -> cls(names[i]);
      };
      if (out[i] == null) {
        return null;
      }
    }
    return out;
  }

  private static Method publicMethod(String owner, String name, String... params) {
    Class<?> c = cls(owner);
    Class<?>[] p = types(params);
    try {
      return c == null || p == null ? null : c.getMethod(name, p);
    } catch (NoSuchMethodException | LinkageError e) {
      return null;
    }
  }

  private static void requireMethod(List<String> problems, String owner, String name, String... params) {
    if (publicMethod(owner, name, params) == null) {
      problems.add(owner.substring(owner.lastIndexOf('.') + 1) + "." + name + "(" + String.join(", ", params) + ") not found");
    }
  }

  private static void requireReturns(List<String> problems, String owner, String name, String type) {
    Method m = publicMethod(owner, name);
    Class<?> expected = cls(type);
    if (m != null && (expected == null || !expected.isAssignableFrom(m.getReturnType()))) {
      problems.add(owner.substring(owner.lastIndexOf('.') + 1) + "." + name + "() returns " + m.getReturnType().getName() + ", expected " + type);
    }
  }

  private static void requireConstructor(List<String> problems, String owner, String... params) {
    Class<?> c = cls(owner);
    Class<?>[] p = types(params);
    try {
      if (c == null || p == null) {
        throw new NoSuchMethodException();
      }
      c.getConstructor(p);
    } catch (NoSuchMethodException | LinkageError e) {
      problems.add(owner.substring(owner.lastIndexOf('.') + 1) + "(" + String.join(", ", params) + ") not found");
    }
  }

  /** True when the latest {@link #selfCheck} of {@code feature} found every handle it needs. */
  public static boolean available(Feature feature) {
    return !MISSING.containsKey(feature);
  }

  /** Why {@code feature} is off, or null. */
  public static String whyMissing(Feature feature) {
    return MISSING.get(feature);
  }

  private static void require(Feature... features) {
    for (Feature f : features) {
      String why = MISSING.get(f);
      if (why != null) {
        throw new IllegalStateException("feature " + f + " is off on this Spark: " + why);
      }
    }
  }

  // ---------------------------------------------------------------- the task scheduler (GATE, POOLS)

  /**
   * The context's TaskSchedulerImpl; its monitor is the scheduler lock. Call only after a self-check
   * found GATE or POOLS available (the cast is what that check verified).
   */
  public static TaskSchedulerImpl taskScheduler(SparkContext sc) {
    if (!available(Feature.GATE) && !available(Feature.POOLS)) {
      require(Feature.POOLS);
    }
    return (TaskSchedulerImpl) sc.taskScheduler();
  }

  /** The scheduler's root pool, under which every pool and task set hangs. */
  public static Pool rootPool(TaskSchedulerImpl ts) {
    return ts.rootPool();
  }

  /**
   * Asks the scheduler backend to offer resources now (after tokens were deposited or reducers
   * released). Not once the context is stopping: its backend may be gone (a plugin's brain detaches
   * after Spark stopped the scheduler), and there is nothing left to offer.
   */
  public static void reviveOffers(TaskSchedulerImpl ts) {
    if (!ts.sc().isStopped()) {
      ts.backend().reviveOffers();
    }
  }

  /** {@code spark.task.cpus} as the scheduler reads it. */
  public static double cpusPerTask(TaskSchedulerImpl ts) {
    require(Feature.POOLS);
    try {
      Object v = TS_CPUS_PER_TASK.invoke(ts);
      if (v instanceof Number n) {
        return n.doubleValue();
      }
      if (v instanceof scala.math.BigDecimal d) {
        return d.doubleValue();
      }
      throw new IllegalStateException("TaskSchedulerImpl.CPUS_PER_TASK is a " + (v == null ? "null" : v.getClass().getName()));
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new IllegalStateException("cannot read TaskSchedulerImpl.CPUS_PER_TASK: " + e, e);
    }
  }

  /** Cores the executors offer, in cores (not task slots). */
  public static double coresOffered(TaskSchedulerImpl ts) {
    SchedulerBackend b = ts.backend();
    if (b instanceof CoarseGrainedSchedulerBackend) {
      return ((CoarseGrainedSchedulerBackend) b).totalCoreCount().get();
    }
    return b.defaultParallelism();
  }

  /** Makes {@code pool} the task scheduler's root pool (and its schedulable builder's). Call under the scheduler lock. */
  public static void replaceRootPool(TaskSchedulerImpl ts, Pool pool) {
    require(Feature.GATE);
    try {
      TS_ROOT_POOL.set(ts, pool);
      Object builder = TS_SCHEDULABLE_BUILDER.get(ts);
      if (builder != null) {
        Field f = builder.getClass() == FAIR_BUILDER_ROOT_POOL.getDeclaringClass() ? FAIR_BUILDER_ROOT_POOL : FIFO_BUILDER_ROOT_POOL;
        if (f.getDeclaringClass().isInstance(builder)) {
          f.set(builder, pool);
        }
      }
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot replace TaskSchedulerImpl.rootPool: " + e, e);
    }
  }

  /** True once {@code tsm} launched any task (its task infos are recorded under the scheduler lock at launch). */
  public static boolean launchedAnyTask(TaskSetManager tsm) {
    return !tsm.taskInfos().isEmpty();
  }

  // ---------------------------------------------------------------- CLEANER

  /** Registers {@code listener} with the context cleaner; false when there is none (reference tracking off) or CLEANER is off. */
  public static boolean attachCleanerListener(SparkContext sc, CleanerListener listener) {
    if (!available(Feature.CLEANER)) {
      return false;
    }
    Option<ContextCleaner> cleaner = sc.cleaner();
    if (cleaner.isEmpty()) {
      return false;
    }
    cleaner.get().attachListener(listener);
    return true;
  }

  // ---------------------------------------------------------------- UI_TAB

  /**
   * Adds a tab built by {@code tab} to the driver's Spark UI (nothing when the UI is disabled). A
   * Spark whose UI classes changed loses only the tab, with one WARN; the scheduler is unaffected.
   */
  public static boolean attachTab(SparkContext sc, Function<SparkUI, ? extends SparkUITab> tab) {
    if (!available(Feature.UI_TAB)) {
      return false;
    }
    try {
      Option<SparkUI> ui = sc.ui();
      if (ui.isEmpty()) {
        return false;
      }
      ui.get().attachTab(tab.apply(ui.get()));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ/Riffle: a Spark UI tab is switched off on Spark {}: {}. Scheduling and merging are unaffected; the status stays in the driver log.",
          sc.version(), e.toString());
      return false;
    }
  }

  /** {@code path} under the UI's base URI (behind a proxy, the proxy's prefix). */
  public static String prependBaseUri(HttpServletRequest request, String basePath, String path) {
    return UIUtils.prependBaseUri(request, basePath, path);
  }

  /** A page with Spark's header, navigation and styles around {@code content}. */
  public static Seq<Node> sparkPage(HttpServletRequest request, String title, Function0<Seq<Node>> content, SparkUITab tab) {
    return UIUtils.headerSparkPage(request, title, content, tab, Option.empty(), false, false, false);
  }

  // ---------------------------------------------------------------- EVENT_LOG

  /**
   * Posts {@code event} on the driver's listener bus, where Spark's event logging listener writes it to
   * the event log (when {@code spark.eventLog.enabled}); false when EVENT_LOG is off. Asynchronous: the
   * bus delivers it to every listener in order, off the caller's thread.
   */
  public static boolean postEvent(SparkContext sc, SparkListenerEvent event) {
    if (!available(Feature.EVENT_LOG)) {
      return false;
    }
    try {
      sc.listenerBus().post(event);
      return true;
    } catch (RuntimeException | LinkageError e) {
      if (WARNED.add("postEvent" + e)) {
        LOG.warn("SLAQ/Riffle: cannot post the tabs' models to the event log on Spark {}: {}.", sc.version(), e.toString());
      }
      return false;
    }
  }

  /** The key-value store a (live or History Server) Spark UI reads its application's state from. */
  public static KVStore uiStore(SparkUI ui) {
    return ui.store().store();
  }

  // ---------------------------------------------------------------- METRICS

  /**
   * Registers {@code registry} as the driver metrics system's source {@code name}, so every configured
   * sink (PrometheusServlet, JMX, CSV, ...) exports its metrics as {@code <namespace>.driver.<name>.*};
   * false when METRICS is off or the context has no running metrics system.
   */
  public static boolean registerSource(SparkContext sc, String name, com.codahale.metrics.MetricRegistry registry) {
    if (!available(Feature.METRICS)) {
      return false;
    }
    try {
      SparkEnv env = sc.env();
      if (env == null) {
        return false;
      }
      env.metricsSystem().registerSource(new MetricSource(name, registry));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ/Riffle: the {} metric source is switched off on Spark {}: {}.", name, sc.version(), e.toString());
      return false;
    }
  }

  // ---------------------------------------------------------------- COMMIT

  public static MapOutputTrackerMaster mapOutputTracker() {
    return (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
  }

  /** The tracker's bookkeeping for {@code shuffle}, or null when Spark has none (cleaned, unknown). */
  public static ShuffleStatus shuffleStatus(int shuffle) {
    require(Feature.COMMIT);
    Option<ShuffleStatus> s = mapOutputTracker().shuffleStatuses().get(shuffle);
    return s.isDefined() ? s.get() : null;
  }

  /** The private write lock every mutation of {@code status} takes. */
  public static Lock writeLock(ShuffleStatus status) {
    try {
      return (Lock) STATUS_WRITE_LOCK.get(status);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot read ShuffleStatus.writeLock: " + e, e);
    }
  }

  /** The shuffle's map statuses by map index (the live array: write it only under {@link #writeLock}). */
  public static MapStatus[] mapStatuses(ShuffleStatus status) {
    return status.mapStatuses();
  }

  /** The shuffle's map id to map index (live: change it only under {@link #writeLock}). */
  @SuppressWarnings("unchecked")
  public static scala.collection.mutable.HashMap<Object, Object> mapIdToIndex(ShuffleStatus status) {
    return status.mapIdToMapIndex();
  }

  public static MapStatus newMapStatus(BlockManagerId location, long[] sizes, long mapId, long checksum) {
    return MapStatus$.MODULE$.apply(location, sizes, mapId, checksum);
  }

  public static long mapId(MapStatus status) {
    return status.mapId();
  }

  public static BlockManagerId location(MapStatus status) {
    return status.location();
  }

  public static long checksum(MapStatus status) {
    return status.checksumValue();
  }

  /** Makes readers see the rewritten statuses: drops the serialized-status cache and bumps the tracker's epoch. */
  public static void publishStatuses(ShuffleStatus status) {
    status.invalidateSerializedMapOutputStatusCache();
    mapOutputTracker().incrementEpoch();
  }

  /** Whether the dependency's serializer writes records that may be relocated (so streams can be concatenated). */
  public static boolean serializerRelocates(ShuffleDependency<?, ?, ?> dep) {
    return dep.serializer().supportsRelocationOfSerializedObjects();
  }

  /** Whether Spark's {@code codec} supports concatenated compressed streams. */
  public static boolean codecConcatenates(SparkConf conf, String codec) {
    return CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(CompressionCodec$.MODULE$.createCodec(conf, codec));
  }

  /**
   * The dependency of {@code shuffle}'s map stage, or null. {@code DAGScheduler.shuffleIdToMapStage}
   * is a plain HashMap owned by the DAG event loop; it is read here only from the listener when the
   * map stage's StageSubmitted event arrives: the entry was written before the event was posted (the
   * listener bus queue orders the two), and a concurrent insert of another key can only make the
   * lookup miss, never return another stage. A miss is reported as null and never cached: the
   * caller then leaves that shuffle unmerged.
   */
  public static ShuffleDependency<?, ?, ?> shuffleDependency(SparkContext sc, int shuffle) {
    try {
      Option<ShuffleMapStage> stage = sc.dagScheduler().shuffleIdToMapStage().get(shuffle);
      return stage.isDefined() ? stage.get().shuffleDep() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  // ---------------------------------------------------------------- SKEW_SPLITS

  /** Bytes the status records for reduce partition {@code partition} (what AQE's planners read). */
  public static long sizeForBlock(MapStatus status, int partition) {
    return status.getSizeForBlock(partition);
  }

  /**
   * A SQL conf as the application's session sees it (the thread's active session, else the default
   * one), else from the SparkConf; null when unset everywhere. A commit runs on a py4j thread, where
   * only the default session is known: it is the session SQL queries run in unless the application
   * made others.
   */
  public static String sqlConf(SparkContext sc, String key) {
    try {
      Option<org.apache.spark.sql.SparkSession> session = org.apache.spark.sql.SparkSession$.MODULE$.getActiveSession();
      if (session.isEmpty()) {
        session = org.apache.spark.sql.SparkSession$.MODULE$.getDefaultSession();
      }
      if (session.isDefined()) {
        Option<String> v = session.get().conf().getOption(key);
        if (v.isDefined()) {
          return v.get();
        }
      }
    } catch (RuntimeException | LinkageError e) {
      // no SQL module or session: only the SparkConf is left
    }
    return sc.getConf().getOption(key).isDefined() ? sc.getConf().get(key) : null;
  }

  /** The median {@code OptimizeSkewedJoin} compares partition sizes with. */
  public static long median(long[] sizes) {
    return org.apache.spark.util.Utils$.MODULE$.median(sizes.clone(), false);
  }

  /** Where AQE starts each split of a skewed partition whose per-map sizes are {@code sizes}: Spark's own function, same factor. */
  public static int[] skewSplitStarts(long[] sizes, long targetSize) {
    org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil$ util = org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil$.MODULE$;
    return util.splitSizeListByTargetSize(sizes, targetSize, util.SMALL_PARTITION_FACTOR());
  }

  /** Indexes whose re-registered status carried another checksum than the one it replaced (Spark's checksum-mismatch record). */
  public static int checksumMismatches(ShuffleStatus status) {
    try {
      return status.checksumMismatchIndices().size();
    } catch (LinkageError e) {
      return -1; // a Spark without the record (before 4.1): nothing to compare
    }
  }

  // ---------------------------------------------------------------- LOCAL_DIRS

  private static Object masterEndpoint() {
    Object rpcEnv = SparkEnv.get().rpcEnv();
    if (RPC_DISPATCHER == null || DISPATCHER_ENDPOINT_REFS == null || MASTER_LOCAL_DIRS == null) {
      throw new IllegalStateException("NettyRpcEnv.dispatcher, Dispatcher.endpointRefs or BlockManagerMasterEndpoint.executorIdToLocalDirs not found");
    }
    if (!RPC_DISPATCHER.getDeclaringClass().isInstance(rpcEnv)) {
      throw new IllegalStateException("RPC env is " + rpcEnv.getClass().getName() + ", not " + NETTY_RPC_ENV);
    }
    try {
      Map<?, ?> refs = (Map<?, ?>) DISPATCHER_ENDPOINT_REFS.get(RPC_DISPATCHER.get(rpcEnv));
      for (Object endpoint : refs.keySet()) {
        if (MASTER_LOCAL_DIRS.getDeclaringClass().isInstance(endpoint)) {
          return endpoint;
        }
      }
    } catch (IllegalAccessException | ClassCastException e) {
      throw new IllegalStateException("cannot walk the RPC endpoints: " + e, e);
    }
    throw new IllegalStateException("no BlockManagerMasterEndpoint registered in this driver");
  }

  /** The executor's ordered blockmgr dirs as the block manager master recorded them; empty when unknown. */
  public static String[] localDirs(String executorId) {
    require(Feature.LOCAL_DIRS);
    try {
      @SuppressWarnings("unchecked")
      org.sparkproject.guava.cache.Cache<String, String[]> cache =
          (org.sparkproject.guava.cache.Cache<String, String[]>) MASTER_LOCAL_DIRS.get(masterEndpoint());
      String[] dirs = cache.getIfPresent(executorId);
      return dirs == null ? new String[0] : dirs.clone();
    } catch (IllegalAccessException | ClassCastException e) {
      throw new IllegalStateException("cannot read BlockManagerMasterEndpoint.executorIdToLocalDirs: " + e, e);
    }
  }

  // ---------------------------------------------------------------- Spark Connect (CONNECT)

  /** A spark.ml fit a Connect client submitted: its operation's job tag and id, the estimator's class and its params. */
  public record ConnectFit(String jobTag, String operationId, String estimator, Map<String, String> params) {}

  /**
   * The thread's (or task set's) {@code spark.job.tags} property, and so the Connect operation whose
   * Spark jobs they are, when that operation is a spark.ml fit; null for any other operation or work.
   * Reads the running operation's request (Spark Connect keeps it in its ExecuteHolder).
   */
  public static ConnectFit connectFit(String jobTags) {
    if (jobTags == null || !jobTags.contains(CONNECT_OPERATION_TAG) || !available(Feature.CONNECT)) {
      return null;
    }
    try {
      Object service = cls(CONNECT_SERVICE).getField("MODULE$").get(null);
      Object manager = call(service, "executionManager");
      scala.collection.Iterable<?> holders = (scala.collection.Iterable<?>) call(manager, "listExecuteHolders");
      Set<String> tags = Set.of(jobTags.split(","));
      for (scala.collection.Iterator<?> it = holders.iterator(); it.hasNext(); ) {
        Object holder = it.next();
        String tag = (String) call(holder, "jobTag");
        if (!tags.contains(tag)) {
          continue;
        }
        Object command = call(call(call(holder, "request"), "getPlan"), "getCommand");
        if (!(Boolean) call(command, "hasMlCommand")) {
          return null;
        }
        Object ml = call(command, "getMlCommand");
        if (!(Boolean) call(ml, "hasFit")) {
          return null;
        }
        Object fit = call(ml, "getFit");
        String estimator = (String) call(call(fit, "getEstimator"), "getName");
        Map<String, String> params = new java.util.TreeMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) call(call(fit, "getParams"), "getParamsMap")).entrySet()) {
          params.put((String) e.getKey(), literal(e.getValue()));
        }
        return new ConnectFit(tag, (String) call(call(holder, "executeKey"), "operationId"), estimator, params);
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      if (WARNED.add("connect-read" + e)) {
        LOG.warn("SLAQ: cannot read Spark Connect's operation ({}); its spark.ml fit runs as plain Spark work", e.toString());
      }
    }
    return null;
  }

  /** A proto {@code Expression.Literal} param value as text: its scalar, or its kind for anything else. */
  private static String literal(Object lit) throws ReflectiveOperationException {
    String kind = String.valueOf(call(lit, "getLiteralTypeCase"));
    String getter = switch (kind) {
      case "DOUBLE" -> "getDouble";
      case "FLOAT" -> "getFloat";
      case "INTEGER" -> "getInteger";
      case "LONG" -> "getLong";
      case "SHORT" -> "getShort";
      case "BYTE" -> "getByte";
      case "BOOLEAN" -> "getBoolean";
      case "STRING" -> "getString";
      default -> null;
    };
    return getter == null ? kind.toLowerCase(java.util.Locale.ROOT) : String.valueOf(call(lit, getter));
  }

  private static Object call(Object target, String name) throws ReflectiveOperationException {
    Method m = target.getClass().getMethod(name);
    m.setAccessible(true);
    return m.invoke(target);
  }

  /** The job tag of a Spark Connect operation that ended (finished, failed, was canceled or closed), or null for any other event. */
  public static String connectOperationEnded(Object event) {
    if (!available(Feature.CONNECT) || !CONNECT_END_EVENTS.contains(event.getClass().getName())) {
      return null;
    }
    try {
      return (String) call(event, "jobTag");
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** The local properties a task set was submitted with (its job's: pool, job tags, SLAQ job). */
  public static java.util.Properties properties(org.apache.spark.scheduler.Schedulable s) {
    return s instanceof TaskSetManager tsm ? tsm.taskSet().properties() : null;
  }

  /**
   * Replaces the root pool's {@code default} pool (where task sets with no pool property go) with
   * {@code make(old)}, which takes over old's task sets. Call under the scheduler lock; returns the
   * new pool, or null when there is no default pool.
   */
  public static Pool replaceDefaultPool(TaskSchedulerImpl ts, Function<Pool, Pool> make) {
    require(Feature.CONNECT);
    Pool root = ts.rootPool();
    org.apache.spark.scheduler.Schedulable old = root.getSchedulableByName("default");
    if (!(old instanceof Pool oldPool) || old.getClass() != Pool.class) {
      return null;
    }
    Pool replacement = make.apply(oldPool);
    root.removeSchedulable(oldPool);
    for (org.apache.spark.scheduler.Schedulable s : new ArrayList<>(oldPool.schedulableQueue())) {
      oldPool.removeSchedulable(s);
      replacement.addSchedulable(s);
    }
    root.addSchedulable(replacement);
    return replacement;
  }
}
