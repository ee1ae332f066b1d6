package io.slaqriffle.riffle;

import io.slaqriffle.seam.Feature;
import io.slaqriffle.seam.Features;
import io.slaqriffle.seam.SparkMapOutput;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.scheduler.MapStatus;

/**
 * AQE's skew-split plan of one shuffle, computed the way {@code OptimizeSkewedJoin} computes it from
 * the same map statuses: a reduce partition is skewed when its bytes exceed
 * {@code max(skewedPartitionThresholdInBytes, skewedPartitionFactor x median)}, and is split into map-index
 * ranges by Spark's own {@code splitSizeListByTargetSize} with target
 * {@code max(advisoryPartitionSizeInBytes, mean of the non-skewed partitions)}.
 *
 * <p>Why: a merged group's bytes sit at its owner's map index. AQE may plan the splits before the
 * commit (it reads the original per-map sizes) or after it (it reads the merged ones). A group whose
 * members with bytes in a skewed partition all lie in one split range reads, in either case, no more
 * than that split read without Riffle; a group that straddles a split boundary would pile the bytes of
 * several splits into one. {@link MapStatusCommit} leaves such groups unmerged.
 */
final class SkewSplits {
  /** No partition is split (AQE or its skew join is off, or nothing is skewed). */
  static final SkewSplits NONE = new SkewSplits(Map.of());

  /** The SQL confs the plan depends on, as the application's session has them; off too when this Spark lacks SKEW_SPLITS. */
  record Conf(boolean on, double factor, long threshold, long advisory) {
    static Conf read(SparkContext sc) {
      boolean on = Features.available(sc, Feature.SKEW_SPLITS)
          && bool(sc, "spark.sql.adaptive.enabled", true) && bool(sc, "spark.sql.adaptive.skewJoin.enabled", true);
      String factor = SparkMapOutput.sqlConf(sc, "spark.sql.adaptive.skewJoin.skewedPartitionFactor");
      return new Conf(on, factor == null ? 5.0 : Double.parseDouble(factor.trim()),
          bytes(sc, "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes", "256MB"),
          bytes(sc, "spark.sql.adaptive.advisoryPartitionSizeInBytes",
              firstNonNull(SparkMapOutput.sqlConf(sc, "spark.sql.adaptive.shuffle.targetPostShuffleInputSize"), "64MB")));
    }

    private static boolean bool(SparkContext sc, String key, boolean dflt) {
      String v = SparkMapOutput.sqlConf(sc, key);
      return v == null ? dflt : Boolean.parseBoolean(v.trim());
    }

    private static long bytes(SparkContext sc, String key, String dflt) {
      return JavaUtils.byteStringAsBytes(firstNonNull(SparkMapOutput.sqlConf(sc, key), dflt).trim());
    }

    private static String firstNonNull(String a, String b) {
      return a != null ? a : b;
    }
  }

  private final Map<Integer, int[]> starts; // skewed partition -> first map index of each split (ascending, from 0)

  private SkewSplits(Map<Integer, int[]> starts) {
    this.starts = starts;
  }

  /** The plan for {@code statuses} (every map index registered), or {@link #NONE}. */
  static SkewSplits plan(MapStatus[] statuses, int partitions, Conf conf) {
    if (!conf.on() || partitions <= 0 || statuses.length < 2) {
      return NONE;
    }
    long[][] sizes = new long[partitions][statuses.length]; // [partition][map index]
    long[] totals = new long[partitions];
    for (int m = 0; m < statuses.length; m++) {
      if (statuses[m] == null) {
        return NONE;
      }
      for (int p = 0; p < partitions; p++) {
        sizes[p][m] = SparkMapOutput.sizeForBlock(statuses[m], p);
        totals[p] += sizes[p][m];
      }
    }
    long threshold = Math.max(conf.threshold(), (long) (median(totals) * conf.factor()));
    long[] nonSkewed = Arrays.stream(totals).filter(t -> t <= threshold).toArray();
    long target = nonSkewed.length == 0 ? conf.advisory() : Math.max(conf.advisory(), Arrays.stream(nonSkewed).sum() / nonSkewed.length);
    Map<Integer, int[]> starts = new HashMap<>();
    for (int p = 0; p < partitions; p++) {
      if (totals[p] > threshold) {
        int[] s = splitStarts(sizes[p], target);
        if (s.length > 1) {
          starts.put(p, s);
        }
      }
    }
    return starts.isEmpty() ? NONE : new SkewSplits(starts);
  }

  /** The median {@code OptimizeSkewedJoin} compares partition sizes with. */
  private static long median(long[] sizes) {
    return SparkMapOutput.median(sizes.clone(), false);
  }

  /** Where AQE starts each split of a skewed partition whose per-map sizes are {@code sizes}: Spark's own function, same factor. */
  private static int[] splitStarts(long[] sizes, long targetSize) {
    return SparkMapOutput.splitSizeListByTargetSize(sizes, targetSize, SparkMapOutput.smallPartitionFactor());
  }

  /** Skewed partitions AQE would split. */
  int skewedPartitions() {
    return starts.size();
  }

  /**
   * Whether the group at {@code mapIndexes}, published at {@code owner}, straddles a split: for some
   * skewed partition a member with bytes there lies outside the owner's map-index range (the split
   * holding the owner reads the whole merged block).
   */
  boolean straddles(int owner, List<Integer> mapIndexes, MapStatus[] statuses) {
    for (Map.Entry<Integer, int[]> e : starts.entrySet()) {
      int ownerRange = rangeOf(e.getValue(), owner);
      for (int index : mapIndexes) {
        if (SparkMapOutput.sizeForBlock(statuses[index], e.getKey()) != 0 && rangeOf(e.getValue(), index) != ownerRange) {
          return true;
        }
      }
    }
    return false;
  }

  /** The split whose range holds {@code mapIndex}: the last start at or before it. */
  static int rangeOf(int[] starts, int mapIndex) {
    int i = Arrays.binarySearch(starts, mapIndex);
    return i >= 0 ? i : -i - 2;
  }
}
