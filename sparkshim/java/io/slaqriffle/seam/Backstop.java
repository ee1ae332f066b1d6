package io.slaqriffle.seam;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shim's own timer, one daemon thread per JVM. A deadline that the Python side should act on (a
 * held shuffle's hold timeout, SLAQ's stale-allocation timeout) is also acted on from here when it
 * passes, so a Python side that stopped calling cannot leave the scheduler waiting: under a
 * {@code local} master nothing else offers resources again once a deadline passes (only the
 * cluster backends revive offers every second).
 */
public final class Backstop {
  private static final Logger LOG = LoggerFactory.getLogger(Backstop.class);
  private static final ScheduledThreadPoolExecutor TIMER = new ScheduledThreadPoolExecutor(1, r -> {
    Thread t = new Thread(r, "slaq-riffle-backstop");
    t.setDaemon(true);
    return t;
  });

  static {
    TIMER.setRemoveOnCancelPolicy(true);
  }

  private Backstop() {}

  /** Runs {@code action} once, {@code nanos} from now (at once when not positive); an exception it throws is dropped. */
  public static void after(long nanos, Runnable action) {
    TIMER.schedule(() -> {
      try {
        action.run();
      } catch (RuntimeException e) {
        LOG.debug("backstop action failed", e);
      }
    }, Math.max(nanos, 0L), TimeUnit.NANOSECONDS);
  }
}
