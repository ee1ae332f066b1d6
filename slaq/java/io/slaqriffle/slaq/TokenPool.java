package io.slaqriffle.slaq;

import io.slaqriffle.seam.ShimClock;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.SchedulingMode$;

/**
 * One SLAQ job's task pool: a token bucket of core-seconds.
 *
 * <p>Each epoch the scheduler deposits {@code cores x epoch seconds}; a decision within the epoch (a
 * job arrived or ended) changes the rate for the rest of it only, so deciding more often than once an
 * epoch never grants more than the cores decided. Running tasks draw the bucket
 * down continuously: the balance is settled on every task launch and finish (Spark calls
 * {@link #increaseRunningTasks}/{@link #decreaseRunningTasks} under the scheduler lock), so the
 * accounting is exact. Overshoot (tasks already running when the bucket empties) becomes debt that
 * the next epoch's deposit pays first. Whether an empty pool may still launch is decided by {@link JobsPool}.
 * It also counts the wall seconds the job had a stage in the scheduler ({@link #stageSeconds}), which
 * split each iteration's time into executor and driver side.
 */
public final class TokenPool extends Pool {
  private final double cpusPerTask;
  private final double jobWeight;
  private double tokens;          // core-seconds left; negative = debt
  private double consumed;        // core-seconds used since creation, including work-conserving use
  private double lastDeposit;     // what this epoch granted so far, to rank pools by the fraction left
  private double cores;           // the cores of the latest grant
  private long epoch = -1;        // the epoch of the latest grant (SlaqPools counts them)
  private double rank = Double.POSITIVE_INFINITY;  // where a ranking policy puts it in the offer order, least first
  private double stageSeconds;    // wall seconds with a task set of this job in Spark's scheduler (queued or running)
  private int taskSets;           // task sets of this job in Spark's scheduler now
  private final ShimClock clock;
  private long settledAt;
  private volatile boolean closed;
  // Snapshots taken once per offer round so the sort never sees values change under it.
  double snapTokens;
  double snapFraction;
  double snapRank;
  int snapRunning;

  public TokenPool(String name, double weight, double cpusPerTask, ShimClock clock) {
    super(name, SchedulingMode$.MODULE$.FIFO(), 0, Math.max(1, (int) Math.round(weight)));
    this.jobWeight = weight;
    this.cpusPerTask = cpusPerTask;
    this.clock = clock;
    this.settledAt = clock.nanoTime();
  }

  synchronized void settle(long now) {
    long dt = now - settledAt;
    if (dt > 0) {
      double used = runningTasks() * cpusPerTask * dt / 1e9;
      tokens -= used;
      consumed += used;
      if (taskSets > 0 || runningTasks() > 0) {
        stageSeconds += dt / 1e9;
      }
      settledAt = now;
    }
  }

  /** Spark adds a task set when it submits a stage of this job (under the scheduler lock). */
  @Override
  public void addSchedulable(Schedulable schedulable) {
    synchronized (this) {
      settle(clock.nanoTime());
      taskSets++;
    }
    super.addSchedulable(schedulable);
  }

  /** ... and removes it when the stage's tasks are done. */
  @Override
  public void removeSchedulable(Schedulable schedulable) {
    synchronized (this) {
      settle(clock.nanoTime());
      taskSets = Math.max(taskSets - 1, 0);
    }
    super.removeSchedulable(schedulable);
  }

  @Override
  public void increaseRunningTasks(int taskNum) {
    settle(clock.nanoTime());
    super.increaseRunningTasks(taskNum);
  }

  @Override
  public void decreaseRunningTasks(int taskNum) {
    settle(clock.nanoTime());
    super.decreaseRunningTasks(taskNum);
  }

  /**
   * {@code cores} for the next {@code seconds}. A new epoch's grant deposits {@code cores x seconds}:
   * debt is carried over, an unspent surplus is not (use it or lose it each epoch). A grant within the
   * epoch changes only what is left of it: {@code (cores - previous cores) x seconds} is added (or
   * taken back), so a job arriving mid-epoch gets its share of the rest and the others give theirs up.
   * A pool's first grant of an epoch is a new epoch's for it, even mid-epoch (a new pool, or one the
   * epoch's first allocation left out).
   */
  public synchronized void grant(double cores, double seconds, long epoch, long now) {
    settle(now);
    if (epoch != this.epoch) {
      tokens = Math.min(tokens, 0.0);
      lastDeposit = 0.0;
      this.cores = 0.0;
      this.epoch = epoch;
    }
    double change = (cores - this.cores) * (Double.isFinite(seconds) ? Math.max(seconds, 0.0) : 0.0);
    tokens += change;
    lastDeposit += change;
    this.cores = cores;
  }

  public synchronized void snapshot(long now) {
    settle(now);
    snapTokens = tokens;
    snapFraction = lastDeposit > 0 ? tokens / lastDeposit : (tokens > 0 ? 1.0 : -1e9 + tokens);
    snapRank = rank;
    snapRunning = runningTasks();
  }

  /** Its place in a ranking policy's offer order, least first ({@link JobsPool}); NaN is taken for last. */
  public synchronized void rank(double rank) {
    this.rank = Double.isNaN(rank) ? Double.POSITIVE_INFINITY : rank;
  }

  public synchronized double consumedCoreSeconds() {
    settle(clock.nanoTime());
    return consumed;
  }

  /**
   * Wall seconds since creation during which the job had a stage in Spark's scheduler: the executor
   * side of its time. The rest of its wall time the driver alone worked for it (or it was idle).
   */
  public synchronized double stageSeconds() {
    settle(clock.nanoTime());
    return stageSeconds;
  }

  public synchronized double tokens() {
    settle(clock.nanoTime());
    return tokens;
  }

  public double jobWeight() {
    return jobWeight;
  }

  public boolean isClosed() {
    return closed;
  }

  public void close() {
    closed = true;
  }

  public boolean isIdle() {
    return schedulableQueue().isEmpty() && runningTasks() == 0;
  }
}
