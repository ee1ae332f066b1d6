package io.slaqriffle.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;

/**
 * SLAQ's enforcement side in the driver JVM: one {@link TokenPool} per job under one
 * {@link JobsPool}, loss records per job (from Python reports and from {@link LossAppender}), and a
 * few coarse calls the Python epoch loop makes once per epoch, in the messages of
 * {@link Messages}.
 */
public final class SlaqPools {
  public static final String JOB_PROPERTY = "slaq.job";
  public static final String POOL_PREFIX = "slaq.";
  /** Loss records kept for a loop that stopped draining; older ones are dropped. */
  static final int MAX_PENDING_RECORDS = 65_536;

  private final SparkContext sc;
  private final TaskSchedulerImpl ts;
  private final JobsPool parent;
  private final PoolMode mode = new PoolMode();
  private final ShimClock clock = ShimClock.SYSTEM;
  private final double cpusPerTask;
  private final long base = clock.nanoTime();
  private final Map<String, TokenPool> pools = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Messages.Iteration> records = new ConcurrentLinkedQueue<>();
  private final AtomicInteger pending = new AtomicInteger();

  SlaqPools(SparkContext sc) {
    this.sc = sc;
    this.ts = (TaskSchedulerImpl) sc.taskScheduler();
    this.cpusPerTask = ts.CPUS_PER_TASK().doubleValue();
    this.parent = new JobsPool("slaq", mode, clock);
    synchronized (ts) {
      ts.rootPool().addSchedulable(parent);
    }
  }

  public void configure(boolean workConserving, double staleAfterSeconds) {
    mode.configure(workConserving, staleAfterSeconds);
  }

  public String poolName(String job) {
    return POOL_PREFIX + job;
  }

  /** Creates (or reopens) a job's pool; must run before the job submits work under that pool name. */
  public synchronized boolean register(String job, double weight) {
    TokenPool existing = pools.get(job);
    if (existing != null && !existing.isClosed()) {
      return false;
    }
    TokenPool pool = new TokenPool(poolName(job), weight, cpusPerTask, clock);
    synchronized (ts) {
      if (existing != null) {
        parent.removeSchedulable(existing);
      }
      parent.addSchedulable(pool);
    }
    pools.put(job, pool);
    return true;
  }

  /** The job is over: its pool runs on what the loop deposits for closed pools and is removed once idle. */
  public void close(String job) {
    TokenPool pool = pools.get(job);
    if (pool != null) {
      pool.close();
      ts.backend().reviveOffers();
    }
  }

  /** Records one iteration's loss with the job's cumulative core-seconds; false when no such job is open. */
  public boolean report(String job, double loss, String source) {
    TokenPool pool = pools.get(job);
    if (pool == null || pool.isClosed() || !Double.isFinite(loss)) {
      return false;
    }
    records.add(new Messages.Iteration(job, loss, now(), pool.consumedCoreSeconds(), source));
    if (pending.incrementAndGet() > MAX_PENDING_RECORDS && records.poll() != null) {
      pending.decrementAndGet();
    }
    return true;
  }

  /** Seconds on the clock that stamps {@code iteration} messages (Python maps them onto its own clock). */
  public double now() {
    return (clock.nanoTime() - base) / 1e9;
  }

  /** The job whose pool the calling JVM thread submits to (inherited by child threads), or null. */
  public String currentJob() {
    String job = sc.getLocalProperty(JOB_PROPERTY);
    return job != null && pools.containsKey(job) ? job : null;
  }

  /**
   * One epoch's allocation, an {@code allocation} message. Deposits {@code cores x epochSeconds}
   * into every listed pool in one batch under the scheduler lock, then revives offers.
   */
  public void deposit(String allocationJson) {
    Messages.Allocation allocation = Messages.decode(allocationJson, Messages.Allocation.class);
    long now = clock.nanoTime();
    synchronized (ts) {
      for (Map.Entry<String, Double> e : allocation.cores().entrySet()) {
        TokenPool pool = pools.get(e.getKey());
        if (pool != null) {
          pool.deposit(Math.max(e.getValue(), 0.0) * allocation.epochSeconds(), now);
        }
      }
      mode.deposited(now);
    }
    ts.backend().reviveOffers();
  }

  /** Gives up on token limits until {@link #resume()}: the Python loop calls this when it fails. */
  public void openAll(String reason) {
    mode.openAll(reason);
    ts.backend().reviveOffers();
  }

  public void resume() {
    mode.resume();
  }

  public boolean isOpenNow() {
    return mode.isOpen(clock.nanoTime());
  }

  /**
   * Everything new since the last call, as a JSON list of messages: an {@code iteration} per
   * reported loss, then a {@code pool_state} per pool. Idle closed pools are removed after they are
   * reported.
   */
  public String drain() {
    List<Messages.Message> out = new ArrayList<>();
    Messages.Iteration r;
    while ((r = records.poll()) != null) {
      pending.decrementAndGet();
      out.add(r);
    }
    for (Map.Entry<String, TokenPool> e : pools.entrySet()) {
      TokenPool p = e.getValue();
      out.add(new Messages.PoolState(e.getKey(), p.consumedCoreSeconds(), p.tokens(), p.runningTasks(), p.isClosed()));
      if (p.isClosed() && p.isIdle()) {
        synchronized (ts) {
          if (p.isIdle()) {
            parent.removeSchedulable(p);
            pools.remove(e.getKey(), p);
          }
        }
      }
    }
    return Messages.encode(out);
  }

  /** Cores the executors offer, in cores (not task slots). */
  public double capacity() {
    SchedulerBackend b = ts.backend();
    if (b instanceof CoarseGrainedSchedulerBackend) {
      return ((CoarseGrainedSchedulerBackend) b).totalCoreCount().get();
    }
    return b.defaultParallelism();
  }
}
