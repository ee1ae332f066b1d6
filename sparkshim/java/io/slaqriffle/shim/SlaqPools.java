package io.slaqriffle.shim;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SLAQ's enforcement side in the driver JVM: one {@link TokenPool} per job under one
 * {@link JobsPool}, loss records per job (from Python reports and from {@link LossAppender}), and a
 * few coarse calls the Python epoch loop makes once per epoch.
 */
public final class SlaqScheduler {
  public static final String JOB_PROPERTY = "slaq.job";
  public static final String POOL_PREFIX = "slaq.";
  private static final Logger LOG = LoggerFactory.getLogger(SlaqScheduler.class);

  private final SparkContext sc;
  private final TaskSchedulerImpl ts;
  private final JobsPool parent;
  private final double cpusPerTask;
  private final long base = System.nanoTime();
  private final Map<String, TokenPool> pools = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<String> records = new ConcurrentLinkedQueue<>();
  private volatile boolean workConserving = true;
  private volatile long staleAfterNanos = 6_000_000_000L;
  private volatile long lastDeposit = Long.MIN_VALUE; // none yet: pools are open until the first epoch
  private volatile String openReason = null;
  private volatile boolean loggedStale = false;

  SlaqScheduler(SparkContext sc) {
    this.sc = sc;
    this.ts = (TaskSchedulerImpl) sc.taskScheduler();
    this.cpusPerTask = ts.CPUS_PER_TASK().doubleValue();
    this.parent = new JobsPool("slaq", this);
    synchronized (ts) {
      ts.rootPool().addSchedulable(parent);
    }
  }

  public void configure(boolean workConserving, double staleAfterSeconds) {
    this.workConserving = workConserving;
    this.staleAfterNanos = (long) (staleAfterSeconds * 1e9);
  }

  boolean workConserving() {
    return workConserving;
  }

  /** Open = fair sharing: before the first deposit, after the loop is declared failed, or when deposits stop. */
  boolean isOpen(long now) {
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

  public String poolName(String job) {
    return POOL_PREFIX + job;
  }

  /** Creates (or reopens) a job's pool; must run before the job submits work under that pool name. */
  public synchronized boolean register(String job, double weight) {
    TokenPool existing = pools.get(job);
    if (existing != null && !existing.isClosed()) {
      return false;
    }
    TokenPool pool = new TokenPool(poolName(job), weight, cpusPerTask);
    synchronized (ts) {
      if (existing != null) {
        parent.removeSchedulable(existing);
      }
      parent.addSchedulable(pool);
    }
    pools.put(job, pool);
    return true;
  }

  /** The job is over: its pool may finish what is queued without tokens and is removed once idle. */
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
    if (pool == null || pool.isClosed()) {
      return false;
    }
    double t = (System.nanoTime() - base) / 1e9;
    records.add(job + "\t" + loss + "\t" + t + "\t" + pool.consumedCoreSeconds() + "\t" + source);
    return true;
  }

  /** The job whose pool the calling JVM thread submits to (inherited by child threads), or null. */
  public String currentJob() {
    String job = sc.getLocalProperty(JOB_PROPERTY);
    return job != null && pools.containsKey(job) ? job : null;
  }

  /**
   * One epoch's allocation: {@code "job=cores;job=cores"}. Deposits {@code cores x epochSeconds}
   * into every listed pool in one batch under the scheduler lock, then revives offers.
   */
  public void deposit(String allocation, double epochSeconds) {
    long now = System.nanoTime();
    synchronized (ts) {
      for (String item : allocation.split(";")) {
        int eq = item.lastIndexOf('=');
        if (eq <= 0) {
          continue;
        }
        TokenPool pool = pools.get(item.substring(0, eq));
        if (pool != null) {
          pool.deposit(Double.parseDouble(item.substring(eq + 1)) * epochSeconds, now);
        }
      }
      lastDeposit = now;
      if (loggedStale) {
        LOG.warn("SLAQ: allocations resumed; job pools are token-limited again");
        loggedStale = false;
      }
    }
    ts.backend().reviveOffers();
  }

  /** Gives up on token limits until {@link #resume()}: the Python loop calls this when it fails. */
  public void openAll(String reason) {
    openReason = reason;
    LOG.warn("SLAQ: all job pools opened (fair sharing): {}", reason);
    ts.backend().reviveOffers();
  }

  public void resume() {
    openReason = null;
  }

  public boolean isOpenNow() {
    return isOpen(System.nanoTime());
  }

  /**
   * Everything new since the last call, as tab-separated lines: {@code R job loss t coreSeconds source}
   * per iteration, then {@code P job consumed tokens running closed} per pool. Idle closed pools are
   * removed after they are reported.
   */
  public String drain() {
    StringBuilder out = new StringBuilder();
    String r;
    while ((r = records.poll()) != null) {
      out.append("R\t").append(r).append('\n');
    }
    for (Map.Entry<String, TokenPool> e : pools.entrySet()) {
      TokenPool p = e.getValue();
      out.append("P\t").append(e.getKey()).append('\t').append(p.consumedCoreSeconds()).append('\t')
          .append(p.tokens()).append('\t').append(p.runningTasks()).append('\t').append(p.isClosed()).append('\n');
      if (p.isClosed() && p.isIdle()) {
        synchronized (ts) {
          if (p.isIdle()) {
            parent.removeSchedulable(p);
            pools.remove(e.getKey(), p);
          }
        }
      }
    }
    return out.toString();
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
