package io.slaqriffle.seam;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.annotation.JsonTypeName;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.List;
import java.util.Map;

/**
 * The typed messages that cross py4j, one record per message type of {@code sparkshim/messages.json}
 * (the schema Python builds its classes from), encoded as JSON with the Jackson that ships with
 * Spark: one object per message, its kind in {@code "type"}, fields in snake_case. Decoding is
 * strict (unknown, missing or mistyped fields fail), so a drift between the two sides fails the
 * contract test instead of being read as zeros.
 */
public final class Messages {
  private Messages() {}

  /** Any message; Jackson picks the record by {@code "type"}. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, include = JsonTypeInfo.As.PROPERTY, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(MapStageSubmitted.class), @JsonSubTypes.Type(MapOutput.class), @JsonSubTypes.Type(MapStageDone.class),
    @JsonSubTypes.Type(HoldExpired.class), @JsonSubTypes.Type(ShuffleCleaned.class), @JsonSubTypes.Type(ExecutorRemoved.class),
    @JsonSubTypes.Type(ApplicationEnd.class), @JsonSubTypes.Type(Iteration.class), @JsonSubTypes.Type(PoolState.class), @JsonSubTypes.Type(ConnectFit.class),
    @JsonSubTypes.Type(Allocation.class), @JsonSubTypes.Type(MergeGroup.class), @JsonSubTypes.Type(Commit.class),
    @JsonSubTypes.Type(JobStatus.class), @JsonSubTypes.Type(EpochStatus.class), @JsonSubTypes.Type(StatusReport.class),
    @JsonSubTypes.Type(SlaqJobSummary.class), @JsonSubTypes.Type(SlaqSummary.class), @JsonSubTypes.Type(RiffleShuffle.class),
    @JsonSubTypes.Type(RiffleMerger.class), @JsonSubTypes.Type(RiffleTotals.class), @JsonSubTypes.Type(RiffleStatus.class)
  })
  public interface Message {}

  // ---------------------------------------------------------------- Riffle: JVM -> Python
  @JsonTypeName("map_stage_submitted")
  public record MapStageSubmitted(int shuffle, int stage, String name, int attempt, int tasks, int partitions, boolean held, String unsafe)
      implements Message {}

  @JsonTypeName("map_output")
  public record MapOutput(int shuffle, int stage, int attempt, int mapIndex, long mapId, String executor, String host, long bytes)
      implements Message {}

  @JsonTypeName("map_stage_done")
  public record MapStageDone(int shuffle, int stage, boolean succeeded) implements Message {}

  @JsonTypeName("hold_expired")
  public record HoldExpired(int shuffle) implements Message {}

  @JsonTypeName("shuffle_cleaned")
  public record ShuffleCleaned(int shuffle) implements Message {}

  @JsonTypeName("executor_removed")
  public record ExecutorRemoved(String executor) implements Message {}

  @JsonTypeName("application_end")
  public record ApplicationEnd() implements Message {}

  // ---------------------------------------------------------------- SLAQ: JVM -> Python
  @JsonTypeName("iteration")
  public record Iteration(String job, double loss, double t, double coreSeconds, double stageSeconds, String source) implements Message {}

  @JsonTypeName("pool_state")
  public record PoolState(String job, double consumed, double tokens, int running, boolean closed) implements Message {}

  /** A spark.ml fit a Spark Connect client submitted became SLAQ job {@code job} (or, {@code ended}, its operation ended). */
  @JsonTypeName("connect_fit")
  public record ConnectFit(String job, String operation, String estimator, Map<String, String> params, boolean ended)
      implements Message {}

  // ---------------------------------------------------------------- Python -> JVM
  @JsonTypeName("allocation")
  public record Allocation(double epochSeconds, Map<String, Double> cores) implements Message {}

  /**
   * One job as the epoch loop saw it (the SLAQ UI tab, the REST JSON and the per-epoch log line show these): its
   * figures, why it got its share, and for a tuning candidate its tuner ({@code group}), candidate and fold (-1: none)
   * and whether it is the tuner's refit on the best params. {@code secondsToTarget} is -1 until known;
   * {@code driverFraction}: the share of its latest iterations' wall time the driver alone worked (-1: not measured yet).
   */
  @JsonTypeName("job_status")
  public record JobStatus(String job, String state, int iterations, double loss, double normalizedLoss, double predictedGain,
      double cores, double usedCores, String why, double wallSeconds, double coreSeconds, double secondsToTarget,
      String group, int candidate, int fold, boolean refit, double driverFraction) implements Message {}

  /** One epoch's decisions, pushed once per epoch by the Python loop ({@code SlaqStatus.publish}), with the final figures of the jobs that ended since the previous one. */
  @JsonTypeName("epoch_status")
  public record EpochStatus(long epoch, double t, String policy, double capacity, List<JobStatus> jobs, List<JobStatus> finished) implements Message {}

  // ---------------------------------------------------------------- JVM -> REST clients (/slaq/json)
  /** One job over the whole application: seconds from its first epoch to normalized loss 0.1 (-1: not reached), its core-seconds and their share. */
  @JsonTypeName("slaq_job_summary")
  public record SlaqJobSummary(String job, double secondsToNinety, double coreSeconds, double share) implements Message {}

  /** What SLAQ did over the application (logged once at its end): per job, and the mean time to 90% over the jobs that reached it. */
  @JsonTypeName("slaq_summary")
  public record SlaqSummary(List<SlaqJobSummary> jobs, int reachedNinety, double meanSecondsToNinety) implements Message {}

  /** What the SLAQ tab shows: the retained epochs (oldest first), the jobs that have left the loop, and the application's summary. */
  @JsonTypeName("status_report")
  public record StatusReport(List<EpochStatus> history, List<JobStatus> finished, SlaqSummary summary) implements Message {}

  /** One merged group: statuses at {@code mapIndexes} (with {@code mapIds}) become the merged file at {@code owner}. */
  @JsonTypeName("merge_group")
  public record MergeGroup(int owner, long mergedMapId, String executor, List<Integer> mapIndexes, List<Long> mapIds, List<Long> lengths)
      implements Message {}

  @JsonTypeName("commit")
  public record Commit(int shuffle, List<MergeGroup> groups) implements Message {}

  // ---------------------------------------------------------------- Riffle: Python -> JVM -> REST clients (/riffle/json)
  /** One shuffle as the merge scheduler saw it; {@code groupsFellBack} counts unmerged groups by cause. */
  @JsonTypeName("riffle_shuffle")
  public record RiffleShuffle(int shuffle, int stage, String name, int maps, int reducers, String policy, String state, int groupsMerged,
      Map<String, Integer> groupsFellBack, long bytesMerged, long blocksUnmerged, long blocksMerged, double gateWaitSeconds, String reason)
      implements Message {}

  /** One merger daemon: its health as the driver sees it, its queue at the last status call, and what its merges came to. */
  @JsonTypeName("riffle_merger")
  public record RiffleMerger(String address, String health, int queued, int running, int mergesDone, int mergesFailed, int mergesCancelled)
      implements Message {}

  /** Every settled shuffle of the application summed (not capped like the shuffle list). */
  @JsonTypeName("riffle_totals")
  public record RiffleTotals(int shuffles, int groupsMerged, Map<String, Integer> groupsFellBack, long bytesMerged, long blocksUnmerged,
      long blocksMerged, double gateWaitSeconds) implements Message {}

  /** The Riffle tab's whole model, pushed by the Python merge scheduler: one serialisable object. */
  @JsonTypeName("riffle_status")
  public record RiffleStatus(double t, List<RiffleShuffle> shuffles, List<RiffleMerger> mergers, RiffleTotals totals) implements Message {}

  // ---------------------------------------------------------------- codec
  private static final ObjectMapper JSON = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES)
      .disable(com.fasterxml.jackson.databind.MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .build();

  private static final com.fasterxml.jackson.databind.ObjectWriter ONE = JSON.writerFor(Message.class);
  private static final com.fasterxml.jackson.databind.ObjectWriter LIST = JSON.writerFor(new TypeReference<List<Message>>() {});

  /** One message as JSON. */
  public static String encode(Message value) {
    try {
      return ONE.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode " + value + ": " + e.getOriginalMessage(), e);
    }
  }

  /** A list of messages as a JSON array (each element carries its {@code "type"}). */
  public static String encode(List<? extends Message> values) {
    try {
      return LIST.writeValueAsString(values);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode " + values.size() + " messages: " + e.getOriginalMessage(), e);
    }
  }

  /** Counters for diagnostics and tests (not a message: no schema type). */
  public static String encodeCounts(Map<String, Integer> counts) {
    try {
      return JSON.writeValueAsString(counts);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e.getOriginalMessage(), e);
    }
  }

  /** One message of type {@code type} from JSON; IllegalArgumentException names what is wrong. */
  public static <T extends Message> T decode(String json, Class<T> type) {
    try {
      return JSON.readValue(json, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad " + type.getSimpleName() + " message: " + e.getOriginalMessage(), e);
    }
  }

  /** A message (or a record of messages) as a JSON tree, in the encoding of {@link #encode}: what a listener-bus event carries. */
  public static com.fasterxml.jackson.databind.JsonNode tree(Object value) {
    return JSON.valueToTree(value);
  }

  /** JSON text as a tree (what {@link #fromTree} reads). */
  public static com.fasterxml.jackson.databind.JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** {@link #tree}'s inverse, as strict as {@link #decode}. */
  public static <T> T fromTree(com.fasterxml.jackson.databind.JsonNode tree, Class<T> type) {
    try {
      return JSON.treeToValue(tree, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
    }
  }
}
