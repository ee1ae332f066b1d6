package io.slaqriffle.riffle;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.slaqriffle.seam.Backstop;
import io.slaqriffle.seam.Feature;
import io.slaqriffle.seam.Features;
import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.Outbox;
import io.slaqriffle.seam.Shim;
import io.slaqriffle.seam.ShimClock;
import io.slaqriffle.seam.SparkHooks;
import io.slaqriffle.seam.SparkLocalDirs;
import io.slaqriffle.seam.SparkScheduler;
import io.slaqriffle.seam.StatusTab;
import io.slaqriffle.seam.TabEvent;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntSupplier;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What Riffle's Python merge scheduler calls in the driver JVM, a few coarse calls per poll:
 * {@link #drain} the events ({@link RiffleListener}), {@link #hold} the reducers of shuffles worth merging,
 * {@link #commit} finished merges ({@link MapStatusCommit}) and {@link #release} the held reducers ({@link ReducerGate},
 * installed through {@link GateRootPool}), and look up executors' {@link #localDirs}. When the
 * self-check of {@link Features} finds the running Spark changed, merging is off (every shuffle
 * is reported unmerged with the reason) and nothing else changes.
 */
public final class RiffleTracker implements Shim.FailOpen {
  /** Events kept for a scheduler that stopped draining; older ones are dropped. */
  static final int MAX_PENDING_EVENTS = 65_536;
  /** The Riffle tab's prefix in the Spark UI, and its events' {@code tab} in the event log. */
  static final String TAB = "riffle";
  private static final Logger LOG = LoggerFactory.getLogger(RiffleTracker.class);

  private final SparkContext sc;
  private final TaskSchedulerImpl ts; // null when GATE is off (then nothing is held or committed)
  private final ShimClock clock = ShimClock.SYSTEM;
  private final StageGraph graph = new StageGraph();
  private final ReducerGate gate;
  private final RiffleListener listener;
  private final String unavailable;
  private final RiffleStatus status = new RiffleStatus();
  private final Outbox<Messages.Message> events = new Outbox<>(MAX_PENDING_EVENTS);
  private volatile boolean merging = true;
  private volatile boolean holdAll = false;
  /** A hold reached its deadline without the scheduler deciding: no new shuffle is merged until it drains again. */
  private volatile boolean stalled = false;

  /** The features merging needs; CLEANER only tells when a shuffle's merged files can go. */
  private static final Set<Feature> MERGING = EnumSet.of(Feature.GATE, Feature.COMMIT, Feature.LOCAL_DIRS);

  private RiffleTracker(SparkContext sc) {
    this.sc = sc;
    Map<Feature, String> missing = Features.selfCheck(sc, EnumSet.of(Feature.GATE, Feature.COMMIT, Feature.LOCAL_DIRS, Feature.CLEANER,
        Feature.SKEW_SPLITS, Feature.UI_TAB, Feature.METRICS, Feature.EVENT_LOG));
    missing.keySet().retainAll(MERGING);
    String why = missing.isEmpty() ? null : "Spark internals changed (" + missing + ")";
    this.ts = missing.containsKey(Feature.GATE) ? null : SparkScheduler.taskScheduler(sc);
    this.gate = new ReducerGate(ts, graph);
    this.listener = new RiffleListener(sc, this, graph, gate, clock);
    if (why == null) {
      try {
        synchronized (ts) {
          Pool old = SparkScheduler.rootPool(ts);
          if (!(old instanceof GateRootPool)) {
            SparkScheduler.replaceRootPool(ts, new GateRootPool(old.schedulingMode(), gate, clock, old));
          }
        }
      } catch (RuntimeException e) {
        why = "could not install the reducer gate: " + e;
        LOG.warn("Riffle: {}; shuffles run unmerged (plain Spark)", why);
      }
    }
    this.unavailable = why;
    sc.addSparkListener(listener);
    SparkHooks.attachCleanerListener(sc, listener);
    SparkHooks.attachTab(sc, ui -> new StatusTab<>(ui, RifflePage.VIEW, status));
    status.onRecorded(delta -> SparkHooks.postEvent(sc, TabEvent.of(TAB, delta)));
    MetricRegistry metrics = status.metrics();
    gauge(metrics, "driver.shufflesHeld", this::heldShuffles);
    gauge(metrics, "driver.shufflesTracked", this::trackedShuffles);
    gauge(metrics, "driver.stagesTracked", this::trackedStages);
    gauge(metrics, "driver.eventsPending", this::pendingEvents);
    SparkHooks.registerSource(sc, "riffle", metrics);
  }

  private static void gauge(MetricRegistry r, String name, IntSupplier value) {
    r.register(name, (Gauge<Double>) () -> (double) value.getAsInt());
  }

  /** The tracker of {@code sc}, created (and its listener registered) on first use; the Python bridge calls this. */
  public static RiffleTracker attach(SparkContext sc) {
    return Shim.install(sc).component(RiffleTracker.class, RiffleTracker::new);
  }

  // ---------------------------------------------------------------- called from Python
  /**
   * Merge new shuffles or not, the shim's own hold timeout, and whether every mergeable shuffle is held from its map
   * stage's submission ({@code holdAll}: the driver merges every group, so no map stage may outrun its decision) or
   * only those the driver asks {@link #hold} for.
   */
  public void configure(boolean merging, double holdTimeoutSeconds, boolean holdAll) {
    this.merging = merging;
    this.holdAll = holdAll;
    gate.setTimeout(holdTimeoutSeconds);
    listener.sendDirsAgain(); // a scheduler (re)starting or reconfigured learns every executor's dirs with its next output
  }

  /** Replaces what the Riffle tab, its JSON, the metrics and the application-end summary show ({@code riffle_status} JSON). */
  public void publishStatus(String riffleStatusJson) {
    status.publish(riffleStatusJson);
  }

  /** The latest {@code riffle_status} message (the tab's JSON). */
  public String statusJson() {
    return status.reportJson();
  }

  /**
   * The merge scheduler is gone (its process died): no new shuffle is held and every held one is
   * released now, so its reducers read the original map files. Commits already applied stay (each
   * was atomic and is read like any map output).
   */
  @Override
  public void failOpen(String reason) {
    merging = false;
    List<Integer> released = gate.releaseAll();
    for (int shuffle : released) {
      listener.forget(shuffle);
    }
    LOG.warn("Riffle: merging stopped ({}); {} held shuffle(s) released, later shuffles run unmerged", reason, released.size());
    if (ts != null) {
      SparkScheduler.reviveOffers(ts);
    }
  }

  // ---------------------------------------------------------------- the driver's own state (the driver.* gauges)
  /** Shuffles whose reducers the gate holds now. */
  public int heldShuffles() {
    return gate.heldCount();
  }

  /** Mergeable shuffles this driver tracks until the merge scheduler settles them (their reducers' partitions). */
  public int trackedShuffles() {
    return listener.tracked();
  }

  /** Entries of the stage graph: the running jobs' stages and the shuffles they write and read (none once all ended). */
  public int trackedStages() {
    return graph.size();
  }

  /** Events queued for the merge scheduler, not drained yet (bounded: the oldest dropped past {@code MAX_PENDING_EVENTS}). */
  public int pendingEvents() {
    return events.pending();
  }

  /** Why merging cannot work on this Spark, or null when it can. */
  public String unavailableReason() {
    return unavailable;
  }

  /**
   * Everything that happened since the last call, as a JSON list of {@link Messages}. Holds whose
   * deadline passed end here or when it passes (a {@code hold_expired} each), not inside the scheduler's sort.
   */
  public String drain() {
    expireDue(true);
    if (stalled) {
      stalled = false;
      LOG.info("Riffle: the merge scheduler answers again; new shuffles may be merged again");
    }
    return Messages.encode(events.drain());
  }

  /**
   * Ends the holds whose deadline passed and lets their reducers run, whether or not Python drains ({@code drained}: the
   * scheduler is draining now). The scheduler settles every hold {@code HOLD_MARGIN} before its deadline here, so a
   * deadline the backstop meets means it stopped deciding, whatever its heartbeat says: it is treated like a stopped brain
   * (every hold released, one WARN) until it drains again, so later shuffles do not each wait out a hold of their own.
   */
  private void expireDue(boolean drained) {
    List<Integer> expired = gate.expire(clock.nanoTime());
    if (!expired.isEmpty() && !drained && !stalled) {
      stalled = true;
      List<Integer> held = gate.releaseAll();
      LOG.warn("Riffle: the merge scheduler made no decision on shuffle(s) {} by their hold deadline, so it has stalled; "
          + "{} other held shuffle(s) released, and later shuffles run unmerged until it answers again", expired, held.size());
      expired.addAll(held);
    } else {
      for (int shuffle : expired) {
        LOG.warn("Riffle: merges of shuffle {} did not finish in time; its reducers read the original files", shuffle);
      }
    }
    for (int shuffle : expired) {
      listener.forget(shuffle);
      emit(new RiffleMessages.HoldExpired(shuffle));
    }
    if (!expired.isEmpty() && ts != null) {
      SparkScheduler.reviveOffers(ts);
    }
  }

  /** A hold now ends at {@code deadline} (nanos on the tracker's clock): it is expired then even if Python stopped draining. */
  void expireAt(long deadline) {
    Backstop.after(deadline - clock.nanoTime() + 1_000_000L, () -> expireDue(false));
  }

  /**
   * Holds a mergeable shuffle's reducers (and, until their stages are known, any stage that may read it) until
   * {@link #release}, a commit, or the hold timeout after its map stage. The driver asks only for shuffles whose
   * merges can pay, so nothing waits for one that cannot. False when it cannot be held (no longer mergeable,
   * Riffle not merging, or a reader already running): its reducers then read the original files.
   */
  public boolean hold(int shuffle) {
    return unavailable == null && merging && listener.hold(shuffle);
  }

  /** Lets the shuffle's reducers run (after a commit, or when merging is abandoned). */
  public void release(int shuffle) {
    if (listener.forget(shuffle) && ts != null) {
      SparkScheduler.reviveOffers(ts);
    }
  }

  /**
   * Applies a {@code commit} message: each group's statuses point at its merged file, atomically per
   * shuffle. Returns the number of groups committed, or -1 when the shuffle's readers are no longer
   * held or already launched (nothing is changed then).
   */
  public int commit(String commitJson) {
    RiffleMessages.Commit commit = Messages.decode(commitJson, RiffleMessages.Commit.class);
    if (unavailable != null) {
      return -1;
    }
    SkewSplits.Conf skew = SkewSplits.Conf.read(sc);
    synchronized (ts) {
      if (!gate.isHeld(commit.shuffle(), clock.nanoTime()) || gate.readerLaunched(commit.shuffle())) {
        return -1;
      }
      return MapStatusCommit.apply(commit, listener.partitions(commit.shuffle()), skew);
    }
  }

  /** The executor's ordered blockmgr dirs as the block manager master recorded them (empty when unknown). */
  public String[] localDirs(String executorId) {
    return SparkLocalDirs.localDirs(sc, executorId);
  }

  public String applicationId() {
    return sc.applicationId();
  }

  /**
   * {@link #localDirs} for the listener: empty while unknown; null when they cannot be read (Spark's internals changed; the
   * driver's own lookup then says why).
   */
  List<String> localDirsOf(String executorId) {
    try {
      return List.of(localDirs(executorId));
    } catch (RuntimeException e) {
      LOG.debug("Riffle: cannot read the local dirs of executor {}", executorId, e);
      return null;
    }
  }

  // ---------------------------------------------------------------- for the listener
  void applicationEnded() {
    status.logSummary();
  }

  /** Whether new shuffles may be merged: Riffle merging, and its scheduler deciding (not stalled). */
  boolean merging() {
    return merging && !stalled;
  }

  boolean holdAll() {
    return holdAll;
  }

  void emit(Messages.Message m) {
    events.add(m);
  }
}
