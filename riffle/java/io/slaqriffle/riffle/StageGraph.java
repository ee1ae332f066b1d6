package io.slaqriffle.riffle;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.StageInfo;
import scala.collection.Iterator;

/**
 * Which shuffle each stage writes and which shuffles it reads, learnt from listener events
 * ({@code SparkListenerJobStart} carries every stage of the job, skipped ancestors included, with
 * parent ids and shuffle ids), so the DAGScheduler's own maps are never read off its event loop.
 * A stage whose parents cannot be resolved stays unknown (never recorded as "no parents"). Entries
 * are dropped when the last running job that uses the stage ends, so the graph stays as small as
 * the set of running jobs.
 */
final class StageGraph {
  private final Map<Integer, Integer> writes = new HashMap<>(); // stage -> shuffle it writes
  private final Map<Integer, int[]> reads = new HashMap<>(); // stage -> shuffles it reads
  private final Map<Integer, int[]> jobStages = new HashMap<>(); // running job -> its stages
  private final Map<Integer, Integer> users = new HashMap<>(); // stage -> running jobs using it

  /** Entries in all four maps (the driver's state for the running jobs' stages: none once every job ended). */
  synchronized int size() {
    return writes.size() + reads.size() + jobStages.size() + users.size();
  }

  synchronized void jobStarted(int jobId, List<StageInfo> stages) {
    for (StageInfo info : stages) {
      if (info.shuffleDepId().isDefined()) {
        writes.put(info.stageId(), (Integer) info.shuffleDepId().get());
      }
    }
    int[] ids = new int[stages.size()];
    for (int i = 0; i < ids.length; i++) {
      StageInfo info = stages.get(i);
      ids[i] = info.stageId();
      users.merge(info.stageId(), 1, Integer::sum);
      learnParents(info);
    }
    int[] old = jobStages.put(jobId, ids);
    if (old != null) {
      release(old);
    }
  }

  /** A submitted stage (also covers stages added to a running job, e.g. a map stage retry). */
  synchronized void stageSubmitted(StageInfo info) {
    if (info.shuffleDepId().isDefined()) {
      writes.put(info.stageId(), (Integer) info.shuffleDepId().get());
    }
    learnParents(info);
  }

  private void learnParents(StageInfo info) {
    List<Integer> shuffles = new ArrayList<>();
    Iterator<Object> it = info.parentIds().iterator();
    while (it.hasNext()) {
      Integer shuffle = writes.get((Integer) it.next());
      if (shuffle == null) {
        return; // a parent we never saw: leave the stage unknown rather than "reads nothing"
      }
      shuffles.add(shuffle);
    }
    reads.put(info.stageId(), shuffles.stream().mapToInt(Integer::intValue).toArray());
  }

  synchronized void jobEnded(int jobId) {
    int[] ids = jobStages.remove(jobId);
    if (ids != null) {
      release(ids);
    }
  }

  private void release(int[] stageIds) {
    for (int stage : stageIds) {
      Integer left = users.merge(stage, -1, Integer::sum);
      if (left == null || left <= 0) {
        users.remove(stage);
        writes.remove(stage);
        reads.remove(stage);
      }
    }
  }

  /** The shuffles {@code stageId} reads, or null when that is not known (yet). */
  synchronized int[] readsOf(int stageId) {
    return reads.get(stageId);
  }

  /** The shuffle {@code stageId} writes, or null. */
  synchronized Integer writtenBy(int stageId) {
    return writes.get(stageId);
  }
}
