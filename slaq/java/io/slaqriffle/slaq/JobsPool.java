package io.slaqriffle.slaq;

import io.slaqriffle.seam.ShimClock;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.SchedulingMode$;
import org.apache.spark.scheduler.TaskSetManager;
import scala.collection.mutable.ArrayBuffer;

/**
 * The parent of every SLAQ job pool. Once per offer round it orders its pools: pools with tokens
 * first (largest fraction of this epoch's grants left first), then, in work-conserving mode, throttled
 * pools (least debt first), so a throttled pool only gets cores that no pool with tokens takes. In
 * strict mode throttled pools are left out of the round. A closed job's pool is ranked like any
 * other (the epoch loop keeps depositing the minimum share into it while it has work), so work a
 * finished job keeps submitting is never unthrottled. When the epoch loop stops depositing (or is
 * declared failed) every pool opens and is ordered as Spark's fair scheduler would. Under a ranking
 * policy ({@link #ranked}) the pools' ranks replace their tokens in the order, least first; strict
 * mode still leaves out the pools without tokens.
 */
public final class JobsPool extends Pool {
  private final PoolMode mode;
  private final ShimClock clock;
  private volatile boolean ranked;

  public JobsPool(String name, PoolMode mode, ShimClock clock) {
    super(name, SchedulingMode$.MODULE$.FAIR(), 0, 1);
    this.mode = mode;
    this.clock = clock;
  }

  /** The job pools that may launch this round, in the order they are offered cores. */
  public List<TokenPool> admitted(long now) {
    boolean open = mode.isOpen(now);
    List<TokenPool> pools = new ArrayList<>();
    for (Schedulable s : schedulableQueue()) {
      if (s instanceof TokenPool) {
        TokenPool p = (TokenPool) s;
        p.snapshot(now);
        pools.add(p);
      }
    }
    if (open) {
      pools.sort((a, b) -> Double.compare(a.snapRunning / a.jobWeight(), b.snapRunning / b.jobWeight()));
      return pools;
    }
    if (ranked) {
      if (!mode.workConserving()) {
        pools.removeIf(p -> p.snapTokens <= 0);
      }
      pools.sort((a, b) -> Double.compare(a.snapRank, b.snapRank));
      return pools;
    }
    pools.sort((a, b) -> {
      boolean ra = a.snapTokens > 0;
      boolean rb = b.snapTokens > 0;
      if (ra != rb) {
        return ra ? -1 : 1;
      }
      return Double.compare(b.snapFraction, a.snapFraction);
    });
    if (!mode.workConserving()) {
      pools.removeIf(p -> p.snapTokens <= 0);
    }
    return pools;
  }

  /** Whether the latest allocation ranked the pools ({@link TokenPool#rank}): they are offered cores in that order. */
  public void ranked(boolean on) {
    ranked = on;
  }

  @Override
  public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
    ArrayBuffer<TaskSetManager> out = new ArrayBuffer<>();
    for (TokenPool p : admitted(clock.nanoTime())) {
      out.addAll(p.getSortedTaskSetQueue());
    }
    return out;
  }
}
