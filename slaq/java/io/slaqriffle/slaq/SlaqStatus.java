package io.slaqriffle.slaq;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.slaqriffle.seam.Messages;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the SLAQ scheduler decided, epoch by epoch, as the Python loop pushed it ({@code epoch_status}
 * messages, one py4j call per epoch): a bounded window of recent epochs for the UI tab's charts, the
 * last status of every job that left the loop, and one INFO line per epoch in the driver's log4j log
 * (logger {@code io.slaqriffle.slaq.SlaqStatus}). While no job is registered only the first idle epoch is
 * kept and logged. It also keeps, per job, what the application-end summary reports (the latest row's
 * time to target and to 90% of its loss reduction, as Python computed them; core-seconds allocated) and
 * the gauges of SLAQ's metric source. Bounded whatever the application does ({@link SlaqBounds}): each epoch held to
 * its bounds on the way in, at most {@link #MAX_EPOCHS} epochs and no more than {@link SlaqBounds#MAX_WINDOW_BYTES}
 * of them, {@link #MAX_FINISHED} finished jobs and {@link #MAX_TALLIES} jobs' figures.
 */
public final class SlaqStatus {
  private static final Logger LOG = LoggerFactory.getLogger(SlaqStatus.class);
  /** Epochs kept for the charts and the REST JSON (10 minutes at a 1 s epoch). */
  static final int MAX_EPOCHS = 600;
  /** Finished jobs kept for the table; the oldest are dropped first. */
  static final int MAX_FINISHED = 500;
  /** Jobs the summary remembers; the oldest are dropped first. */
  static final int MAX_TALLIES = 2 * MAX_FINISHED;

  private final Deque<SlaqMessages.EpochStatus> history = new ArrayDeque<>();
  private final LinkedHashMap<String, SlaqMessages.JobStatus> finished = new LinkedHashMap<>();
  private final LinkedHashMap<String, Tally> tallies = new LinkedHashMap<>();
  private final AtomicBoolean summarized = new AtomicBoolean();
  private double lastEpochSeconds;
  private long windowBytes; // SlaqBounds.bytes of the retained epochs
  private volatile Consumer<SlaqMessages.EpochStatus> recorded = e -> {};

  /** The model as the History Server keeps it after replaying an event log ({@link SlaqHistory}): everything the tab, JSON and summary read. */
  record Saved(List<SlaqMessages.EpochStatus> history, List<SlaqMessages.JobStatus> finished, List<SavedTally> tallies, double lastEpochSeconds) {}

  /** One job's {@link Tally}, saved. */
  record SavedTally(SlaqMessages.JobStatus last, double coreSeconds) {}

  /** One job over the application: its latest row (its figures) and the cores x seconds allocated to it. */
  private static final class Tally {
    SlaqMessages.JobStatus last;
    double coreSeconds;
  }

  /**
   * Records one epoch ({@code epoch_status} JSON), hands it to {@link #onRecorded}'s consumer (the
   * listener bus, hence the event log) and logs its INFO line.
   */
  public void publish(String epochStatusJson) {
    SlaqMessages.EpochStatus status = SlaqBounds.bounded(Messages.decode(epochStatusJson, SlaqMessages.EpochStatus.class));
    if (record(status)) {
      recorded.accept(status);
      if (LOG.isInfoEnabled()) {
        LOG.info(SlaqLines.epoch(status));
      }
    }
  }

  /** Where each recorded epoch goes besides this model: the listener bus in a driver (by default nowhere). */
  public void onRecorded(Consumer<SlaqMessages.EpochStatus> consumer) {
    recorded = consumer;
  }

  /**
   * Adds one epoch to the model; false when it was an idle epoch
   * that changed nothing. The one path into
   * the model: the live driver's {@link #publish} and the History Server's replay of the event log.
   */
  boolean record(SlaqMessages.EpochStatus logged) {
    SlaqMessages.EpochStatus status = SlaqBounds.bounded(logged); // a replayed event log may be forged or from an older driver
    synchronized (this) {
      SlaqMessages.EpochStatus previous = history.peekLast();
      Set<String> now = new HashSet<>();
      status.jobs().forEach(j -> now.add(j.job()));
      if (previous != null) {
        for (SlaqMessages.JobStatus j : previous.jobs()) {
          if (!now.contains(j.job())) {
            finish(asFinished(j));
          }
        }
      }
      for (SlaqMessages.JobStatus j : status.finished()) {  // the loop's final figures (from the whole history) win over the last epoch's
        if (!now.contains(j.job())) {
          finish(j);
        }
      }
      while (finished.size() > MAX_FINISHED) {
        finished.remove(finished.keySet().iterator().next());
      }
      for (SlaqMessages.JobStatus j : status.jobs()) {
        finished.remove(j.job()); // a name reused by a new job is running again
      }
      if (status.jobs().isEmpty() && (previous == null || previous.jobs().isEmpty())) {
        // idle: one empty epoch marks the end of a busy period; more would only push the charts out of the window.
        // Kept (posted to the event log) only when it brought final rows, so a replay finishes the same jobs.
        return !status.finished().isEmpty();
      }
      tally(previous, status);
      history.addLast(status);
      windowBytes += SlaqBounds.bytes(status);
      while (history.size() > MAX_EPOCHS || (windowBytes > SlaqBounds.MAX_WINDOW_BYTES && history.size() > 1)) {
        windowBytes -= SlaqBounds.bytes(history.removeFirst());
      }
    }
    return true;
  }

  /** Charges each job the cores it held since the previous epoch and keeps its latest row. */
  private void tally(SlaqMessages.EpochStatus previous, SlaqMessages.EpochStatus status) {
    if (previous != null) {
      double dt = Math.max(status.t() - previous.t(), 0.0);
      lastEpochSeconds = dt;
      for (SlaqMessages.JobStatus j : previous.jobs()) {
        tallyOf(j).coreSeconds += j.cores() * dt;
      }
    }
    for (SlaqMessages.JobStatus j : status.jobs()) {
      tallyOf(j).last = j;
    }
  }

  /** The job's tally (a new one starts at {@code row}); the oldest jobs are dropped past {@link #MAX_TALLIES}. */
  private Tally tallyOf(SlaqMessages.JobStatus row) {
    Tally t = tallies.get(row.job());
    if (t == null) {
      t = new Tally();
      t.last = row;
      tallies.put(row.job(), t);
      while (tallies.size() > MAX_TALLIES) {
        tallies.remove(tallies.keySet().iterator().next());
      }
    }
    return t;
  }

  /**
   * What SLAQ did over the application so far: per job its target, time to target and time to 90% of its loss
   * reduction as its latest row has them (the tab's figures, never recomputed here) and its share of all allocated
   * core-seconds; the mean time to 90% over the jobs that have one.
   */
  public synchronized SlaqMessages.SlaqSummary summary() {
    double total = 0;
    for (Tally t : tallies.values()) {
      total += t.coreSeconds;
    }
    List<SlaqMessages.SlaqJobSummary> jobs = new ArrayList<>();
    double sum90 = 0;
    int reached = 0;
    for (Map.Entry<String, Tally> e : tallies.entrySet()) {
      Tally t = e.getValue();
      SlaqMessages.JobStatus j = t.last;
      jobs.add(new SlaqMessages.SlaqJobSummary(e.getKey(), j.target(), j.secondsToTarget(), j.secondsToNinety(), t.coreSeconds,
          total > 0 ? t.coreSeconds / total : 0.0, j.iterations()));
      if (j.secondsToNinety() >= 0) {
        sum90 += j.secondsToNinety();
        reached++;
      }
    }
    return new SlaqMessages.SlaqSummary(jobs, reached, reached > 0 ? sum90 / reached : 0.0);
  }

  /** Logs {@link #summaryText} as one INFO block, once (at application end). */
  public void logSummary() {
    if (summarized.compareAndSet(false, true) && LOG.isInfoEnabled()) {
      LOG.info(summaryText());
    }
  }

  /** {@link #summary} as the application-end block says it. */
  public String summaryText() {
    return SlaqLines.summary(summary());
  }

  /**
   * SLAQ's metric source ({@code slaq.*} under the driver's metrics namespace): jobs by state, the
   * last epoch's length, cores allocated and used and the mean normalized loss, read from the latest
   * epoch when a sink polls (the same numbers as the tab's JSON).
   */
  public MetricRegistry metrics() {
    MetricRegistry r = new MetricRegistry();
    r.register("jobs.waiting", (Gauge<Integer>) () -> countLatest("waiting"));
    r.register("jobs.running", (Gauge<Integer>) () -> countLatest("running"));
    r.register("jobs.finished", (Gauge<Integer>) () -> finishedCount());
    r.register("epoch.seconds", (Gauge<Double>) () -> epochSeconds());
    r.register("cores.allocated", (Gauge<Double>) () -> sumLatest(false));
    r.register("cores.used", (Gauge<Double>) () -> sumLatest(true));
    r.register("normalizedLoss.mean", (Gauge<Double>) () -> meanNormalizedLoss());
    return r;
  }

  private synchronized int countLatest(String state) {
    SlaqMessages.EpochStatus last = history.peekLast();
    return last == null ? 0 : (int) last.jobs().stream().filter(j -> j.state().equals(state)).count();
  }

  private synchronized int finishedCount() {
    return finished.size();
  }

  private synchronized double epochSeconds() {
    return lastEpochSeconds;
  }

  private synchronized double sumLatest(boolean used) {
    SlaqMessages.EpochStatus last = history.peekLast();
    return last == null ? 0.0 : last.jobs().stream().mapToDouble(j -> used ? j.usedCores() : j.cores()).sum();
  }

  /** The mean normalized loss of the jobs that reported a loss in the latest epoch (0 when none did). */
  private synchronized double meanNormalizedLoss() {
    SlaqMessages.EpochStatus last = history.peekLast();
    return last == null ? 0.0 : last.jobs().stream().filter(j -> j.iterations() > 0).mapToDouble(SlaqMessages.JobStatus::normalizedLoss).average().orElse(0.0);
  }

  private void finish(SlaqMessages.JobStatus j) {
    finished.remove(j.job());
    finished.put(j.job(), j);
    tallyOf(j).last = j;
  }

  /** A job that left without final figures from the loop: its last epoch's, with no cores. */
  private static SlaqMessages.JobStatus asFinished(SlaqMessages.JobStatus j) {
    return new SlaqMessages.JobStatus(j.job(), "finished", j.iterations(), j.loss(), j.normalizedLoss(), 0.0, 0.0, 0.0, "ended",
        j.wallSeconds(), j.coreSeconds(), j.secondsToTarget(), j.group(), j.candidate(), j.fold(), j.refit(), j.driverFraction(),
        j.secondsToNinety(), j.target(), j.firstLoss(), j.lossFloor());
  }

  /** This model, to be kept in a History Server's store. */
  synchronized Saved saved() {
    List<SavedTally> kept = new ArrayList<>();
    tallies.values().forEach(t -> kept.add(new SavedTally(t.last, t.coreSeconds)));
    return new Saved(new ArrayList<>(history), new ArrayList<>(finished.values()), kept, lastEpochSeconds);
  }

  /** The model {@code saved} was made from. */
  static SlaqStatus restored(Saved saved) {
    SlaqStatus s = new SlaqStatus();
    saved.history().forEach(e -> {
      s.history.add(e);
      s.windowBytes += SlaqBounds.bytes(e);
    });
    saved.finished().forEach(j -> s.finished.put(j.job(), j));
    for (SavedTally t : saved.tallies()) {
      Tally tally = new Tally();
      tally.last = t.last();
      tally.coreSeconds = t.coreSeconds();
      s.tallies.put(t.last().job(), tally);
    }
    s.lastEpochSeconds = saved.lastEpochSeconds();
    return s;
  }

  /** The last {@code epochs} retained epochs (oldest first) and the finished jobs (oldest first), as one snapshot. */
  public synchronized SlaqMessages.StatusReport report(int epochs) {
    List<SlaqMessages.EpochStatus> all = new ArrayList<>(history);
    List<SlaqMessages.EpochStatus> last = all.subList(Math.max(all.size() - Math.max(epochs, 0), 0), all.size());
    return new SlaqMessages.StatusReport(new ArrayList<>(last), new ArrayList<>(finished.values()), summary());
  }

  /** Every retained epoch. */
  public SlaqMessages.StatusReport report() {
    return report(MAX_EPOCHS);
  }

  /** {@link #report(int)} as a {@code status_report} message (the REST JSON). */
  public String reportJson(int epochs) {
    return Messages.encode(report(epochs));
  }

  public String reportJson() {
    return reportJson(MAX_EPOCHS);
  }

  /** Every job seen in {@code history}, in order of first appearance (the charts' legend order). */
  static List<String> jobOrder(List<SlaqMessages.EpochStatus> history) {
    Map<String, Boolean> seen = new LinkedHashMap<>();
    for (SlaqMessages.EpochStatus e : history) {
      for (SlaqMessages.JobStatus j : e.jobs()) {
        seen.putIfAbsent(j.job(), Boolean.TRUE);
      }
    }
    return new ArrayList<>(seen.keySet());
  }
}
