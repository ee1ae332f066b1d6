package io.slaqriffle.riffle;

import java.util.ArrayList;
import java.util.List;

/**
 * What the Riffle tab's model may hold: every merging shuffle and the latest {@link #MAX_FINISHED} finished ones (settled),
 * in the order seen, as the merge scheduler lists them ({@code riffle.driver.tab_rows}, from the same schema constants), and
 * one summary per cause of the shuffles never held, each naming the latest {@link #MAX_LATEST} of them. The live model gets
 * no more from the scheduler; an event log the History Server replays may say anything (it may be forged), so the model is
 * held to it there too, by this one function.
 */
final class RiffleBounds {
  /** Finished rows listed: the schema's {@code names.max_finished_shuffles}. */
  static final int MAX_FINISHED = RiffleNames.MAX_FINISHED_SHUFFLES;
  /** Shuffle ids a summary of the shuffles never held names: the schema's {@code names.max_unmerged_latest}. */
  static final int MAX_LATEST = RiffleNames.MAX_UNMERGED_LATEST;
  /** Summaries of the shuffles never held: one per cause. */
  static final int MAX_SUMMARIES = RiffleNames.NOT_HELD_CAUSES.size();
  private static final String MERGING = "merging";

  private RiffleBounds() {}

  /** {@code s} held to the bounds; itself when it was within them (no copy). */
  static RiffleMessages.RiffleStatus bounded(RiffleMessages.RiffleStatus s) {
    List<RiffleMessages.RiffleShuffle> rows = rows(s.shuffles());
    List<RiffleMessages.RiffleUnmerged> unmerged = unmerged(s.unmerged());
    if (rows == s.shuffles() && unmerged == s.unmerged()) {
      return s;
    }
    return new RiffleMessages.RiffleStatus(s.t(), rows, unmerged, s.mergers(), s.totals());
  }

  /** {@code rows} with only the latest {@link #MAX_FINISHED} finished ones; itself when it had no more. */
  private static List<RiffleMessages.RiffleShuffle> rows(List<RiffleMessages.RiffleShuffle> rows) {
    int finished = 0;
    for (RiffleMessages.RiffleShuffle row : rows) {
      finished += MERGING.equals(row.state()) ? 0 : 1;
    }
    if (finished <= MAX_FINISHED) {
      return rows;
    }
    int drop = finished - MAX_FINISHED; // the earliest seen go first
    List<RiffleMessages.RiffleShuffle> kept = new ArrayList<>(rows.size() - drop);
    for (RiffleMessages.RiffleShuffle row : rows) {
      if (drop > 0 && !MERGING.equals(row.state())) {
        drop--;
      } else {
        kept.add(row);
      }
    }
    return List.copyOf(kept);
  }

  /** The first {@link #MAX_SUMMARIES} summaries, each naming its latest {@link #MAX_LATEST} ids; itself when within them. */
  private static List<RiffleMessages.RiffleUnmerged> unmerged(List<RiffleMessages.RiffleUnmerged> summaries) {
    boolean within = summaries.size() <= MAX_SUMMARIES;
    for (RiffleMessages.RiffleUnmerged u : summaries) {
      within &= u.latest().size() <= MAX_LATEST;
    }
    if (within) {
      return summaries;
    }
    List<RiffleMessages.RiffleUnmerged> kept = new ArrayList<>();
    for (RiffleMessages.RiffleUnmerged u : summaries.subList(0, Math.min(summaries.size(), MAX_SUMMARIES))) {
      List<Integer> latest = u.latest().subList(Math.max(u.latest().size() - MAX_LATEST, 0), u.latest().size());
      kept.add(new RiffleMessages.RiffleUnmerged(u.cause(), u.shuffles(), List.copyOf(latest), u.stage(), u.name(), u.reason()));
    }
    return List.copyOf(kept);
  }
}
