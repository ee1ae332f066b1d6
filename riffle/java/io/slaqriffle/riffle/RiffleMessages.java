package io.slaqriffle.riffle;

import com.fasterxml.jackson.annotation.JsonTypeName;
import io.slaqriffle.seam.Messages;
import java.util.List;
import java.util.Map;

/**
 * Riffle's messages across py4j, one record per message type of {@code riffle/messages.json} (Python generates
 * {@code riffle.messages} from the same schema; the contract test holds both to it), encoded by {@link Messages}.
 */
public final class RiffleMessages {
  private RiffleMessages() {}

  /**
   * A map stage was submitted: its reducers may be held when the driver asks ({@code mergeable}), or never for cause
   * {@code notHeld} ({@link RiffleNames#NOT_HELD_CAUSES}), {@code why}. {@code sql}: a Spark SQL exchange, run under the
   * {@code adaptive} settings ({@link SqlExchange}).
   */
  @JsonTypeName("map_stage_submitted")
  public record MapStageSubmitted(int shuffle, int stage, String name, int attempt, int tasks, int partitions, boolean mergeable, boolean sql,
      Map<String, String> adaptive, String notHeld, String why) implements Messages.Message {}

  @JsonTypeName("map_output")
  public record MapOutput(int shuffle, int stage, int attempt, int mapIndex, long mapId, String executor, String host, long bytes)
      implements Messages.Message {}

  @JsonTypeName("map_stage_done")
  public record MapStageDone(int shuffle, int stage, boolean succeeded) implements Messages.Message {}

  @JsonTypeName("hold_expired")
  public record HoldExpired(int shuffle) implements Messages.Message {}

  @JsonTypeName("shuffle_cleaned")
  public record ShuffleCleaned(int shuffle) implements Messages.Message {}

  @JsonTypeName("executor_removed")
  public record ExecutorRemoved(String executor) implements Messages.Message {}

  /** An executor's local dirs (where its map outputs are), read once and sent before its first {@link MapOutput}. */
  @JsonTypeName("executor_dirs")
  public record ExecutorDirs(String executor, List<String> dirs) implements Messages.Message {}

  @JsonTypeName("application_end")
  public record ApplicationEnd() implements Messages.Message {}

  /** One merged group: statuses at {@code mapIndexes} (with {@code mapIds}) become the merged file at {@code owner}. */
  @JsonTypeName("merge_group")
  public record MergeGroup(int owner, long mergedMapId, String executor, List<Integer> mapIndexes, List<Long> mapIds, List<Long> lengths)
      implements Messages.Message {}

  @JsonTypeName("commit")
  public record Commit(int shuffle, List<MergeGroup> groups) implements Messages.Message {}

  /**
   * One shuffle as the merge scheduler saw it: {@code state} merging or settled ({@code reason}: why its reducers were released);
   * {@code groupsFellBack} counts unmerged groups by cause; {@code cleaned} once Spark cleaned it up (its outcome stays). Of its
   * {@code outputs} (map outputs seen), {@code outputsUnmerged} counts those a settled one left unmerged by cause
   * ({@code names.output_causes}) and {@code unmergedWhy} says so in words (empty when every output merged).
   */
  @JsonTypeName("riffle_shuffle")
  public record RiffleShuffle(int shuffle, int stage, String name, int maps, int reducers, String policy, String state, int groupsMerged,
      Map<String, Integer> groupsFellBack, long bytesMerged, long blocksUnmerged, long blocksMerged, double gateWaitSeconds, String reason,
      boolean cleaned, int outputs, Map<String, Integer> outputsUnmerged, String unmergedWhy) implements Messages.Message {}

  /**
   * The shuffles never held for one {@code cause} ({@link RiffleNames#NOT_HELD_CAUSES}), summarized instead of listed: how many,
   * the ids of the latest ({@link RiffleNames#MAX_UNMERGED_LATEST}, oldest first), and the latest one's stage, name and why.
   */
  @JsonTypeName("riffle_unmerged")
  public record RiffleUnmerged(String cause, int shuffles, List<Integer> latest, int stage, String name, String reason) implements Messages.Message {}

  /** One merger daemon: its health as the driver sees it, its queue at the last status call, and what its merges came to. */
  @JsonTypeName("riffle_merger")
  public record RiffleMerger(String address, String health, int queued, int running, int mergesDone, int mergesFailed, int mergesCancelled)
      implements Messages.Message {}

  /**
   * Every shuffle of the application Riffle saw (not capped like the shuffle list), each in one state: {@code shuffles} =
   * {@code merging + settled +} the {@code unmerged} ones by cause; {@code merged} settled shuffles had a group merged.
   * The groups, blocks, bytes and wait are summed over the settled shuffles.
   */
  @JsonTypeName("riffle_totals")
  public record RiffleTotals(int shuffles, int merging, int settled, int merged, Map<String, Integer> unmerged, int groupsMerged,
      Map<String, Integer> groupsFellBack, long bytesMerged, long blocksUnmerged, long blocksMerged, double gateWaitSeconds)
      implements Messages.Message {}

  /** The Riffle tab's whole model, pushed by the Python merge scheduler: one serialisable object. */
  @JsonTypeName("riffle_status")
  public record RiffleStatus(double t, List<RiffleShuffle> shuffles, List<RiffleUnmerged> unmerged, List<RiffleMerger> mergers, RiffleTotals totals)
      implements Messages.Message {}
}
