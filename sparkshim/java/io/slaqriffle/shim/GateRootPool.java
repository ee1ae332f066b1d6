package io.slaqriffle.shim;

import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.TaskSetManager;
import scala.Enumeration;
import scala.collection.mutable.ArrayBuffer;

/**
 * Replacement for the task scheduler's root pool that leaves out, each offer round, the task sets
 * of stages reading a shuffle Riffle is still merging. Everything else (FIFO or FAIR order, child
 * pools such as SLAQ's) is the stock Pool's behaviour.
 */
public final class GateRootPool extends Pool {
  private final RiffleTracker tracker;

  GateRootPool(Enumeration.Value mode, RiffleTracker tracker, Pool old) {
    super("", mode, 0, 0);
    this.tracker = tracker;
    for (Schedulable s : old.schedulableQueue()) {
      addSchedulable(s);
    }
  }

  @Override
  public ArrayBuffer<TaskSetManager> getSortedTaskSetQueue() {
    ArrayBuffer<TaskSetManager> all = super.getSortedTaskSetQueue();
    ArrayBuffer<TaskSetManager> out = new ArrayBuffer<>(all.size());
    long now = System.nanoTime();
    for (int i = 0; i < all.size(); i++) {
      TaskSetManager tsm = all.apply(i);
      if (!tracker.blocks(tsm.stageId(), now)) {
        out.addOne(tsm);
      }
    }
    return out;
  }
}
