package io.slaqriffle.riffle;

import io.slaqriffle.seam.ShimClock;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.TaskSetManager;
import scala.Enumeration;
import scala.collection.mutable.ArrayBuffer;

/**
 * Replacement for the task scheduler's root pool that leaves out, each offer round, the task sets
 * the {@link ReducerGate} holds. Everything else (FIFO or FAIR order, child pools such as SLAQ's)
 * is the stock Pool's behaviour. The sort only reads the gate; it changes nothing.
 */
public final class GateRootPool extends Pool {
  private final ReducerGate gate;
  private final ShimClock clock;

  GateRootPool(Enumeration.Value mode, ReducerGate gate, ShimClock clock, Pool old) {
    super("", mode, 0, 0);
    this.gate = gate;
    this.clock = clock;
    for (Schedulable s : old.schedulableQueue()) {
      addSchedulable(s);
    }
  }

  @Override
  public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
    ArrayBuffer<TaskSetManager> all = super.getSortedTaskSetQueue();
    ArrayBuffer<TaskSetManager> out = new ArrayBuffer<>(all.size());
    long now = clock.nanoTime();
    for (int i = 0; i < all.size(); i++) {
      TaskSetManager tsm = all.apply(i);
      if (!gate.holds(tsm.stageId(), now)) {
        out.addOne(tsm);
      }
    }
    return out;
  }
}
