package io.slaqriffle.slaq;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether SLAQ's pools are token-limited right now, and how: work-conserving or strict, and
 * fail-open (every pool open, fair sharing) before the first allocation, after the Python loop
 * declared itself failed, or when no allocation arrived for {@code staleAfter} (a dead or hung loop).
 */
public final class PoolMode {
  private static final Logger LOG = LoggerFactory.getLogger(PoolMode.class);
  private volatile boolean workConserving = true;
  private volatile long staleAfterNanos = 6_000_000_000L;
  private volatile long lastDeposit = Long.MIN_VALUE; // none yet: pools are open until the first epoch
  private volatile String openReason = null;
  private volatile boolean loggedStale = false;

  public void configure(boolean workConserving, double staleAfterSeconds) {
    this.workConserving = workConserving;
    this.staleAfterNanos = (long) (staleAfterSeconds * 1e9);
  }

  public boolean workConserving() {
    return workConserving;
  }

  /** Open = fair sharing: before the first deposit, after the loop is declared failed, or when deposits stop. */
  public boolean isOpen(long now) {
    if (openReason != null || lastDeposit == Long.MIN_VALUE) {
      return true;
    }
    boolean stale = now - lastDeposit > staleAfterNanos;
    if (stale && !loggedStale) {
      loggedStale = true;
      LOG.warn("SLAQ: no allocation for {} s; all job pools are open (fair sharing) until the epoch loop recovers",
          staleAfterNanos / 1e9);
    }
    return stale;
  }

  /** Nanos from {@code now} until the latest allocation goes stale (not positive once it has, or before the first). */
  public long untilStale(long now) {
    long last = lastDeposit;
    return last == Long.MIN_VALUE ? 0 : last + staleAfterNanos - now;
  }

  /** An allocation arrived at {@code now}. */
  public void deposited(long now) {
    lastDeposit = now;
    if (loggedStale) {
      LOG.warn("SLAQ: allocations resumed; job pools are token-limited again");
      loggedStale = false;
    }
  }

  /** Every pool opens because something failed: a WARN says what. */
  public void openAll(String reason) {
    openReason = reason;
    LOG.warn("SLAQ: all job pools opened (fair sharing): {}", reason);
  }

  /** Every pool opens because SLAQ was switched off (detached, or the application ends): nothing failed. */
  public void detach() {
    openReason = "SLAQ detached";
    LOG.info("SLAQ: detached; all job pools open (fair sharing)");
  }

  public void resume() {
    openReason = null;
  }
}
