package io.slaqriffle.slaq;

import com.fasterxml.jackson.annotation.JsonTypeName;
import io.slaqriffle.seam.Messages;
import java.util.List;
import java.util.Map;

/**
 * SLAQ's messages across py4j, one record per message type of {@code slaq/messages.json} (Python generates
 * {@code slaq.messages} from the same schema; the contract test holds both to it), encoded by {@link Messages}.
 */
public final class SlaqMessages {
  private SlaqMessages() {}

  @JsonTypeName("iteration")
  public record Iteration(String job, double loss, double t, double coreSeconds, double stageSeconds, String source) implements Messages.Message {}

  @JsonTypeName("pool_state")
  public record PoolState(String job, double consumed, double tokens, int running, boolean closed) implements Messages.Message {}

  /** A spark.ml fit a Spark Connect client submitted became SLAQ job {@code job} (or, {@code ended}, its operation ended). */
  @JsonTypeName("connect_fit")
  public record ConnectFit(String job, String operation, String estimator, Map<String, String> params, boolean ended)
      implements Messages.Message {}

  @JsonTypeName("allocation")
  public record Allocation(double seconds, boolean newEpoch, Map<String, Double> cores, Map<String, Double> ranks) implements Messages.Message {}

  /**
   * One job as the epoch loop saw it (the SLAQ UI tab, the REST JSON and the per-epoch log line show these): its
   * figures, why it got its share, and for a tuning candidate its tuner ({@code group}), candidate and fold (-1: none)
   * and whether it is the tuner's refit on the best params. Python computes every figure ({@code slaq.metrics}); a
   * figure the job has none of is -1: {@code secondsToTarget} (no target, or not reached), {@code secondsToNinety}
   * (until it finished), {@code driverFraction} (the share of its latest iterations' wall time the driver alone worked;
   * not measured yet). {@code target}: the target it declared ("" without one). Its normalized loss is
   * {@code (loss - lossFloor) / (firstLoss - lossFloor)}; the charts draw its earlier losses against its latest pair.
   */
  @JsonTypeName("job_status")
  public record JobStatus(String job, String state, int iterations, double loss, double normalizedLoss, double predictedGain,
      double cores, double usedCores, String why, double wallSeconds, double coreSeconds, double secondsToTarget,
      String group, int candidate, int fold, boolean refit, double driverFraction, double secondsToNinety, String target,
      double firstLoss, double lossFloor) implements Messages.Message {}

  /** One epoch's decisions, pushed once per epoch by the Python loop ({@code SlaqStatus.publish}), with the final figures of the jobs that ended since the previous one. */
  @JsonTypeName("epoch_status")
  public record EpochStatus(long epoch, double t, String policy, double capacity, List<JobStatus> jobs, List<JobStatus> finished) implements Messages.Message {}

  /**
   * One job over the whole application: its target, time to target and to 90% of its loss reduction from its latest row
   * (-1: none), its core-seconds and their share, and the losses it reported (0: none, so it has no time to 90% to reach).
   */
  @JsonTypeName("slaq_job_summary")
  public record SlaqJobSummary(String job, String target, double secondsToTarget, double secondsToNinety, double coreSeconds, double share,
      int iterations) implements Messages.Message {}

  /** What SLAQ did over the application (logged once at its end): per job, and the mean time to 90% over the jobs that reached it. */
  @JsonTypeName("slaq_summary")
  public record SlaqSummary(List<SlaqJobSummary> jobs, int reachedNinety, double meanSecondsToNinety) implements Messages.Message {}

  /** What the SLAQ tab shows: the retained epochs (oldest first), the jobs that have left the loop, and the application's summary. */
  @JsonTypeName("status_report")
  public record StatusReport(List<EpochStatus> history, List<JobStatus> finished, SlaqSummary summary) implements Messages.Message {}
}
