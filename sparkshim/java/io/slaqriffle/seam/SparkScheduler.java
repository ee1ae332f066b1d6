package io.slaqriffle.seam;

import static io.slaqriffle.seam.Feature.GATE;
import static io.slaqriffle.seam.Feature.POOLS;

import java.util.List;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;

/**
 * The task scheduler's internals that Riffle's reducer gate (GATE) and SLAQ's token pools (POOLS)
 * build on: {@code TaskSchedulerImpl} and the {@code Pool} API (all private[spark], since 1.x, checked
 * against 4.3.0), plus the private root-pool fields the gate overwrites. The scheduler lock is the
 * TaskSchedulerImpl object's monitor.
 */
public final class SparkScheduler {
  private static final Handle.Registry HANDLES = new Handle.Registry();
  private static final Set<Feature> BOTH = Set.of(GATE, POOLS);
  private static final String TS = "org.apache.spark.scheduler.TaskSchedulerImpl";
  private static final String POOL = "org.apache.spark.scheduler.Pool";
  private static final String SCHEDULABLE = "org.apache.spark.scheduler.Schedulable";
  private static final String BACKEND = "org.apache.spark.scheduler.SchedulerBackend";
  private static final String TSM = "org.apache.spark.scheduler.TaskSetManager";

  // The Pool API the shim's pools subclass and call (private[spark] class, since 1.x; 4.3.0).
  static {
    HANDLES.constructor(BOTH, POOL, "java.lang.String", "scala.Enumeration$Value", "int", "int");
    HANDLES.method(BOTH, POOL, "getSortedTaskSetQueue").returning("scala.collection.mutable.ArrayBuffer");
    HANDLES.method(BOTH, POOL, "schedulableQueue");
    HANDLES.method(BOTH, POOL, "schedulingMode");
    HANDLES.method(BOTH, POOL, "addSchedulable", SCHEDULABLE);
    HANDLES.method(Set.of(POOLS), POOL, "removeSchedulable", SCHEDULABLE);
    HANDLES.method(Set.of(POOLS), POOL, "increaseRunningTasks", "int");
    HANDLES.method(Set.of(POOLS), POOL, "decreaseRunningTasks", "int");
    HANDLES.method(Set.of(POOLS), POOL, "runningTasks");
  }

  private SparkScheduler() {}

  static void check(Feature f, SparkContext sc, List<String> problems) {
    Object ts = sc.taskScheduler();
    if (!(ts instanceof TaskSchedulerImpl)) {
      problems.add("task scheduler is " + (ts == null ? "null" : ts.getClass().getName()) + ", not TaskSchedulerImpl");
      return;
    }
    HANDLES.check(f, sc, problems);
  }

  /** {@code SparkContext.taskScheduler()} (private[spark]; 4.3.0). */
  private static final Handle TASK_SCHEDULER = HANDLES.called(BOTH, "org.apache.spark.SparkContext", "taskScheduler", SparkContext::taskScheduler);

  /**
   * The context's TaskSchedulerImpl; its monitor is the scheduler lock. Call only after a self-check
   * found GATE or POOLS available (the cast is what that check verified).
   */
  public static TaskSchedulerImpl taskScheduler(SparkContext sc) {
    if (!Features.available(sc, GATE) && !Features.available(sc, POOLS)) {
      Features.require(sc, POOLS);
    }
    return (TaskSchedulerImpl) sc.taskScheduler();
  }

  /** {@code TaskSchedulerImpl.rootPool()} (private[spark] class; 4.3.0). */
  private static final Handle ROOT_POOL = HANDLES.method(BOTH, TS, "rootPool");

  /** The scheduler's root pool, under which every pool and task set hangs. */
  public static Pool rootPool(TaskSchedulerImpl ts) {
    return ts.rootPool();
  }

  /** {@code TaskSchedulerImpl.backend()}, {@code SchedulerBackend.reviveOffers()} (private[spark]; 4.3.0). */
  private static final Handle BACKEND_OF = HANDLES.method(BOTH, TS, "backend");
  private static final Handle REVIVE_OFFERS = HANDLES.method(BOTH, BACKEND, "reviveOffers");

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

  /**
   * {@code TaskSchedulerImpl.CPUS_PER_TASK}: an Int on 4.0-4.2, a {@code scala.math.BigDecimal} on 4.3;
   * read by name, either accepted.
   */
  private static final Handle CPUS_PER_TASK = HANDLES.method(Set.of(POOLS), TS, "CPUS_PER_TASK");

  /** {@code spark.task.cpus} as the scheduler reads it. */
  public static double cpusPerTask(TaskSchedulerImpl ts) {
    Features.require(ts.sc(), POOLS);
    try {
      Object v = CPUS_PER_TASK.invoke(ts);
      if (v instanceof Number n) {
        return n.doubleValue();
      }
      if (v instanceof scala.math.BigDecimal d) {
        return d.doubleValue();
      }
      throw new IllegalStateException("TaskSchedulerImpl.CPUS_PER_TASK is a " + (v == null ? "null" : v.getClass().getName()));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read TaskSchedulerImpl.CPUS_PER_TASK: " + e, e);
    }
  }

  /** {@code CoarseGrainedSchedulerBackend.totalCoreCount()}, {@code SchedulerBackend.defaultParallelism()} (private[spark]; 4.3.0). */
  private static final Handle TOTAL_CORE_COUNT =
      HANDLES.method(Set.of(POOLS), "org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend", "totalCoreCount");
  private static final Handle DEFAULT_PARALLELISM = HANDLES.method(Set.of(POOLS), BACKEND, "defaultParallelism");

  /** Cores the executors offer, in cores (not task slots). */
  public static double coresOffered(TaskSchedulerImpl ts) {
    SchedulerBackend b = ts.backend();
    if (b instanceof CoarseGrainedSchedulerBackend) {
      return ((CoarseGrainedSchedulerBackend) b).totalCoreCount().get();
    }
    return b.defaultParallelism();
  }

  /**
   * {@code TaskSchedulerImpl.rootPool} (private final val; overwritten), {@code schedulableBuilder}, and
   * {@code FIFO/FairSchedulableBuilder.rootPool} (since 1.x; 4.3.0).
   */
  private static final Handle TS_ROOT_POOL = HANDLES.field(Set.of(GATE), TS, "rootPool", Pool.class);
  private static final Handle TS_SCHEDULABLE_BUILDER = HANDLES.field(Set.of(GATE), TS, "schedulableBuilder", Object.class);
  private static final Handle FIFO_BUILDER_ROOT_POOL =
      HANDLES.field(Set.of(GATE), "org.apache.spark.scheduler.FIFOSchedulableBuilder", "rootPool", Pool.class);
  private static final Handle FAIR_BUILDER_ROOT_POOL =
      HANDLES.field(Set.of(GATE), "org.apache.spark.scheduler.FairSchedulableBuilder", "rootPool", Pool.class);

  /** Makes {@code pool} the task scheduler's root pool (and its schedulable builder's). Call under the scheduler lock. */
  public static void replaceRootPool(TaskSchedulerImpl ts, Pool pool) {
    Features.require(ts.sc(), GATE);
    try {
      TS_ROOT_POOL.set(ts, pool);
      Object builder = TS_SCHEDULABLE_BUILDER.get(ts);
      if (builder != null) {
        Handle f = builder.getClass() == FAIR_BUILDER_ROOT_POOL.owner() ? FAIR_BUILDER_ROOT_POOL : FIFO_BUILDER_ROOT_POOL;
        if (f.owner().isInstance(builder)) {
          f.set(builder, pool);
        }
      }
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot replace TaskSchedulerImpl.rootPool: " + e, e);
    }
  }

  /** {@code TaskSetManager.taskInfos()}, {@code stageId()} (private[spark]; since 1.x; 4.3.0). */
  private static final Handle TASK_INFOS = HANDLES.method(Set.of(GATE), TSM, "taskInfos");
  private static final Handle STAGE_ID = HANDLES.method(Set.of(GATE), TSM, "stageId");

  /** True once {@code tsm} launched any task (its task infos are recorded under the scheduler lock at launch). */
  public static boolean launchedAnyTask(TaskSetManager tsm) {
    return !tsm.taskInfos().isEmpty();
  }
}
