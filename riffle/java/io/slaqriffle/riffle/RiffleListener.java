package io.slaqriffle.riffle;

import io.slaqriffle.seam.ShimClock;
import io.slaqriffle.seam.SparkMapOutput;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.CleanerListener;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;

/**
 * Riffle's eyes: turns Spark's listener and cleaner events into {@link Messages} for Python, feeds
 * the {@link StageGraph}, tells which shuffles may be held, and starts (when the driver asks) and times the
 * {@link ReducerGate}'s holds. Runs on Spark's
 * listener-bus and cleaner threads.
 */
final class RiffleListener extends SparkListener implements CleanerListener {
  private final SparkContext sc;
  private final RiffleTracker tracker;
  private final StageGraph graph;
  private final ReducerGate gate;
  private final ShimClock clock;
  private final Map<Integer, Integer> partitions = new ConcurrentHashMap<>(); // mergeable shuffle -> reduce partitions, until settled
  private final Set<Integer> mapDone = ConcurrentHashMap.newKeySet(); // mergeable shuffles whose map stage ended
  private final Set<String> dirsSent = ConcurrentHashMap.newKeySet(); // executors whose local dirs Python was sent, until removed

  RiffleListener(SparkContext sc, RiffleTracker tracker, StageGraph graph, ReducerGate gate, ShimClock clock) {
    this.sc = sc;
    this.tracker = tracker;
    this.graph = graph;
    this.gate = gate;
    this.clock = clock;
  }

  @Override
  public void onJobStart(SparkListenerJobStart event) {
    List<StageInfo> stages = new ArrayList<>();
    scala.collection.Iterator<StageInfo> it = event.stageInfos().iterator();
    while (it.hasNext()) {
      stages.add(it.next());
    }
    graph.jobStarted(event.jobId(), stages);
  }

  @Override
  public void onJobEnd(SparkListenerJobEnd event) {
    graph.jobEnded(event.jobId());
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    StageInfo info = event.stageInfo();
    graph.stageSubmitted(info);
    if (info.shuffleDepId().isEmpty()) {
      return;
    }
    int shuffle = (Integer) info.shuffleDepId().get();
    ShuffleDependency<?, ?, ?> dep = SparkMapOutput.shuffleDependency(sc, shuffle);
    int parts = dep == null ? -1 : dep.partitioner().numPartitions();
    NotHeld notHeld = notMergeable(info.attemptNumber(), dep);
    if (notHeld == null && tracker.holdAll() && !gate.hold(shuffle)) {
      notHeld = new NotHeld(RiffleNames.READER_RUNNING, "a stage reading the shuffle was already running");
    }
    if (notHeld == null) {
      partitions.put(shuffle, parts);
    }
    tracker.emit(new RiffleMessages.MapStageSubmitted(shuffle, info.stageId(), info.name(), info.attemptNumber(), info.numTasks(), parts,
        notHeld == null, SqlExchange.isSqlExchange(dep), SqlExchange.adaptive(event.properties()), notHeld == null ? "" : notHeld.cause(),
        notHeld == null ? "" : notHeld.why()));
  }

  /** Why a shuffle's reducers are never held: one of {@link RiffleNames#NOT_HELD_CAUSES}, and the details. */
  private record NotHeld(String cause, String why) {}

  /** Null when the driver may hold the shuffle's reducers, else why it may not (every shuffle gets one or the other). */
  private NotHeld notMergeable(int attempt, ShuffleDependency<?, ?, ?> dep) {
    String unavailable = tracker.unavailableReason();
    if (unavailable != null) {
      return new NotHeld(RiffleNames.UNAVAILABLE, "Riffle cannot merge on this Spark: " + unavailable);
    }
    String unsafe = ShuffleSafety.unsafeReason(sc.getConf(), dep);
    if (unsafe != null) {
      return new NotHeld(RiffleNames.UNSAFE, "unsafe to merge: " + unsafe);
    }
    if (!tracker.merging()) {
      return new NotHeld(RiffleNames.MERGING_OFF, "Riffle was not merging (stopped, switched off, or its scheduler had died or stalled)");
    }
    if (attempt != 0) {
      return new NotHeld(RiffleNames.RETRIED, "map stage attempt " + attempt + ": Riffle holds a shuffle's first attempt only");
    }
    return null;
  }

  /**
   * Starts holding a mergeable shuffle's reducers, the driver having decided its merges can pay; false when it is not
   * mergeable, already settled, or a reader already launched a task. A hold that starts after the map stage ended
   * gets its deadline at once (the stage's end marks it done before it reads the gate; this holds before it reads the mark).
   */
  boolean hold(int shuffle) {
    if (!partitions.containsKey(shuffle) || !gate.hold(shuffle)) {
      return false;
    }
    if (!partitions.containsKey(shuffle)) { // Spark cleaned it up meanwhile: no hold may outlive its shuffle
      gate.release(shuffle);
      return false;
    }
    if (mapDone.contains(shuffle)) {
      Long deadline = gate.mapStageDone(shuffle, clock.nanoTime());
      if (deadline != null) {
        tracker.expireAt(deadline);
      }
    }
    return true;
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    TaskInfo t = event.taskInfo();
    if (!"ShuffleMapTask".equals(event.taskType()) || !t.successful()) {
      return;
    }
    Integer shuffle = graph.writtenBy(event.stageId());
    if (shuffle == null) {
      return;
    }
    long bytes = event.taskMetrics() == null ? -1 : event.taskMetrics().shuffleWriteMetrics().bytesWritten();
    sendDirs(t.executorId());
    tracker.emit(new RiffleMessages.MapOutput(shuffle, event.stageId(), event.stageAttemptId(), t.partitionId(), t.taskId(), t.executorId(),
        t.host(), bytes));
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted event) {
    StageInfo info = event.stageInfo();
    if (info.shuffleDepId().isEmpty()) {
      return;
    }
    int shuffle = (Integer) info.shuffleDepId().get();
    if (partitions.containsKey(shuffle)) {
      mapDone.add(shuffle);
    }
    Long deadline = gate.mapStageDone(shuffle, clock.nanoTime());
    if (deadline != null) {
      tracker.expireAt(deadline);
    }
    tracker.emit(new RiffleMessages.MapStageDone(shuffle, info.stageId(), info.failureReason().isEmpty()));
  }

  /**
   * Sends {@code executor}'s local dirs once, unless merging is unavailable: read again at its next output while the block
   * manager master has none; never again when they cannot be read (the driver's own lookup says why).
   */
  private void sendDirs(String executor) {
    if (dirsSent.contains(executor) || tracker.unavailableReason() != null) {
      return;
    }
    List<String> dirs = tracker.localDirsOf(executor);
    if (dirs == null) {
      dirsSent.add(executor);
    } else if (!dirs.isEmpty() && dirsSent.add(executor)) {
      tracker.emit(new RiffleMessages.ExecutorDirs(executor, dirs));
    }
  }

  void sendDirsAgain() {
    dirsSent.clear();
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
    dirsSent.remove(event.executorId()); // a new executor with this id has new dirs
    tracker.emit(new RiffleMessages.ExecutorRemoved(event.executorId()));
  }

  @Override
  public void onApplicationEnd(SparkListenerApplicationEnd event) {
    tracker.emit(new RiffleMessages.ApplicationEnd());
    tracker.applicationEnded();
  }

  @Override
  public void shuffleCleaned(int shuffleId) {
    forget(shuffleId);
    tracker.emit(new RiffleMessages.ShuffleCleaned(shuffleId));
  }

  @Override
  public void rddCleaned(int rddId) {}

  @Override
  public void broadcastCleaned(long broadcastId) {}

  @Override
  public void accumCleaned(long accId) {}

  @Override
  public void checkpointCleaned(long rddId) {}

  /** Reduce partitions of a mergeable shuffle (-1 when unknown). */
  /** Mergeable shuffles whose reduce partitions are kept until they settle. */
  int tracked() {
    return partitions.size();
  }

  int partitions(int shuffle) {
    return partitions.getOrDefault(shuffle, -1);
  }

  /** The shuffle is settled or gone: nothing about it is kept. */
  boolean forget(int shuffle) {
    partitions.remove(shuffle);
    mapDone.remove(shuffle);
    return gate.release(shuffle);
  }
}
