package io.slaqriffle.riffle;

import io.slaqriffle.seam.SparkMapOutput;
import java.util.List;
import java.util.concurrent.locks.Lock;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.storage.BlockManagerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Points merged groups' map statuses at their merged files, atomically per shuffle: the merged status
 * (synthetic map id, the owner's checksum) at the group's owner index and zero-size statuses
 * (original ids and checksums) at the others, all with the executor's BlockManagerId, under the
 * shuffle's write lock; then the serialized-status cache is invalidated and the epoch bumped, so
 * every reader fetches the new statuses. A group is committed only if each member still has the map
 * id and executor it had when merged (a re-run map task leaves its group unmerged), and only if it does
 * not straddle a split AQE makes of a skewed partition ({@link SkewSplits}). The caller holds the
 * scheduler lock and the shuffle's readers, so no reader has fetched the statuses being changed.
 *
 * <p>Checksums: Spark compares a re-registered map output's order-independent row checksum with the
 * one last registered at the same map index ({@code ShuffleStatus.addMapOutput}) and retries the
 * consumer stages on a mismatch. What re-registers at an index is always that index's own map task
 * (re-run after a lost merged file), whose rows are the original output's, so every index keeps its
 * original checksum, the owner's included; a sum over the group would be a mismatch on the owner's re-run.
 */
final class MapStatusCommit {
  private static final Logger LOG = LoggerFactory.getLogger(MapStatusCommit.class);

  private MapStatusCommit() {}

  /** Groups committed, or -1 when Spark has no status for the shuffle. A group whose statuses changed is skipped. */
  static int apply(RiffleMessages.Commit commit, int partitions, SkewSplits.Conf skew) {
    ShuffleStatus status = SparkMapOutput.shuffleStatus(commit.shuffle());
    if (status == null) {
      return -1;
    }
    int committed = 0;
    Lock lock = SparkMapOutput.writeLock(status);
    lock.lock();
    try {
      MapStatus[] statuses = SparkMapOutput.mapStatuses(status);
      scala.collection.mutable.HashMap<Object, Object> idToIndex = SparkMapOutput.mapIdToIndex(status);
      SkewSplits splits = SkewSplits.plan(statuses, partitions, skew);
      int straddling = 0;
      for (RiffleMessages.MergeGroup g : commit.groups()) {
        BlockManagerId loc = unchangedLocation(g, statuses);
        if (loc == null || g.lengths().size() != partitions) {
          LOG.warn("Riffle: group at map index {} of shuffle {} left unmerged (statuses changed since its merge, or {} != {} partitions)",
              g.owner(), commit.shuffle(), g.lengths().size(), partitions);
          continue;
        }
        if (splits.straddles(g.owner(), g.mapIndexes(), statuses)) {
          straddling++;
          continue;
        }
        long[] sizes = g.lengths().stream().mapToLong(Long::longValue).toArray();
        for (int i = 0; i < g.mapIndexes().size(); i++) {
          int index = g.mapIndexes().get(i);
          long mapId = g.mapIds().get(i);
          MapStatus cur = statuses[index];
          if (index == g.owner()) {
            statuses[index] = SparkMapOutput.newMapStatus(loc, sizes, g.mergedMapId(), SparkMapOutput.checksum(cur));
            idToIndex.remove(mapId);
            idToIndex.put(g.mergedMapId(), index);
          } else {
            statuses[index] = SparkMapOutput.newMapStatus(loc, new long[sizes.length], mapId, SparkMapOutput.checksum(cur));
          }
        }
        committed++;
      }
      if (straddling > 0) {
        LOG.info("Riffle: {} group(s) of shuffle {} left unmerged: each straddles a split AQE makes of one of its {} skewed partition(s)",
            straddling, commit.shuffle(), splits.skewedPartitions());
      }
    } finally {
      lock.unlock();
    }
    SparkMapOutput.publishStatuses(status);
    return committed;
  }

  /** The members' common BlockManagerId if every member still has its recorded map id on the group's executor, else null. */
  private static BlockManagerId unchangedLocation(RiffleMessages.MergeGroup g, MapStatus[] statuses) {
    List<Integer> indexes = g.mapIndexes();
    if (indexes.size() < 2 || indexes.size() != g.mapIds().size() || !indexes.contains(g.owner())) {
      return null;
    }
    BlockManagerId loc = null;
    for (int i = 0; i < indexes.size(); i++) {
      int index = indexes.get(i);
      MapStatus cur = index >= 0 && index < statuses.length ? statuses[index] : null;
      BlockManagerId at = cur == null ? null : SparkMapOutput.location(cur);
      if (cur == null || SparkMapOutput.mapId(cur) != g.mapIds().get(i) || !at.executorId().equals(g.executor())
          || (loc != null && !loc.equals(at))) {
        return null;
      }
      loc = at;
    }
    return loc;
  }
}
