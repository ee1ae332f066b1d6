package io.slaqriffle.lab;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Per-stage shuffle read metrics for the benchmarks, which register it themselves
 * ({@code SparkContext.addSparkListener}): blocks fetched (local and remote), bytes read, finished
 * tasks, the most bytes one task read (a skewed partition's largest split), and the stage's time from submission to completion as the scheduler stamped them
 * ({@code StageInfo}, milliseconds). Public listener API only; the most recent {@link #MAX_STAGES}
 * stages are kept.
 */
public final class StageMetricsListener extends SparkListener {
  /** Stages kept; the oldest are dropped first. */
  public static final int MAX_STAGES = 256;

  /** blocks fetched, bytes read, tasks, stage milliseconds (-1 until completed), most bytes one task read. */
  private final Map<Integer, long[]> stages = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Integer, long[]> eldest) {
      return size() > MAX_STAGES;
    }
  };

  private synchronized long[] stage(int stageId) {
    return stages.computeIfAbsent(stageId, k -> new long[] {0, 0, 0, -1, 0});
  }

  @Override
  public synchronized void onTaskEnd(SparkListenerTaskEnd event) {
    if (event.taskMetrics() == null) {
      return;
    }
    ShuffleReadMetrics read = event.taskMetrics().shuffleReadMetrics();
    long[] m = stage(event.stageId());
    m[0] += read.totalBlocksFetched();
    m[1] += read.totalBytesRead();
    m[2] += 1;
    m[4] = Math.max(m[4], read.totalBytesRead());
  }

  @Override
  public synchronized void onStageCompleted(SparkListenerStageCompleted event) {
    StageInfo info = event.stageInfo();
    if (info.submissionTime().isDefined() && info.completionTime().isDefined()) {
      stage(info.stageId())[3] = (Long) info.completionTime().get() - (Long) info.submissionTime().get();
    }
  }

  /**
   * One stage as JSON: {@code {"stage", "blocks_fetched", "bytes_read", "tasks", "seconds", "max_task_bytes_read"}} (seconds
   * -1 until it completed), or {@code null} when the stage is unknown. Read after the job ended: the
   * listener bus delivers events asynchronously.
   */
  public synchronized String stageJson(int stageId) {
    long[] m = stages.get(stageId);
    if (m == null) {
      return null;
    }
    double seconds = m[3] >= 0 ? m[3] / 1e3 : -1;
    return String.format(Locale.ROOT, "{\"stage\": %d, \"blocks_fetched\": %d, \"bytes_read\": %d, \"tasks\": %d, \"seconds\": %.3f, "
        + "\"max_task_bytes_read\": %d}", stageId, m[0], m[1], m[2], seconds, m[4]);
  }

  /** Stages currently kept (bounded by {@link #MAX_STAGES}). */
  public synchronized int size() {
    return stages.size();
  }
}
