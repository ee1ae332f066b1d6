package io.slaqriffle.seam;

import static io.slaqriffle.seam.Feature.COMMIT;
import static io.slaqriffle.seam.Feature.SKEW_SPLITS;

import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.Lock;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.MapStatus$;
import org.apache.spark.scheduler.ShuffleMapStage;
import org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil$;
import org.apache.spark.storage.BlockManagerId;
import scala.Option;

/**
 * The map output tracker's internals Riffle's commit rewrites (COMMIT: {@code MapOutputTrackerMaster},
 * {@code ShuffleStatus}, {@code MapStatus}, all private[spark]; the statuses' checksum differs between
 * 4.0 and 4.1+) and what AQE's skew-split plan is read from (SKEW_SPLITS: sizes per block, SQL confs and
 * Spark's own split functions; the smallPartitionFactor parameter since 3.3). Checked against 4.0.5,
 * 4.1.4, 4.2.1 and 4.3.0. The commit's callers hold COMMIT available.
 */
public final class SparkMapOutput {
  private static final Handle.Registry HANDLES = new Handle.Registry();
  private static final String STATUS = "org.apache.spark.ShuffleStatus";
  private static final String TRACKER = "org.apache.spark.MapOutputTrackerMaster";
  private static final String MAP_STATUS = "org.apache.spark.scheduler.MapStatus";
  private static final String CODEC = "org.apache.spark.io.CompressionCodec$";
  private static final String PARTITIONS_UTIL = "org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil$";
  private static final String SESSION = "org.apache.spark.sql.SparkSession$";

  private SparkMapOutput() {}

  static void check(Feature f, SparkContext sc, List<String> problems) {
    HANDLES.check(f, sc, problems);
  }

  // ---------------------------------------------------------------- COMMIT

  private static MapOutputTrackerMaster mapOutputTracker() {
    return (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
  }

  /**
   * {@code MapOutputTrackerMaster.shuffleStatuses()} (private[spark] accessor; ShuffleStatus since 2.3, SPARK-20715), on the
   * driver's tracker (the master).
   */
  private static final Handle SHUFFLE_STATUSES = HANDLES.called(Set.of(COMMIT), TRACKER, "shuffleStatuses",
      sc -> mapOutputTracker().shuffleStatuses());

  /** The tracker's bookkeeping for {@code shuffle}, or null when Spark has none (cleaned, unknown). */
  public static ShuffleStatus shuffleStatus(int shuffle) {
    Option<ShuffleStatus> s = mapOutputTracker().shuffleStatuses().get(shuffle);
    return s.isDefined() ? s.get() : null;
  }

  /** {@code ShuffleStatus.writeLock} (private, from {@code val (readLock, writeLock)}; the pair replaced {@code synchronized} in 3.x). */
  private static final Handle WRITE_LOCK = HANDLES.field(Set.of(COMMIT), STATUS, "writeLock", Lock.class);

  /** The private write lock every mutation of {@code status} takes. */
  public static Lock writeLock(ShuffleStatus status) {
    try {
      return (Lock) WRITE_LOCK.get(status);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot read ShuffleStatus.writeLock: " + e, e);
    }
  }

  /** {@code ShuffleStatus.mapStatuses()/mapIdToMapIndex()} (map ids since 3.0, SPARK-25341). */
  private static final Handle MAP_STATUSES = HANDLES.method(Set.of(COMMIT), STATUS, "mapStatuses");
  private static final Handle MAP_ID_TO_INDEX = HANDLES.method(Set.of(COMMIT), STATUS, "mapIdToMapIndex");

  /** The shuffle's map statuses by map index (the live array: write it only under {@link #writeLock}). */
  public static MapStatus[] mapStatuses(ShuffleStatus status) {
    return status.mapStatuses();
  }

  /** The shuffle's map id to map index (live: change it only under {@link #writeLock}). */
  public static scala.collection.mutable.HashMap<Object, Object> mapIdToIndex(ShuffleStatus status) {
    return status.mapIdToMapIndex();
  }

  /**
   * {@code MapStatus.apply(loc, sizes, mapId[, checksumVal])} and {@code location()/mapId()/checksumValue()}:
   * 4.1 added the map output's row checksum to the statuses (the 4-parameter apply, {@code checksumValue}), so
   * both are called through their handles; on 4.0 statuses carry no checksum.
   */
  private static final Handle NEW_MAP_STATUS = HANDLES.oneOf(Set.of(COMMIT), "org.apache.spark.scheduler.MapStatus$", "apply",
      Handle.params("org.apache.spark.storage.BlockManagerId", "[J", "long", "long"),  // 4.1-4.3
      Handle.params("org.apache.spark.storage.BlockManagerId", "[J", "long"));  // 4.0
  private static final Handle LOCATION = HANDLES.method(Set.of(COMMIT), MAP_STATUS, "location");
  private static final Handle MAP_ID = HANDLES.method(Set.of(COMMIT), MAP_STATUS, "mapId");
  private static final Handle CHECKSUM = HANDLES.method(Set.of(COMMIT), MAP_STATUS, "checksumValue").onlyWith(NEW_MAP_STATUS, 4);

  /**
   * A status at {@code location} carrying {@code checksum} where statuses carry one (4.1+: a 0 there
   * would not match the original output's checksum when the map re-runs, so callers pass the
   * original's, {@link #checksum}); on 4.0 the checksum is dropped.
   */
  public static MapStatus newMapStatus(BlockManagerId location, long[] sizes, long mapId, long checksum) {
    return (MapStatus) (NEW_MAP_STATUS.arity() == 4
        ? NEW_MAP_STATUS.call(MapStatus$.MODULE$, location, sizes, mapId, checksum)
        : NEW_MAP_STATUS.call(MapStatus$.MODULE$, location, sizes, mapId));
  }

  public static long mapId(MapStatus status) {
    return status.mapId();
  }

  public static BlockManagerId location(MapStatus status) {
    return status.location();
  }

  /** The row checksum {@code status} was registered with; 0 on 4.0, whose statuses carry none. */
  public static long checksum(MapStatus status) {
    return NEW_MAP_STATUS.arity() == 4 ? (Long) CHECKSUM.call(status) : 0L;
  }

  /** {@code ShuffleStatus.invalidateSerializedMapOutputStatusCache()}, {@code MapOutputTrackerMaster.incrementEpoch()}. */
  private static final Handle INVALIDATE_CACHE = HANDLES.method(Set.of(COMMIT), STATUS, "invalidateSerializedMapOutputStatusCache");
  private static final Handle INCREMENT_EPOCH = HANDLES.method(Set.of(COMMIT), TRACKER, "incrementEpoch");

  /** Makes readers see the rewritten statuses: drops the serialized-status cache and bumps the tracker's epoch. */
  public static void publishStatuses(ShuffleStatus status) {
    status.invalidateSerializedMapOutputStatusCache();
    mapOutputTracker().incrementEpoch();
  }

  /** {@code Serializer.supportsRelocationOfSerializedObjects()} (the commit's safety check). */
  private static final Handle RELOCATES =
      HANDLES.method(Set.of(COMMIT), "org.apache.spark.serializer.Serializer", "supportsRelocationOfSerializedObjects");

  /** Whether the dependency's serializer writes records that may be relocated (so streams can be concatenated). */
  public static boolean serializerRelocates(ShuffleDependency<?, ?, ?> dep) {
    return dep.serializer().supportsRelocationOfSerializedObjects();
  }

  /** {@code CompressionCodec.supportsConcatenationOfSerializedStreams/createCodec} (private[spark]; the commit's safety check). */
  private static final Handle CONCATENATES = HANDLES.method(Set.of(COMMIT), CODEC, "supportsConcatenationOfSerializedStreams",
      "org.apache.spark.io.CompressionCodec");
  private static final Handle CREATE_CODEC = HANDLES.method(Set.of(COMMIT), CODEC, "createCodec", "org.apache.spark.SparkConf", "java.lang.String");

  /** Whether Spark's {@code codec} supports concatenated compressed streams. */
  public static boolean codecConcatenates(SparkConf conf, String codec) {
    return CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(CompressionCodec$.MODULE$.createCodec(conf, codec));
  }

  /** {@code SparkContext.dagScheduler()}, {@code DAGScheduler.shuffleIdToMapStage} (private[scheduler] HashMap; see below). */
  private static final Handle DAG_SCHEDULER = HANDLES.called(Set.of(COMMIT), "org.apache.spark.SparkContext", "dagScheduler", SparkContext::dagScheduler);
  private static final Handle SHUFFLE_TO_MAP_STAGE = HANDLES.called(Set.of(COMMIT), "org.apache.spark.scheduler.DAGScheduler",
      "shuffleIdToMapStage", sc -> sc.dagScheduler().shuffleIdToMapStage());

  /**
   * The dependency of {@code shuffle}'s map stage, or null. {@code DAGScheduler.shuffleIdToMapStage}
   * is a plain HashMap owned by the DAG event loop; it is read here only from the listener when the
   * map stage's StageSubmitted event arrives: the entry was written before the event was posted (the
   * listener bus queue orders the two), and a concurrent insert of another key can only make the
   * lookup miss, never return another stage. A miss is reported as null and never cached: the
   * caller then leaves that shuffle unmerged.
   */
  public static ShuffleDependency<?, ?, ?> shuffleDependency(SparkContext sc, int shuffle) {
    try {
      Option<ShuffleMapStage> stage = sc.dagScheduler().shuffleIdToMapStage().get(shuffle);
      return stage.isDefined() ? stage.get().shuffleDep() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  // ---------------------------------------------------------------- SKEW_SPLITS

  /** {@code MapStatus.getSizeForBlock(int)}. */
  private static final Handle SIZE_FOR_BLOCK = HANDLES.method(Set.of(SKEW_SPLITS), MAP_STATUS, "getSizeForBlock", "int");

  /** Bytes the status records for reduce partition {@code partition} (what AQE's planners read). */
  public static long sizeForBlock(MapStatus status, int partition) {
    return status.getSizeForBlock(partition);
  }

  /** {@code SparkSession$.getActiveSession()/getDefaultSession()} and {@code RuntimeConfig.getOption(String)}. */
  private static final Handle ACTIVE_SESSION = HANDLES.method(Set.of(SKEW_SPLITS), SESSION, "getActiveSession");
  private static final Handle DEFAULT_SESSION = HANDLES.method(Set.of(SKEW_SPLITS), SESSION, "getDefaultSession");
  private static final Handle CONF_OPTION = HANDLES.method(Set.of(SKEW_SPLITS), "org.apache.spark.sql.RuntimeConfig", "getOption", "java.lang.String");

  /**
   * A SQL conf as the application's session sees it (the thread's active session, else the default
   * one), else from the SparkConf; null when unset everywhere. A commit runs on a py4j thread, where
   * only the default session is known: it is the session SQL queries run in unless the application
   * made others.
   */
  public static String sqlConf(SparkContext sc, String key) {
    try {
      Option<org.apache.spark.sql.SparkSession> session = org.apache.spark.sql.SparkSession$.MODULE$.getActiveSession();
      if (session.isEmpty()) {
        session = org.apache.spark.sql.SparkSession$.MODULE$.getDefaultSession();
      }
      if (session.isDefined()) {
        Option<String> v = session.get().conf().getOption(key);
        if (v.isDefined()) {
          return v.get();
        }
      }
    } catch (RuntimeException | LinkageError e) {
      // no SQL module or session: only the SparkConf is left
    }
    return sc.getConf().getOption(key).isDefined() ? sc.getConf().get(key) : null;
  }

  /** {@code Utils$.median(long[], boolean)} (private[spark]; the median {@code OptimizeSkewedJoin} uses). */
  private static final Handle MEDIAN = HANDLES.method(Set.of(SKEW_SPLITS), "org.apache.spark.util.Utils$", "median", "[J", "boolean");

  /** Spark's median of {@code sizes} (sorted first unless {@code alreadySorted}). */
  public static long median(long[] sizes, boolean alreadySorted) {
    return org.apache.spark.util.Utils$.MODULE$.median(sizes, alreadySorted);
  }

  /**
   * {@code ShufflePartitionsUtil$.splitSizeListByTargetSize(long[], long, double)} and {@code SMALL_PARTITION_FACTOR()}
   * (spark-sql; what {@code createSkewPartitionSpecs} splits a skewed partition with).
   */
  private static final Handle SPLIT_BY_TARGET =
      HANDLES.method(Set.of(SKEW_SPLITS), PARTITIONS_UTIL, "splitSizeListByTargetSize", "[J", "long", "double");
  private static final Handle SMALL_PARTITION_FACTOR = HANDLES.method(Set.of(SKEW_SPLITS), PARTITIONS_UTIL, "SMALL_PARTITION_FACTOR");

  /** Spark's split of {@code sizes} into ranges of about {@code targetSize}: the index where each range starts. */
  public static int[] splitSizeListByTargetSize(long[] sizes, long targetSize, double smallPartitionFactor) {
    return ShufflePartitionsUtil$.MODULE$.splitSizeListByTargetSize(sizes, targetSize, smallPartitionFactor);
  }

  /** The factor under which AQE merges a small last split into its neighbour. */
  public static double smallPartitionFactor() {
    return ShufflePartitionsUtil$.MODULE$.SMALL_PARTITION_FACTOR();
  }
}
