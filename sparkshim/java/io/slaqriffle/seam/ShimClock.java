package io.slaqriffle.seam;

/**
 * The time source of the pools and the reducer gate: {@link #SYSTEM} in production, a
 * {@link Manual} clock in tests so token accounting and hold deadlines are checked without wall time
 * (in the spirit of Spark's own {@code ManualClock}, which is private to Spark).
 */
public interface ShimClock {
  long nanoTime();

  ShimClock SYSTEM = System::nanoTime;

  /** A clock that moves only when told to. */
  final class Manual implements ShimClock {
    private long now;

    public Manual(long startNanos) {
      this.now = startNanos;
    }

    @Override
    public synchronized long nanoTime() {
      return now;
    }

    public synchronized void advanceSeconds(double seconds) {
      now += (long) Math.round(seconds * 1e9);
    }
  }
}
