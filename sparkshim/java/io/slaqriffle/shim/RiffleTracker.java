package io.slaqriffle.shim;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.Lock;
import org.apache.spark.CleanerListener;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.scheduler.DAGScheduler;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.MapStatus$;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.ShuffleMapStage;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.Stage;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.storage.BlockManagerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.collection.Iterator;

/**
 * Riffle's driver-side eyes and hands in the JVM.
 *
 * <p>Eyes: a listener records every finished map output (shuffle, map index, map id, executor,
 * host, bytes), stage completions, shuffle read metrics, executor removals and shuffle cleanups as
 * lines Python drains. Hands: a gate that holds the reducers of a shuffle being merged (installed
 * as the task scheduler's root pool), and an atomic commit that rewrites a group's map statuses to
 * point at a merged file under the shuffle's write lock, then invalidates the cached statuses and
 * bumps the epoch, all while the readers are still held.
 */
public final class RiffleTracker extends SparkListener implements CleanerListener {
  private static final Logger LOG = LoggerFactory.getLogger(RiffleTracker.class);
  private final SparkContext sc;
  private final TaskSchedulerImpl ts;
  private final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
  private final Map<Integer, Integer> stageToShuffle = new ConcurrentHashMap<>();
  private final Map<Integer, int[]> stageReads = new ConcurrentHashMap<>();
  private final Map<Integer, Integer> reducers = new ConcurrentHashMap<>(); // shuffle -> reduce partitions, seen while its stage lived
  private final Map<Integer, Long> held = new ConcurrentHashMap<>(); // shuffle -> release deadline (nanos)
  private final Set<Integer> readersSeen = ConcurrentHashMap.newKeySet();
  private final Map<Integer, long[]> stageMetrics = new ConcurrentHashMap<>(); // blocks, bytes, tasks, submitted, completed
  private volatile boolean merging = true;
  private volatile long holdTimeoutNanos = 30_000_000_000L;

  RiffleTracker(SparkContext sc) throws ReflectiveOperationException {
    this.sc = sc;
    this.ts = (TaskSchedulerImpl) sc.taskScheduler();
    synchronized (ts) {
      Pool old = ts.rootPool();
      if (!(old instanceof GateRootPool)) {
        GateRootPool gate = new GateRootPool(old.schedulingMode(), this, old);
        setField(ts, "rootPool", gate);
        Object builder = getField(ts, "schedulableBuilder");
        if (builder != null) {
          setField(builder, "rootPool", gate);
        }
      }
    }
    sc.addSparkListener(this);
    if (sc.cleaner().isDefined()) {
      sc.cleaner().get().attachListener(this);
    }
  }

  // ---------------------------------------------------------------- configuration from Python
  public void configure(boolean merging, double holdTimeoutSeconds) {
    this.merging = merging;
    this.holdTimeoutNanos = (long) (holdTimeoutSeconds * 1e9);
  }

  // ---------------------------------------------------------------- listener
  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    StageInfo info = event.stageInfo();
    if (info.shuffleDepId().isEmpty()) {
      return;
    }
    int shuffle = (Integer) info.shuffleDepId().get();
    stageToShuffle.put(info.stageId(), shuffle);
    int parts = numPartitions(shuffle);
    if (parts > 0) {
      reducers.put(shuffle, parts);
    }
    String unsafe = unsafeReason(shuffle);
    boolean hold = merging && unsafe == null && info.attemptNumber() == 0 && hold(shuffle);
    events.add("B\t" + shuffle + "\t" + info.stageId() + "\t" + info.attemptNumber() + "\t" + info.numTasks() + "\t"
        + parts + "\t" + hold + "\t" + (unsafe == null ? "" : unsafe));
    metrics(info.stageId())[3] = System.nanoTime();
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    TaskInfo t = event.taskInfo();
    if (event.taskMetrics() != null) {
      long[] m = metrics(event.stageId());
      synchronized (m) {
        m[0] += event.taskMetrics().shuffleReadMetrics().totalBlocksFetched();
        m[1] += event.taskMetrics().shuffleReadMetrics().totalBytesRead();
        m[2] += 1;
      }
    }
    if (!"ShuffleMapTask".equals(event.taskType()) || !t.successful()) {
      return;
    }
    Integer shuffle = stageToShuffle.get(event.stageId());
    if (shuffle == null) {
      return;
    }
    long bytes = event.taskMetrics() == null ? -1 : event.taskMetrics().shuffleWriteMetrics().bytesWritten();
    events.add("M\t" + shuffle + "\t" + event.stageId() + "\t" + event.stageAttemptId() + "\t" + t.partitionId() + "\t"
        + t.taskId() + "\t" + t.executorId() + "\t" + t.host() + "\t" + bytes);
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted event) {
    StageInfo info = event.stageInfo();
    metrics(info.stageId())[4] = System.nanoTime();
    Integer shuffle = stageToShuffle.get(info.stageId());
    if (shuffle == null) {
      return;
    }
    boolean ok = info.failureReason().isEmpty();
    held.computeIfPresent(shuffle, (k, v) -> System.nanoTime() + holdTimeoutNanos);
    events.add("D\t" + shuffle + "\t" + info.stageId() + "\t" + ok);
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
    events.add("X\t" + event.executorId());
  }

  @Override
  public void onApplicationEnd(SparkListenerApplicationEnd event) {
    events.add("E\tapp");
  }

  @Override
  public void shuffleCleaned(int shuffleId) {
    events.add("C\t" + shuffleId);
  }

  @Override
  public void rddCleaned(int rddId) {}

  @Override
  public void broadcastCleaned(long broadcastId) {}

  @Override
  public void accumCleaned(long accId) {}

  @Override
  public void checkpointCleaned(long rddId) {}

  private long[] metrics(int stageId) {
    return stageMetrics.computeIfAbsent(stageId, k -> new long[5]);
  }

  /** Everything that happened since the last call, one tab-separated event per line. */
  public String drain() {
    StringBuilder out = new StringBuilder();
    String e;
    while ((e = events.poll()) != null) {
      out.append(e).append('\n');
    }
    return out.toString();
  }

  /** {@code stageId blocksFetched bytesRead tasks seconds} of one stage ("" if unknown). */
  public String stageMetrics(int stageId) {
    long[] m = stageMetrics.get(stageId);
    if (m == null) {
      return "";
    }
    double secs = m[4] > 0 && m[3] > 0 ? (m[4] - m[3]) / 1e9 : -1;
    return stageId + "\t" + m[0] + "\t" + m[1] + "\t" + m[2] + "\t" + secs;
  }

  // ---------------------------------------------------------------- safety of concatenation
  private ShuffleDependency<?, ?, ?> dependency(int shuffle) {
    DAGScheduler dag = sc.dagScheduler();
    Option<ShuffleMapStage> stage = dag.shuffleIdToMapStage().get(shuffle);
    return stage.isDefined() ? stage.get().shuffleDep() : null;
  }

  private int numPartitions(int shuffle) {
    try {
      ShuffleDependency<?, ?, ?> dep = dependency(shuffle);
      return dep == null ? -1 : dep.partitioner().numPartitions();
    } catch (RuntimeException e) {
      return -1;
    }
  }

  /** Why concatenating this shuffle's map outputs would be unsafe, or null when it is safe. */
  String unsafeReason(int shuffle) {
    try {
      SparkConf conf = sc.getConf();
      if (conf.getBoolean("spark.io.encryption.enabled", false)) {
        return "spark.io.encryption.enabled=true (encrypted streams cannot be concatenated)";
      }
      if (conf.getBoolean("spark.shuffle.push.enabled", false)) {
        return "push-based shuffle is enabled";
      }
      ShuffleDependency<?, ?, ?> dep = dependency(shuffle);
      if (dep == null) {
        return "shuffle dependency not found";
      }
      if (!dep.serializer().supportsRelocationOfSerializedObjects()) {
        return "serializer " + dep.serializer().getClass().getName() + " does not support relocation of serialized objects";
      }
      if (conf.getBoolean("spark.shuffle.compress", true)) {
        String codec = conf.get("spark.io.compression.codec", "lz4");
        if (!CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(
            CompressionCodec$.MODULE$.createCodec(conf, codec))) {
          return "codec " + codec + " does not support concatenated streams";
        }
      }
      return null;
    } catch (RuntimeException e) {
      return "could not inspect the shuffle: " + e;
    }
  }

  // ---------------------------------------------------------------- the gate
  /** Holds the readers of {@code shuffle}; false if a reader already exists (then never merge it). */
  public boolean hold(int shuffle) {
    synchronized (ts) {
      if (readersSeen.contains(shuffle)) {
        return false;
      }
      held.put(shuffle, Long.MAX_VALUE);
      return true;
    }
  }

  /** Lets the shuffle's reducers run (after a commit, or when merging is abandoned). */
  public void release(int shuffle) {
    if (held.remove(shuffle) != null) {
      ts.backend().reviveOffers();
    }
  }

  /** Called under the scheduler lock once per task set per offer round. */
  boolean blocks(int stageId, long now) {
    int[] reads = stageReads.computeIfAbsent(stageId, this::shufflesReadBy);
    boolean block = false;
    for (int s : reads) {
      Long deadline = held.get(s);
      if (deadline == null) {
        readersSeen.add(s);
      } else if (now > deadline) {
        held.remove(s);
        readersSeen.add(s);
        LOG.warn("Riffle: merges of shuffle {} did not finish in time; its reducers read the original files", s);
        events.add("T\t" + s);
      } else {
        block = true;
      }
    }
    return block;
  }

  private int[] shufflesReadBy(int stageId) {
    try {
      Option<Stage> stage = sc.dagScheduler().stageIdToStage().get(stageId);
      if (stage.isEmpty()) {
        return new int[0];
      }
      java.util.List<Integer> ids = new java.util.ArrayList<>();
      Iterator<Stage> it = stage.get().parents().iterator();
      while (it.hasNext()) {
        Stage p = it.next();
        if (p instanceof ShuffleMapStage) {
          ids.add(((ShuffleMapStage) p).shuffleDep().shuffleId());
        }
      }
      return ids.stream().mapToInt(Integer::intValue).toArray();
    } catch (RuntimeException e) {
      LOG.warn("Riffle: could not read the parents of stage {}: {}", stageId, e.toString());
      return new int[0];
    }
  }

  // ---------------------------------------------------------------- commit
  /**
   * Points each group's map statuses at its merged file, atomically per shuffle. A group line is
   * {@code ownerIndex mergedMapId executorId members lengths} with members
   * {@code index:mapId,...} and the merged file's per-partition lengths {@code l0,l1,...}. A group
   * is skipped (left unmerged) unless every member's current status still has the recorded map id
   * and the executor. Returns the number of groups committed, or -1 when the shuffle's readers are
   * no longer held (nothing is changed then).
   */
  public int commit(int shuffle, String groups) throws ReflectiveOperationException {
    MapOutputTrackerMaster tracker = (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
    synchronized (ts) {
      if (!held.containsKey(shuffle) || readersSeen.contains(shuffle)) {
        return -1;
      }
      ShuffleStatus status = shuffleStatus(tracker, shuffle);
      if (status == null) {
        return -1;
      }
      int committed = 0;
      int partitions = reducers.getOrDefault(shuffle, -1);
      Lock lock = (Lock) getField(status, "writeLock");
      lock.lock();
      try {
        MapStatus[] statuses = status.mapStatuses();
        @SuppressWarnings("unchecked")
        scala.collection.mutable.HashMap<Object, Object> idToIndex = status.mapIdToMapIndex();
        for (String line : groups.split("\n")) {
          if (line.isEmpty()) {
            continue;
          }
          String[] f = line.split("\t");
          int owner = Integer.parseInt(f[0]);
          long merged = Long.parseLong(f[1]);
          String exec = f[2];
          String[] members = f[3].split(",");
          String[] lens = f[4].split(",");
          int[] idx = new int[members.length];
          long[] ids = new long[members.length];
          boolean ok = members.length > 1;
          BlockManagerId loc = null;
          for (int i = 0; i < members.length && ok; i++) {
            String[] kv = members[i].split(":");
            idx[i] = Integer.parseInt(kv[0]);
            ids[i] = Long.parseLong(kv[1]);
            MapStatus cur = idx[i] < statuses.length ? statuses[idx[i]] : null;
            ok = cur != null && cur.mapId() == ids[i] && cur.location().executorId().equals(exec)
                && (loc == null || loc.equals(cur.location()));
            if (ok) {
              loc = cur.location();
            }
          }
          if (!ok || lens.length != partitions) {
            LOG.warn("Riffle: group at map index {} of shuffle {} left unmerged (statuses changed since its merge, or {} != {} partitions)",
                owner, shuffle, lens.length, partitions);
            continue;
          }
          long[] sizes = new long[lens.length];
          for (int i = 0; i < lens.length; i++) {
            sizes[i] = Long.parseLong(lens[i]);
          }
          for (int i = 0; i < members.length; i++) {
            MapStatus cur = statuses[idx[i]];
            if (idx[i] == owner) {
              statuses[idx[i]] = MapStatus$.MODULE$.apply(loc, sizes, merged, cur.checksumValue());
              idToIndex.remove(ids[i]);
              idToIndex.put(merged, owner);
            } else {
              statuses[idx[i]] = MapStatus$.MODULE$.apply(loc, new long[sizes.length], ids[i], cur.checksumValue());
            }
          }
          committed++;
        }
      } finally {
        lock.unlock();
      }
      status.invalidateSerializedMapOutputStatusCache();
      tracker.incrementEpoch();
      return committed;
    }
  }

  /** {@code mapIndex mapId executorId sizeOfPartition0} per registered status (tests and diagnostics). */
  public String statuses(int shuffle, int partitions) throws ReflectiveOperationException {
    MapOutputTrackerMaster tracker = (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
    ShuffleStatus status = shuffleStatus(tracker, shuffle);
    StringBuilder out = new StringBuilder();
    if (status == null) {
      return "";
    }
    MapStatus[] statuses = status.mapStatuses();
    for (int i = 0; i < statuses.length; i++) {
      MapStatus s = statuses[i];
      if (s != null) {
        long total = 0;
        for (int p = 0; p < partitions; p++) {
          total += s.getSizeForBlock(p);
        }
        out.append(i).append('\t').append(s.mapId()).append('\t').append(s.location().executorId()).append('\t').append(total).append('\n');
      }
    }
    return out.toString();
  }

  private static ShuffleStatus shuffleStatus(MapOutputTrackerMaster tracker, int shuffle) throws ReflectiveOperationException {
    @SuppressWarnings("unchecked")
    scala.collection.concurrent.Map<Object, ShuffleStatus> all =
        (scala.collection.concurrent.Map<Object, ShuffleStatus>) getField(tracker, "shuffleStatuses");
    Option<ShuffleStatus> s = all.get(shuffle);
    return s.isDefined() ? s.get() : null;
  }

  // ---------------------------------------------------------------- executors' local dirs
  /** The executor's ordered blockmgr dirs as the block manager master recorded them, newline-separated. */
  public String localDirs(String executorId) throws ReflectiveOperationException {
    Object rpcEnv = SparkEnv.get().rpcEnv();
    Object dispatcher = getField(rpcEnv, "dispatcher");
    @SuppressWarnings("unchecked")
    Map<Object, Object> refs = (Map<Object, Object>) getField(dispatcher, "endpointRefs");
    for (Object endpoint : refs.keySet()) {
      if (endpoint.getClass().getName().equals("org.apache.spark.storage.BlockManagerMasterEndpoint")) {
        @SuppressWarnings("unchecked")
        org.sparkproject.guava.cache.Cache<String, String[]> cache =
            (org.sparkproject.guava.cache.Cache<String, String[]>) getField(endpoint, "executorIdToLocalDirs");
        String[] dirs = cache.getIfPresent(executorId);
        return dirs == null ? "" : String.join("\n", dirs);
      }
    }
    return "";
  }

  public String applicationId() {
    return sc.applicationId();
  }

  // ---------------------------------------------------------------- reflection helpers
  static Object getField(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
      } catch (NoSuchFieldException ignored) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }

  static void setField(Object target, String name, Object value) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        f.set(target, value);
        return;
      } catch (NoSuchFieldException ignored) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }
}
