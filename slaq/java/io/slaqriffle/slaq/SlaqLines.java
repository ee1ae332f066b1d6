package io.slaqriffle.slaq;

import io.slaqriffle.seam.Html;
import io.slaqriffle.seam.Words;
import java.util.Locale;

/**
 * The lines SLAQ writes to the driver's log ({@link SlaqStatus}'s logger): one per epoch and the
 * application-end summary block, and the figure formats the tab shares with them. Names are made inert
 * ({@link Html#plain}) and counted past a bound, so one line stays one line whatever jobs are called.
 */
final class SlaqLines {
  /** Jobs named in one log line; the rest are counted. */
  static final int LOG_JOBS = 8;
  /** Jobs named in the summary block; the rest are counted. */
  static final int SUMMARY_JOBS = 20;

  private SlaqLines() {}

  /** The application-end block: the mean time to 90%, then each job's time to target, time to 90% and share of the allocations. */
  static String summary(SlaqMessages.SlaqSummary s) {
    int targets = 0;
    int reachedTargets = 0;
    for (SlaqMessages.SlaqJobSummary j : s.jobs()) {
      targets += j.target().isEmpty() ? 0 : 1;
      reachedTargets += j.secondsToTarget() >= 0 ? 1 : 0;
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
        "SLAQ summary: %s, %s; mean time to 90%% of the loss reduction: %s (%s)", Words.counted(s.jobs().size(), "job"),
        targets == 0 ? "no targets" : String.format(Locale.ROOT, "%d of %s reached", reachedTargets, Words.counted(targets, "target")),
        seconds(s.reachedNinety() > 0 ? s.meanSecondsToNinety() : -1, "n/a"), Words.counted(s.reachedNinety(), "job")));
    int shown = 0;
    for (SlaqMessages.SlaqJobSummary j : s.jobs()) {
      if (shown++ == SUMMARY_JOBS) {
        b.append(String.format(Locale.ROOT, "%n  ... %s", Words.counted(s.jobs().size() - SUMMARY_JOBS, "more job")));
        break;
      }
      String target = j.target().isEmpty() ? "no target" : "time to target (" + Html.plain(j.target()) + ") " + seconds(j.secondsToTarget(), "not reached");
      // a job that reported no loss has no reduction to reach 90% of: say so, not that it fell short
      String ninety = j.iterations() == 0 ? "no loss reported" : "time to 90% " + seconds(j.secondsToNinety(), "not reached");
      b.append(String.format(Locale.ROOT, "%n  %s: %s, %s, %.1f core-seconds allocated (%.1f%% of all)", Html.plain(j.job()),
          target, ninety, j.coreSeconds(), 100 * j.share()));
    }
    return b.toString();
  }

  /** A figure in seconds, or {@code none} for one a job does not have (-1). */
  static String seconds(double value, String none) {
    return value >= 0 ? String.format(Locale.ROOT, "%.1f s", value) : none;
  }

  /** The driver log's line for one epoch: totals, then each job's iterations, losses, gain and cores. */
  static String epoch(SlaqMessages.EpochStatus s) {
    double allocated = 0;
    double used = 0;
    for (SlaqMessages.JobStatus j : s.jobs()) {
      allocated += j.cores();
      used += j.usedCores();
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
        "SLAQ epoch %d (t=%.1fs, policy %s): %s, cores allocated %.2f / used %.2f of %.0f",
        s.epoch(), s.t(), Html.plain(s.policy()), jobCount(s), allocated, used, s.capacity()));
    int shown = 0;
    for (SlaqMessages.JobStatus j : s.jobs()) {
      if (shown++ == LOG_JOBS) {
        b.append(String.format(Locale.ROOT, "; ... %d more", s.jobs().size() - LOG_JOBS));
        break;
      }
      boolean reported = j.iterations() > 0; // a waiting job has no loss yet, so none to normalize
      b.append(String.format(Locale.ROOT, "; %s [%s] it=%d loss=%s norm=%s gain=%.3f cores=%.2f/%.2f (%s)",
          Html.plain(j.job()), Html.plain(j.state()), j.iterations(), reported ? String.format(Locale.ROOT, "%.4g", j.loss()) : "-",
          reported ? String.format(Locale.ROOT, "%.3f", j.normalizedLoss()) : "-", j.predictedGain(), j.cores(), j.usedCores(),
          Html.plain(j.why())));
    }
    return b.toString();
  }

  /** "N jobs", or for an epoch at {@link SlaqBounds#MAX_EPOCH_JOBS} that more may be running than it lists. */
  static String jobCount(SlaqMessages.EpochStatus s) {
    return s.jobs().size() < SlaqBounds.MAX_EPOCH_JOBS ? Words.counted(s.jobs().size(), "job")
        : String.format(Locale.ROOT, "%d jobs listed (the longest-running; more may be running)", s.jobs().size());
  }
}
