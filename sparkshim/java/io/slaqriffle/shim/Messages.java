package io.slaqriffle.shim;

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
    @JsonSubTypes.Type(ApplicationEnd.class), @JsonSubTypes.Type(Iteration.class), @JsonSubTypes.Type(PoolState.class),
    @JsonSubTypes.Type(Allocation.class), @JsonSubTypes.Type(MergeGroup.class), @JsonSubTypes.Type(Commit.class),
    @JsonSubTypes.Type(JobStatus.class), @JsonSubTypes.Type(EpochStatus.class), @JsonSubTypes.Type(StatusReport.class)
  })
  public interface Message {}

  // ---------------------------------------------------------------- Riffle: JVM -> Python
  @JsonTypeName("map_stage_submitted")
  public record MapStageSubmitted(int shuffle, int stage, int attempt, int tasks, int partitions, boolean held, String unsafe)
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
  public record Iteration(String job, double loss, double t, double coreSeconds, String source) implements Message {}

  @JsonTypeName("pool_state")
  public record PoolState(String job, double consumed, double tokens, int running, boolean closed) implements Message {}

  // ---------------------------------------------------------------- Python -> JVM
  @JsonTypeName("allocation")
  public record Allocation(double epochSeconds, Map<String, Double> cores) implements Message {}

  /** One job as the epoch loop saw it (the SLAQ UI tab, the REST JSON and the per-epoch log line show these). */
  @JsonTypeName("job_status")
  public record JobStatus(String job, String state, int iterations, double loss, double normalizedLoss, double predictedGain,
      double cores, double usedCores) implements Message {}

  /** One epoch's decisions, pushed once per epoch by the Python loop ({@link SlaqStatus#publish}). */
  @JsonTypeName("epoch_status")
  public record EpochStatus(long epoch, double t, String policy, double capacity, List<JobStatus> jobs) implements Message {}

  // ---------------------------------------------------------------- JVM -> REST clients (/slaq/json)
  /** What the SLAQ tab shows: the retained epochs (oldest first) and the jobs that have left the loop. */
  @JsonTypeName("status_report")
  public record StatusReport(List<EpochStatus> history, List<JobStatus> finished) implements Message {}

  /** One merged group: statuses at {@code mapIndexes} (with {@code mapIds}) become the merged file at {@code owner}. */
  @JsonTypeName("merge_group")
  public record MergeGroup(int owner, long mergedMapId, String executor, List<Integer> mapIndexes, List<Long> mapIds, List<Long> lengths)
      implements Message {}

  @JsonTypeName("commit")
  public record Commit(int shuffle, List<MergeGroup> groups) implements Message {}

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

  /** Decodes any message and encodes it again (the contract test's Python -> Java -> Python leg). */
  public static String roundTrip(String json) {
    return encode(decode(json, Message.class));
  }

  /** One message of every type, built in Java with every field set (the contract test's Java -> Python leg). */
  public static String samples() {
    return encode(List.<Message>of(
        new MapStageSubmitted(3, 7, 0, 12, 2100, true, "codec x does not support concatenated streams"),
        new MapOutput(3, 7, 0, 11, 9_007_199_254_740_993L, "exec-1", "127.0.0.2", 5_000_000_000L),
        new MapStageDone(3, 7, false),
        new HoldExpired(4),
        new ShuffleCleaned(5),
        new ExecutorRemoved("exec-2"),
        new ApplicationEnd(),
        new Iteration("job \"α\"", 0.125, 12.5, 3.75, "mllib"),
        new PoolState("job-b", 4.5, -0.25, 2, true),
        new Allocation(2.0, Map.of("job-a", 1.5, "job-b", 0.0)),
        new JobStatus("job <b>", "running", 7, 0.5, 0.25, 0.125, 1.5, 1.25),
        new EpochStatus(1L << 40, 3.5, "slaq", 2.0, List.of(new JobStatus("j", "waiting", 0, 0.0, 1.0, 1.0, 2.0, 0.0))),
        new StatusReport(List.of(new EpochStatus(2, 1.0, "fair", 4.0, List.of())), List.of(new JobStatus("k", "finished", 3, 1.0, 0.0, 0.0, 0.0, 0.0))),
        new MergeGroup(2, 1L << 62, "exec-1", List.of(2, 4), List.of(1002L, 1004L), List.of(5L, 0L, 7L)),
        new Commit(3, List.of(new MergeGroup(0, (1L << 62) + 1, "exec-0", List.of(0, 1), List.of(1L, 2L), List.of(1L))))));
  }
}
