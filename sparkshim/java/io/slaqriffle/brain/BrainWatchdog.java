package io.slaqriffle.brain;

import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * Declares the brain stuck when its heartbeat stops. The brain calls {@link BrainHandle#alive} about
 * once a second from a thread of its own; a brain that is alive but does not answer (stopped with
 * SIGSTOP, paused, swapped out, deadlocked) stops beating without exiting, which the process waiter
 * cannot see. The silence is counted only while this JVM runs: a tick that comes late (the driver
 * itself paused for GC or was not scheduled) adds at most {@link #MAX_STEP_MILLIS}, so a driver pause
 * is never blamed on the brain. Before the first beat nothing is counted: the plugin's bounded wait
 * for the brain to attach covers its start.
 */
final class BrainWatchdog {
  /**
   * How long the brain may stay silent: 30 missed beats. The heartbeat thread needs a few
   * milliseconds of CPU a second; on a 2-core machine under full load a runnable thread waits tens of
   * milliseconds for a core, and a brain paged back in after swapping waits seconds, far below this.
   * It is the default {@code spark.riffle.holdTimeout} too: a stuck brain costs a shuffle no more than
   * an unfinished merge may. Documented in docs/install.md.
   */
  static final long DEADLINE_MILLIS = 30_000;
  static final long TICK_MILLIS = 1_000;
  /** The most one tick adds to the silence: a longer gap means this JVM did not run, not that the brain did not. */
  static final long MAX_STEP_MILLIS = 2 * TICK_MILLIS;

  private final LongSupplier beats;
  private final LongConsumer onStuck;
  private final Thread thread;
  private volatile boolean stopped;

  private BrainWatchdog(LongSupplier beats, LongConsumer onStuck) {
    this.beats = beats;
    this.onStuck = onStuck;
    this.thread = new Thread(this::watch, "slaq-riffle-brain-watchdog");
    thread.setDaemon(true);
  }

  /** Watches the beat counter {@code beats}; {@code onStuck} gets the silence (ms) once, when it reaches the deadline. */
  static BrainWatchdog start(LongSupplier beats, LongConsumer onStuck) {
    BrainWatchdog watchdog = new BrainWatchdog(beats, onStuck);
    watchdog.thread.start();
    return watchdog;
  }

  /** The brain's silence after a tick of {@code elapsedMillis}: none if it beat, else grown by the tick, at most {@link #MAX_STEP_MILLIS}. */
  static long silence(long before, boolean beat, long elapsedMillis) {
    return beat ? 0 : before + Math.min(Math.max(elapsedMillis, 0), MAX_STEP_MILLIS);
  }

  /** No more checks (the plugin stops the brain itself). */
  void stop() {
    stopped = true;
    thread.interrupt();
  }

  private void watch() {
    long seen = 0;
    long silence = 0;
    long last = System.nanoTime();
    while (!stopped) {
      try {
        Thread.sleep(TICK_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
      long now = System.nanoTime();
      long count = beats.getAsLong();
      if (count > 0) {
        silence = silence(silence, count != seen, (now - last) / 1_000_000L);
        seen = count;
      }
      last = now;
      if (silence >= DEADLINE_MILLIS && !stopped) {
        onStuck.accept(silence);
        return;
      }
    }
  }
}
