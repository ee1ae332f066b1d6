package io.slaqriffle.riffle;

import io.slaqriffle.seam.SparkScheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;

/**
 * Holds the reducers of shuffles being merged. The decision the root pool asks for every offer round
 * ({@link #holds}) is a pure read of the held set; holds start at map-stage submission, get a
 * deadline when the map stage ends, and end by {@link #release}, a commit, or {@link #expire} (run by
 * the tracker when the deadline passes, never from inside the scheduler's sort). A stage whose parents are not known yet
 * (its job's start event is still on the listener bus) is held while any shuffle is held: it may be
 * a reader. Whether a reader already launched is read from the live task sets under the scheduler
 * lock, so nothing needs to be recorded while sorting.
 */
final class ReducerGate {
  private final TaskSchedulerImpl ts;
  private final StageGraph graph;
  private final Map<Integer, Long> held = new ConcurrentHashMap<>(); // shuffle -> deadline (nanos), MAX until its map stage ends
  private volatile long timeoutNanos = 30_000_000_000L;

  ReducerGate(TaskSchedulerImpl ts, StageGraph graph) {
    this.ts = ts;
    this.graph = graph;
  }

  /** Shuffles whose reducers are held now. */
  int heldCount() {
    return held.size();
  }

  void setTimeout(double seconds) {
    timeoutNanos = (long) (seconds * 1e9);
  }

  /** Whether the task sets of {@code stageId} sit this round out. Pure: called under the scheduler lock while sorting. */
  boolean holds(int stageId, long now) {
    if (held.isEmpty()) {
      return false;
    }
    int[] reads = graph.readsOf(stageId);
    if (reads == null) {
      for (long deadline : held.values()) {
        if (now <= deadline) {
          return true;
        }
      }
      return false;
    }
    for (int s : reads) {
      if (isHeld(s, now)) {
        return true;
      }
    }
    return false;
  }

  boolean isHeld(int shuffle, long now) {
    Long deadline = held.get(shuffle);
    return deadline != null && now <= deadline;
  }

  /** Starts holding {@code shuffle}'s readers; false (and no hold) if one of them already launched a task. */
  boolean hold(int shuffle) {
    synchronized (ts) {
      if (readerLaunched(shuffle)) {
        return false;
      }
      held.put(shuffle, Long.MAX_VALUE);
      return true;
    }
  }

  /** The map stage ended: the readers wait at most the timeout from now. Returns that deadline, or null when not held. */
  Long mapStageDone(int shuffle, long now) {
    return held.computeIfPresent(shuffle, (k, v) -> now + timeoutNanos);
  }

  boolean release(int shuffle) {
    return held.remove(shuffle) != null;
  }

  /** Ends every hold; returns their shuffles. */
  List<Integer> releaseAll() {
    List<Integer> out = new ArrayList<>();
    for (Integer shuffle : held.keySet()) {
      if (held.remove(shuffle) != null) {
        out.add(shuffle);
      }
    }
    return out;
  }

  /** Ends the holds whose deadline passed; returns their shuffles. */
  List<Integer> expire(long now) {
    List<Integer> out = new ArrayList<>();
    for (Map.Entry<Integer, Long> e : held.entrySet()) {
      if (now > e.getValue() && held.remove(e.getKey(), e.getValue())) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /** A live task set reading {@code shuffle} launched a task. Call under the scheduler lock. */
  boolean readerLaunched(int shuffle) {
    return readerLaunched(SparkScheduler.rootPool(ts), shuffle);
  }

  private boolean readerLaunched(Pool pool, int shuffle) {
    for (Schedulable s : pool.schedulableQueue()) {
      if (s instanceof Pool) {
        if (readerLaunched((Pool) s, shuffle)) {
          return true;
        }
      } else if (s instanceof TaskSetManager) {
        TaskSetManager tsm = (TaskSetManager) s;
        int[] reads = graph.readsOf(tsm.stageId());
        if (reads != null && contains(reads, shuffle) && SparkScheduler.launchedAnyTask(tsm)) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean contains(int[] values, int v) {
    for (int x : values) {
      if (x == v) {
        return true;
      }
    }
    return false;
  }
}
