package io.slaqriffle.shim;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.SchedulingMode$;
import org.apache.spark.scheduler.TaskSetManager;
import scala.collection.mutable.ArrayBuffer;

/**
 * The parent of every SLAQ job pool. Once per offer round it orders its pools: pools with tokens
 * first (largest fraction of their deposit left first), then, in work-conserving mode, throttled
 * pools (least debt first), so a throttled pool only gets cores that no pool with tokens takes. In
 * strict mode throttled pools are left out of the round. When the epoch loop stops depositing (or
 * is declared failed) every pool opens and is ordered as Spark's fair scheduler would.
 */
public final class JobsPool extends Pool {
  private final SlaqScheduler scheduler;

  JobsPool(String name, SlaqScheduler scheduler) {
    super(name, SchedulingMode$.MODULE$.FAIR(), 0, 1);
    this.scheduler = scheduler;
  }

  @Override
  public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
    long now = System.nanoTime();
    boolean open = scheduler.isOpen(now);
    boolean workConserving = scheduler.workConserving();
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
    } else {
      pools.sort((a, b) -> {
        boolean ra = a.isClosed() || a.snapTokens > 0;
        boolean rb = b.isClosed() || b.snapTokens > 0;
        if (ra != rb) {
          return ra ? -1 : 1;
        }
        return Double.compare(b.snapFraction, a.snapFraction);
      });
    }
    ArrayBuffer<TaskSetManager> out = new ArrayBuffer<>();
    for (TokenPool p : pools) {
      if (open || workConserving || p.isClosed() || p.snapTokens > 0) {
        out.addAll(p.getSortedTaskSetQueue());
      }
    }
    return out;
  }
}
