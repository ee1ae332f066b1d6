package io.slaqriffle.slaq;

import io.slaqriffle.seam.Messages;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the SLAQ scheduler decided, epoch by epoch, as the Python loop pushed it ({@code epoch_status}
 * messages, one py4j call per epoch): a bounded window of recent epochs for the UI tab's charts, the
 * last status of every job that left the loop, and one INFO line per epoch in the driver's log4j log
 * (logger {@code io.slaqriffle.slaq.SlaqStatus}). While no job is registered only the first idle epoch is
 * kept and logged.
 */
public final class SlaqStatus {
  private static final Logger LOG = LoggerFactory.getLogger(SlaqStatus.class);
  /** Epochs kept for the charts and the REST JSON (10 minutes at a 1 s epoch). */
  static final int MAX_EPOCHS = 600;
  /** Finished jobs kept for the table; the oldest are dropped first. */
  static final int MAX_FINISHED = 500;
  /** Jobs named in one log line; the rest are counted. */
  static final int LOG_JOBS = 8;

  private final Deque<Messages.EpochStatus> history = new ArrayDeque<>();
  private final LinkedHashMap<String, Messages.JobStatus> finished = new LinkedHashMap<>();

  /** Records one epoch ({@code epoch_status} JSON) and logs its INFO line. */
  public void publish(String epochStatusJson) {
    Messages.EpochStatus status = Messages.decode(epochStatusJson, Messages.EpochStatus.class);
    synchronized (this) {
      Messages.EpochStatus previous = history.peekLast();
      if (status.jobs().isEmpty() && (previous == null || previous.jobs().isEmpty())) {
        return; // idle: one empty epoch marks the end of a busy period; more would only push the charts out of the window
      }
      if (previous != null) {
        Set<String> now = new HashSet<>();
        status.jobs().forEach(j -> now.add(j.job()));
        for (Messages.JobStatus j : previous.jobs()) {
          if (!now.contains(j.job())) {
            finished.remove(j.job());
            finished.put(j.job(), asFinished(j));
          }
        }
        while (finished.size() > MAX_FINISHED) {
          finished.remove(finished.keySet().iterator().next());
        }
      }
      for (Messages.JobStatus j : status.jobs()) {
        finished.remove(j.job()); // a name reused by a new job is running again
      }
      history.addLast(status);
      while (history.size() > MAX_EPOCHS) {
        history.removeFirst();
      }
    }
    if (LOG.isInfoEnabled()) {
      LOG.info(logLine(status));
    }
  }

  private static Messages.JobStatus asFinished(Messages.JobStatus j) {
    return new Messages.JobStatus(j.job(), "finished", j.iterations(), j.loss(), j.normalizedLoss(), 0.0, 0.0, 0.0);
  }

  /** The last {@code epochs} retained epochs (oldest first) and the finished jobs (oldest first), as one snapshot. */
  public synchronized Messages.StatusReport report(int epochs) {
    List<Messages.EpochStatus> all = new ArrayList<>(history);
    List<Messages.EpochStatus> last = all.subList(Math.max(all.size() - Math.max(epochs, 0), 0), all.size());
    return new Messages.StatusReport(new ArrayList<>(last), new ArrayList<>(finished.values()));
  }

  /** Every retained epoch. */
  public Messages.StatusReport report() {
    return report(MAX_EPOCHS);
  }

  /** {@link #report(int)} as a {@code status_report} message (the REST JSON). */
  public String reportJson(int epochs) {
    return Messages.encode(report(epochs));
  }

  public String reportJson() {
    return reportJson(MAX_EPOCHS);
  }

  /** The driver log's line for one epoch: totals, then each job's iterations, losses, gain and cores. */
  static String logLine(Messages.EpochStatus s) {
    double allocated = 0;
    double used = 0;
    for (Messages.JobStatus j : s.jobs()) {
      allocated += j.cores();
      used += j.usedCores();
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
        "SLAQ epoch %d (t=%.1fs, policy %s): %d jobs, cores allocated %.2f / used %.2f of %.0f",
        s.epoch(), s.t(), s.policy(), s.jobs().size(), allocated, used, s.capacity()));
    int shown = 0;
    for (Messages.JobStatus j : s.jobs()) {
      if (shown++ == LOG_JOBS) {
        b.append(String.format(Locale.ROOT, "; ... %d more", s.jobs().size() - LOG_JOBS));
        break;
      }
      b.append(String.format(Locale.ROOT, "; %s [%s] it=%d loss=%.4g norm=%.3f gain=%.3f cores=%.2f/%.2f",
          j.job(), j.state(), j.iterations(), j.loss(), j.normalizedLoss(), j.predictedGain(), j.cores(), j.usedCores()));
    }
    return b.toString();
  }

  /** Every job seen in {@code history}, in order of first appearance (the charts' legend order). */
  static List<String> jobOrder(List<Messages.EpochStatus> history) {
    Map<String, Boolean> seen = new LinkedHashMap<>();
    for (Messages.EpochStatus e : history) {
      for (Messages.JobStatus j : e.jobs()) {
        seen.putIfAbsent(j.job(), Boolean.TRUE);
      }
    }
    return new ArrayList<>(seen.keySet());
  }
}
