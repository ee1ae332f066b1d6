package io.slaqriffle.riffle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What changed between two Riffle models: the shuffle rows that are new or changed, the shuffles the
 * scheduler no longer lists (beyond its latest settled ones; a shuffle Spark cleaned up stays, marked),
 * and the summaries of the shuffles never held, the mergers and the totals (small, sent whole). One is posted on the listener bus per change instead
 * of the whole model (every merging shuffle and the latest finished ones, {@link RiffleBounds}) every second, so the event log
 * grows with the shuffles, not with the application's length, and the History Server's model stays as
 * bounded as the live one. {@code reset} starts from an empty model (when rows were reordered, which the
 * merge scheduler does not do: it lists shuffles in the order it saw them).
 */
record RiffleDelta(boolean reset, double t, List<RiffleMessages.RiffleShuffle> shuffles, List<Integer> removed,
    List<RiffleMessages.RiffleUnmerged> unmerged, List<RiffleMessages.RiffleMerger> mergers, RiffleMessages.RiffleTotals totals) {

  /** The delta from {@code before} to {@code after}, or null when only the time differs (nothing to post). */
  static RiffleDelta between(RiffleMessages.RiffleStatus before, RiffleMessages.RiffleStatus after) {
    Map<Integer, RiffleMessages.RiffleShuffle> old = byShuffle(before.shuffles());
    List<RiffleMessages.RiffleShuffle> changed = new ArrayList<>();
    for (RiffleMessages.RiffleShuffle row : after.shuffles()) {
      if (!row.equals(old.remove(row.shuffle()))) {
        changed.add(row);
      }
    }
    List<Integer> removed = new ArrayList<>(old.keySet());
    if (changed.isEmpty() && removed.isEmpty() && before.unmerged().equals(after.unmerged()) && before.mergers().equals(after.mergers())
        && before.totals().equals(after.totals())) {
      return null;
    }
    RiffleDelta delta = new RiffleDelta(false, after.t(), changed, removed, after.unmerged(), after.mergers(), after.totals());
    return delta.applyTo(before).equals(after) ? delta
        : new RiffleDelta(true, after.t(), after.shuffles(), List.of(), after.unmerged(), after.mergers(), after.totals());
  }

  /** {@code model} with this change applied: changed rows in place, new ones appended, removed ones gone. */
  RiffleMessages.RiffleStatus applyTo(RiffleMessages.RiffleStatus model) {
    Map<Integer, RiffleMessages.RiffleShuffle> rows = reset ? new LinkedHashMap<>() : byShuffle(model.shuffles());
    for (RiffleMessages.RiffleShuffle row : shuffles) {
      rows.put(row.shuffle(), row);
    }
    removed.forEach(rows::remove);
    return new RiffleMessages.RiffleStatus(t, List.copyOf(rows.values()), unmerged, mergers, totals);
  }

  private static Map<Integer, RiffleMessages.RiffleShuffle> byShuffle(List<RiffleMessages.RiffleShuffle> rows) {
    Map<Integer, RiffleMessages.RiffleShuffle> m = new LinkedHashMap<>();
    for (RiffleMessages.RiffleShuffle row : rows) {
      m.put(Objects.requireNonNull(row).shuffle(), row);
    }
    return m;
  }
}
