package io.slaqriffle.shim;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Lock;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.ShuffleMapStage;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Every access the shim makes to Spark internals that have no public API: the only class that uses
 * reflection, and the only one that touches {@code private[spark]} members beyond the scheduler
 * {@link Pool} API. Modelled on Apache Celeborn's {@code SparkUtils}: each field is resolved once
 * into a static handle, annotated with the Spark class, the member and the versions it was checked
 * against, and {@link #selfCheck} tells at attach which features still work on the running Spark.
 * A feature whose handles are missing is switched off with one WARN; nothing here throws at a caller
 * that checked {@link #available} first.
 *
 * <p>"verified" means checked against that release's bytecode (javap) and exercised by the live
 * tests; the "since" notes come from Spark's history (JIRA numbers given where known) and were not
 * re-run against older releases. The pinned range is pyspark &lt;4.4 (pyproject.toml).
 *
 * <table>
 * <caption>Members reached, and where they were verified</caption>
 * <tr><th>member</th><th>feature</th><th>verified</th></tr>
 * <tr><td>{@code TaskSchedulerImpl.rootPool} (private final val, since 1.x; overwritten)</td><td>GATE</td>
 *     <td>4.3.0 (javap of spark-core_2.13-4.3.0, live tests)</td></tr>
 * <tr><td>{@code TaskSchedulerImpl.schedulableBuilder}, {@code FIFO/FairSchedulableBuilder.rootPool}
 *     (since 1.x)</td><td>GATE</td><td>4.3.0</td></tr>
 * <tr><td>{@code ShuffleStatus.writeLock} (private, from {@code val (readLock, writeLock)}; the read/write
 *     lock pair replaced {@code synchronized} in the 3.x line)</td><td>COMMIT</td><td>4.3.0</td></tr>
 * <tr><td>{@code MapOutputTrackerMaster.shuffleStatuses()} (private[spark] accessor; ShuffleStatus since
 *     2.3, SPARK-20715), {@code ShuffleStatus.mapStatuses/mapIdToMapIndex} (map ids since 3.0,
 *     SPARK-25341), {@code MapStatus.checksumValue}</td><td>COMMIT</td><td>4.3.0</td></tr>
 * <tr><td>{@code NettyRpcEnv.dispatcher}, {@code Dispatcher.endpointRefs} (Netty RPC, since 1.6),
 *     {@code BlockManagerMasterEndpoint.executorIdToLocalDirs} (a Guava cache since 3.0, SPARK-27651;
 *     Guava relocated to {@code org.sparkproject.guava})</td><td>LOCAL_DIRS</td><td>4.3.0</td></tr>
 * <tr><td>{@code DAGScheduler.shuffleIdToMapStage} (private[scheduler] HashMap; read off its event loop,
 *     see {@link #shuffleDependency})</td><td>COMMIT (safety check)</td><td>4.3.0</td></tr>
 * <tr><td>{@code SparkContext.ui()}, {@code WebUI.attachTab}, {@code SparkUITab}/{@code WebUIPage} (subclassed),
 *     {@code UIUtils.headerSparkPage/prependBaseUri} (all private[spark]; the SQL and Streaming tabs use them)</td>
 *     <td>SLAQ UI tab</td><td>4.3.0</td></tr>
 * </table>
 */
public final class SparkInternals {
  private static final Logger LOG = LoggerFactory.getLogger(SparkInternals.class);

  /** What breaks when a handle is missing; each is switched off on its own. */
  public enum Feature {
    /** Holding a shuffle's reducers (the root-pool replacement). */
    GATE,
    /** Rewriting a shuffle's map statuses to point at merged files. */
    COMMIT,
    /** Reading an executor's ordered local dirs from the block manager master. */
    LOCAL_DIRS
  }

  private static final String NETTY_RPC_ENV = "org.apache.spark.rpc.netty.NettyRpcEnv";
  private static final String DISPATCHER = "org.apache.spark.rpc.netty.Dispatcher";
  private static final String BLOCK_MANAGER_MASTER_ENDPOINT = "org.apache.spark.storage.BlockManagerMasterEndpoint";

  private static final Field TS_ROOT_POOL = field(TaskSchedulerImpl.class, "rootPool");
  private static final Field TS_SCHEDULABLE_BUILDER = field(TaskSchedulerImpl.class, "schedulableBuilder");
  private static final Field FIFO_BUILDER_ROOT_POOL = field("org.apache.spark.scheduler.FIFOSchedulableBuilder", "rootPool");
  private static final Field FAIR_BUILDER_ROOT_POOL = field("org.apache.spark.scheduler.FairSchedulableBuilder", "rootPool");
  private static final Field STATUS_WRITE_LOCK = field(ShuffleStatus.class, "writeLock");
  private static final Field RPC_DISPATCHER = field(NETTY_RPC_ENV, "dispatcher");
  private static final Field DISPATCHER_ENDPOINT_REFS = field(DISPATCHER, "endpointRefs");
  private static final Field MASTER_LOCAL_DIRS = field(BLOCK_MANAGER_MASTER_ENDPOINT, "executorIdToLocalDirs");

  private static final Map<Feature, String> MISSING = Collections.synchronizedMap(new EnumMap<>(Feature.class));

  private SparkInternals() {}

  private static Field field(String className, String name) {
    try {
      return field(Class.forName(className, false, SparkContext.class.getClassLoader()), name);
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  private static Field field(Class<?> owner, String name) {
    try {
      Field f = owner.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  /**
   * Checks every handle against the running Spark, once per attach, and logs one WARN per feature
   * that is switched off. Returns the features that are missing, with why.
   */
  public static Map<Feature, String> selfCheck(SparkContext sc) {
    Map<Feature, String> missing = new EnumMap<>(Feature.class);
    List<String> gate = new ArrayList<>();
    if (!(sc.taskScheduler() instanceof TaskSchedulerImpl)) {
      gate.add("task scheduler is " + sc.taskScheduler().getClass().getName() + ", not TaskSchedulerImpl");
    }
    addIfMissing(gate, TS_ROOT_POOL, "TaskSchedulerImpl.rootPool", Pool.class);
    addIfMissing(gate, TS_SCHEDULABLE_BUILDER, "TaskSchedulerImpl.schedulableBuilder", Object.class);
    addIfMissing(gate, FIFO_BUILDER_ROOT_POOL, "FIFOSchedulableBuilder.rootPool", Pool.class);
    addIfMissing(gate, FAIR_BUILDER_ROOT_POOL, "FairSchedulableBuilder.rootPool", Pool.class);
    if (!gate.isEmpty()) {
      missing.put(Feature.GATE, String.join("; ", gate));
    }
    List<String> commit = new ArrayList<>();
    addIfMissing(commit, STATUS_WRITE_LOCK, "ShuffleStatus.writeLock", Lock.class);
    try {
      mapOutputTracker().shuffleStatuses();
    } catch (RuntimeException | LinkageError e) {
      commit.add("MapOutputTrackerMaster.shuffleStatuses(): " + e);
    }
    if (!commit.isEmpty()) {
      missing.put(Feature.COMMIT, String.join("; ", commit));
    }
    try {
      masterEndpoint();
    } catch (IllegalStateException e) {
      missing.put(Feature.LOCAL_DIRS, e.getMessage());
    }
    MISSING.clear();
    MISSING.putAll(missing);
    for (Map.Entry<Feature, String> e : missing.entrySet()) {
      LOG.warn("Riffle: feature {} is switched off on Spark {}: {}. Shuffles run unmerged (plain Spark).",
          e.getKey(), sc.version(), e.getValue());
    }
    return missing;
  }

  private static void addIfMissing(List<String> problems, Field f, String name, Class<?> type) {
    if (f == null) {
      problems.add(name + " not found");
    } else if (!type.isAssignableFrom(f.getType())) {
      problems.add(name + " is a " + f.getType().getName() + ", expected " + type.getName());
    }
  }

  /** True when the last {@link #selfCheck} found every handle {@code feature} needs. */
  public static boolean available(Feature feature) {
    return !MISSING.containsKey(feature);
  }

  /** Why {@code feature} is off, or null. */
  public static String whyMissing(Feature feature) {
    return MISSING.get(feature);
  }

  // ---------------------------------------------------------------- GATE

  /** Makes {@code pool} the task scheduler's root pool (and its schedulable builder's). Call under the scheduler lock. */
  static void replaceRootPool(TaskSchedulerImpl ts, Pool pool) {
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
  static boolean launchedAnyTask(TaskSetManager tsm) {
    return !tsm.taskInfos().isEmpty();
  }

  // ---------------------------------------------------------------- SLAQ UI tab

  /**
   * Adds the "SLAQ" tab to the driver's Spark UI (nothing when the UI is disabled). A Spark whose UI
   * classes changed loses only the tab, with one WARN; the scheduler itself is unaffected.
   */
  static boolean attachSlaqTab(SparkContext sc, SlaqStatus status) {
    try {
      Option<org.apache.spark.ui.SparkUI> ui = sc.ui();
      if (ui.isEmpty()) {
        return false;
      }
      ui.get().attachTab(new SlaqTab(ui.get(), status));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ: the Spark UI tab is switched off on Spark {}: {}. Scheduling is unaffected; the status stays in the driver log.",
          sc.version(), e.toString());
      return false;
    }
  }

  // ---------------------------------------------------------------- COMMIT

  static MapOutputTrackerMaster mapOutputTracker() {
    return (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
  }

  /** The tracker's bookkeeping for {@code shuffle}, or null when Spark has none (cleaned, unknown). */
  static ShuffleStatus shuffleStatus(int shuffle) {
    Option<ShuffleStatus> s = mapOutputTracker().shuffleStatuses().get(shuffle);
    return s.isDefined() ? s.get() : null;
  }

  /** The private write lock every mutation of {@code status} takes. */
  static Lock writeLock(ShuffleStatus status) {
    try {
      return (Lock) STATUS_WRITE_LOCK.get(status);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot read ShuffleStatus.writeLock: " + e, e);
    }
  }

  /**
   * The dependency of {@code shuffle}'s map stage, or null. {@code DAGScheduler.shuffleIdToMapStage}
   * is a plain HashMap owned by the DAG event loop; it is read here only from the listener when the
   * map stage's StageSubmitted event arrives: the entry was written before the event was posted (the
   * listener bus queue orders the two), and a concurrent insert of another key can only make the
   * lookup miss, never return another stage. A miss is reported as null and never cached: the
   * caller then leaves that shuffle unmerged.
   */
  static ShuffleDependency<?, ?, ?> shuffleDependency(SparkContext sc, int shuffle) {
    try {
      Option<ShuffleMapStage> stage = sc.dagScheduler().shuffleIdToMapStage().get(shuffle);
      return stage.isDefined() ? stage.get().shuffleDep() : null;
    } catch (RuntimeException e) {
      return null;
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
  static String[] localDirs(String executorId) {
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
}
