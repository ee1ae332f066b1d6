package io.slaqriffle.slaq;

import io.slaqriffle.seam.Backstop;
import io.slaqriffle.seam.Feature;
import io.slaqriffle.seam.Features;
import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.Outbox;
import io.slaqriffle.seam.Shim;
import io.slaqriffle.seam.ShimClock;
import io.slaqriffle.seam.SparkHooks;
import io.slaqriffle.seam.SparkScheduler;
import io.slaqriffle.seam.StatusTab;
import io.slaqriffle.seam.TabEvent;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SLAQ's enforcement side in the driver JVM: one {@link TokenPool} per job under one
 * {@link JobsPool}, loss records per job (from Python reports and from {@link LossAppender}), the
 * jobs of Spark Connect clients' spark.ml fits ({@link ConnectFits}), and a
 * few coarse calls the Python epoch loop makes once per epoch, in the messages of
 * {@link Messages}.
 */
public final class SlaqPools implements Shim.FailOpen {
  private static final Logger LOG = LoggerFactory.getLogger(SlaqPools.class);
  /** Loss records kept for a loop that stopped draining; older ones are dropped. */
  static final int MAX_PENDING_RECORDS = 65_536;
  /** The SLAQ tab's prefix in the Spark UI, and its events' {@code tab} in the event log. */
  static final String TAB = "slaq";

  private final SparkContext sc;
  private final TaskSchedulerImpl ts;
  private final JobsPool parent;
  private final PoolMode mode = new PoolMode();
  private long epochs;  // new epochs' allocations so far (under the scheduler lock): a grant's epoch
  private final ShimClock clock = ShimClock.SYSTEM;
  private final double cpusPerTask;
  private final long base = clock.nanoTime();
  private final Map<String, TokenPool> pools = new ConcurrentHashMap<>();
  private final Outbox<SlaqMessages.Iteration> records = new Outbox<>(MAX_PENDING_RECORDS);
  private final SlaqStatus status = new SlaqStatus();
  private volatile ConnectFits connect;  // null without Spark Connect (or its default pool)
  private final AtomicBoolean staleWatch = new AtomicBoolean();  // a reviveWhenStale is scheduled

  private SlaqPools(SparkContext sc) {
    this.sc = sc;
    this.ts = SparkScheduler.taskScheduler(sc);
    this.cpusPerTask = SparkScheduler.cpusPerTask(ts);
    this.parent = new JobsPool("slaq", mode, clock);
    synchronized (ts) {
      SparkScheduler.rootPool(ts).addSchedulable(parent);
    }
    SparkHooks.attachTab(sc, ui -> new StatusTab<>(ui, SlaqPage.VIEW, status));
    status.onRecorded(epoch -> SparkHooks.postEvent(sc, TabEvent.of(TAB, epoch)));
    SparkHooks.registerSource(sc, "slaq", status.metrics());
    sc.addSparkListener(new org.apache.spark.scheduler.SparkListener() {
      @Override
      public void onApplicationEnd(org.apache.spark.scheduler.SparkListenerApplicationEnd event) {
        status.logSummary();
      }
    });
  }

  /**
   * The pools of {@code sc}, created on first use with the SLAQ tab and spark.ml loss capture; the
   * Python bridge calls this. Throws IllegalStateException (after one WARN) when this Spark's
   * scheduler lacks what the pools need: SLAQ then cannot enforce anything.
   */
  public static SlaqPools attach(SparkContext sc) {
    return Shim.install(sc).component(SlaqPools.class, SlaqPools::create);
  }

  private static SlaqPools create(SparkContext sc) {
    Map<Feature, String> missing = Features.selfCheck(sc, EnumSet.of(Feature.POOLS, Feature.UI_TAB, Feature.METRICS, Feature.EVENT_LOG, Feature.CONNECT));
    if (missing.containsKey(Feature.POOLS)) {
      throw new IllegalStateException("SLAQ cannot enforce allocations on Spark " + sc.version() + ": " + missing.get(Feature.POOLS));
    }
    SlaqPools pools = new SlaqPools(sc);
    if (!missing.containsKey(Feature.CONNECT)) {
      pools.connect = ConnectFits.attach(sc, pools.ts, pools);
    }
    try {
      LossAppender.attach(pools, sc);
    } catch (RuntimeException | LinkageError e) {  // e.g. a logging backend other than log4j2
      LOG.warn("SLAQ: spark.ml loss capture is off ({}); losses reported through slaq still count", e.toString());
    }
    return pools;
  }

  public void configure(boolean workConserving, double staleAfterSeconds) {
    mode.configure(workConserving, staleAfterSeconds);
  }

  public String poolName(String job) {
    return SlaqNames.POOL_PREFIX + job;
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

  /**
   * A job's pool created from inside the task scheduler (a Spark Connect fit's first task set):
   * the caller holds the scheduler lock, so this takes no other lock. A job of that name must not be open.
   */
  void registerLocked(String job, double weight) {
    TokenPool pool = new TokenPool(poolName(job), weight, cpusPerTask, clock);
    TokenPool existing = pools.put(job, pool);
    if (existing != null) {
      parent.removeSchedulable(existing);
    }
    parent.addSchedulable(pool);
  }

  TokenPool pool(String job) {
    return pools.get(job);
  }

  /** Whether each spark.ml fit a Spark Connect client submits becomes a SLAQ job; false when Connect is not there. */
  public boolean connectFits(boolean on) {
    ConnectFits c = connect;
    if (c != null) {
      c.enable(on);
    }
    return c != null;
  }

  /** Connect fits opened and ended since the last call: a JSON list of {@code connect_fit} messages. */
  public String pollConnectFits() {
    ConnectFits c = connect;
    return c == null ? "[]" : c.poll();
  }

  /** The job is over: its pool runs on what the loop deposits for closed pools and is removed once idle. */
  public void close(String job) {
    TokenPool pool = pools.get(job);
    if (pool != null) {
      pool.close();
      SparkScheduler.reviveOffers(ts);
    }
  }

  /** Records one iteration's loss with the job's cumulative core-seconds and stage seconds; false when no such job is open. */
  public boolean report(String job, double loss, String source) {
    TokenPool pool = pools.get(job);
    if (pool == null || pool.isClosed() || !Double.isFinite(loss)) {
      return false;
    }
    records.add(new SlaqMessages.Iteration(job, loss, now(), pool.consumedCoreSeconds(), pool.stageSeconds(), source));
    return true;
  }

  /** Seconds on the clock that stamps {@code iteration} messages (Python maps them onto its own clock). */
  public double now() {
    return (clock.nanoTime() - base) / 1e9;
  }

  /** The job whose pool the calling JVM thread submits to (inherited by child threads), or null. */
  public String currentJob() {
    String job = sc.getLocalProperty(SlaqNames.JOB_PROPERTY);
    if (job == null && connect != null) {
      job = connect.jobOfThread();  // a Spark Connect client's fit
    }
    return job != null && pools.containsKey(job) ? job : null;
  }

  /**
   * One allocation, an {@code allocation} message: a new epoch's, or a decision within the current
   * epoch (a job arrived or ended). Grants every listed pool its cores for the message's seconds
   * ({@link TokenPool#grant}) and ranks every pool (one the message does not rank last; no ranks:
   * by their tokens) in one batch under the scheduler lock, then revives offers.
   */
  public void deposit(String allocationJson) {
    SlaqMessages.Allocation allocation = Messages.decode(allocationJson, SlaqMessages.Allocation.class);
    long now = clock.nanoTime();
    synchronized (ts) {
      if (allocation.newEpoch()) {
        epochs++;
      }
      for (Map.Entry<String, Double> e : allocation.cores().entrySet()) {
        TokenPool pool = pools.get(e.getKey());
        if (pool != null) {
          pool.grant(Math.max(e.getValue(), 0.0), allocation.seconds(), epochs, now);
        }
      }
      Map<String, Double> ranks = allocation.ranks() == null ? Map.of() : allocation.ranks();
      for (Map.Entry<String, TokenPool> e : pools.entrySet()) {  // by job name (a pool's own name has the prefix)
        e.getValue().rank(ranks.getOrDefault(e.getKey(), Double.POSITIVE_INFINITY));
      }
      parent.ranked(!ranks.isEmpty());
      mode.deposited(now);
    }
    SparkScheduler.reviveOffers(ts);
    watchStaleness(mode.untilStale(now));
  }

  private void watchStaleness(long nanos) {
    if (staleWatch.compareAndSet(false, true)) {
      Backstop.after(nanos + 1_000_000L, this::reviveWhenStale);
    }
  }

  /**
   * Runs when the latest allocation may have gone stale: if it has, the pools are open from now and
   * the scheduler is offered resources again (a loop that stopped depositing revives nothing itself).
   */
  private void reviveWhenStale() {
    staleWatch.set(false);
    long wait = mode.untilStale(clock.nanoTime());
    if (wait > 0) {
      watchStaleness(wait);
    } else if (isOpenNow()) {
      SparkScheduler.reviveOffers(ts);
    }
  }

  /** One epoch's {@code epoch_status} message from the Python loop: the UI tab, REST JSON and log line show it. */
  public void publish(String epochStatusJson) {
    status.publish(epochStatusJson);
  }

  /** What the SLAQ UI tab shows, as a {@code status_report} message (also served at {@code /slaq/json/}). */
  public String statusReport() {
    return status.reportJson();
  }

  /** Gives up on token limits until {@link #resume()}: the Python loop calls this when it fails. */
  public void openAll(String reason) {
    mode.openAll(reason);
    SparkScheduler.reviveOffers(ts);
  }

  /** SLAQ is off by choice (detach, application end): every pool opens, logged at INFO. */
  public void detach() {
    mode.detach();
    SparkScheduler.reviveOffers(ts);
  }

  /** The epoch loop's process is gone: every pool opens (fair sharing) for the rest of the application. */
  @Override
  public void failOpen(String reason) {
    openAll(reason);
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
    List<Messages.Message> out = records.drain();
    for (Map.Entry<String, TokenPool> e : pools.entrySet()) {
      TokenPool p = e.getValue();
      out.add(new SlaqMessages.PoolState(e.getKey(), p.consumedCoreSeconds(), p.tokens(), p.runningTasks(), p.isClosed()));
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

  /** The {@code iteration} messages since the last drain, as a JSON list, without the pools' states: work in proportion to the losses, not to the jobs open. */
  public String drainLosses() {
    return Messages.encode(records.drain());
  }

  /** Cores the executors offer, in cores (not task slots). */
  public double capacity() {
    return SparkScheduler.coresOffered(ts);
  }
}
