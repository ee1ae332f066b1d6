package io.slaqriffle.riffle;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.slaqriffle.seam.Announce;
import io.slaqriffle.seam.Messages;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;

/**
 * What Riffle's merge scheduler did, as the Python scheduler last pushed it (one {@code riffle_status}
 * message: shuffles, mergers and application totals). The Riffle tab renders it, its REST JSON is it,
 * Riffle's metric source reads its totals, and at application end its totals are logged as one INFO
 * block (logger {@code io.slaqriffle.SlaqRiffle}). Each change travels on the listener bus as a
 * {@link RiffleDelta}, from which the History Server rebuilds the same model ({@link RiffleHistory}).
 */
public final class RiffleStatus {
  static final RiffleMessages.RiffleStatus EMPTY =
      new RiffleMessages.RiffleStatus(0.0, List.of(), List.of(), List.of(), new RiffleMessages.RiffleTotals(0, 0, 0, 0, Map.of(), 0, Map.of(), 0L, 0L, 0L, 0.0));

  private volatile RiffleMessages.RiffleStatus latest = EMPTY;
  private final AtomicBoolean summarized = new AtomicBoolean();
  private volatile Consumer<RiffleDelta> recorded = d -> {};

  /**
   * Replaces the model ({@code riffle_status} JSON) when anything but its time changed, through the
   * {@link RiffleDelta} it hands to {@link #onRecorded}'s consumer (the listener bus, hence the event
   * log): so {@code t} is when the model last changed, here and in the History Server alike.
   */
  public synchronized void publish(String riffleStatusJson) {
    RiffleDelta delta = RiffleDelta.between(latest, RiffleBounds.bounded(Messages.decode(riffleStatusJson, RiffleMessages.RiffleStatus.class)));
    if (delta != null) {
      record(delta);
      recorded.accept(delta);
    }
  }

  /** Where each change goes besides this model: the listener bus in a driver (by default nowhere). */
  void onRecorded(Consumer<RiffleDelta> consumer) {
    recorded = consumer;
  }

  /**
   * Applies one change: the one path into the model, from the live driver's {@link #publish} and the History Server's replay,
   * held to {@link RiffleBounds} whatever the change says (a logged one may be forged).
   */
  synchronized void record(RiffleDelta delta) {
    latest = RiffleBounds.bounded(delta.applyTo(latest));
  }

  /** The model whose {@link #report} is {@code saved} (the History Server's, kept in its store). */
  static RiffleStatus restored(RiffleMessages.RiffleStatus saved) {
    RiffleStatus s = new RiffleStatus();
    s.latest = RiffleBounds.bounded(saved);
    return s;
  }

  public RiffleMessages.RiffleStatus report() {
    return latest;
  }

  public String reportJson() {
    return Messages.encode(latest);
  }

  /**
   * Logs the totals as one INFO block, once (at application end), on the logger of the products' "on" lines
   * ({@link Announce}): a shell's WARN console (spark-sql's) shows it too, as it shows the "on" line.
   */
  public void logSummary() {
    if (summarized.compareAndSet(false, true)) {
      Announce.line(summaryBlock(latest.totals()));
    }
  }

  /**
   * The application-end block: the shuffles by state, groups merged, fallbacks by cause, blocks saved, bytes merged, time at
   * the gate, and why shuffles the cost model declined were not merged.
   */
  static String summaryBlock(RiffleMessages.RiffleTotals t) {
    int notWorthIt = t.unmerged().getOrDefault(RiffleNames.NOT_WORTH_IT, 0);
    return String.format(Locale.ROOT,
        "Riffle summary: %s; %d groups merged, %d fell back (%s)%n  blocks fetched %d -> %d (%d saved), %d bytes merged%n"
            + "  reducers waited %.3f s at the gate in all%s",
        shuffleCounts(t, ", "), t.groupsMerged(), sum(t.groupsFellBack()), causes(t.groupsFellBack(), RiffleNames.FALLBACK_CAUSES), t.blocksUnmerged(),
        t.blocksMerged(), t.blocksUnmerged() - t.blocksMerged(), t.bytesMerged(), t.gateWaitSeconds(),
        notWorthIt == 0 ? "" : String.format(Locale.ROOT, "%n  %d shuffle(s) not worth merging: the cost model found their reads cheaper "
            + "than merging them on this storage (a fast local disk; see spark.riffle.cost.*), so they ran as plain Spark", notWorthIt));
  }

  /**
   * The shuffles seen and their states, the one wording of the tab's header and the summary at application end, parts
   * joined by {@code sep}: {@code N shuffles seen: M merging, S settled (K with groups merged), U unmerged (cause n, ...)}.
   */
  static String shuffleCounts(RiffleMessages.RiffleTotals t, String sep) {
    int unmerged = sum(t.unmerged());
    return String.format(Locale.ROOT, "%d shuffles seen: %d merging%s%d settled (%d with groups merged)%s%d unmerged%s", t.shuffles(), t.merging(),
        sep, t.settled(), t.merged(), sep, unmerged, unmerged == 0 ? "" : " (" + causes(t.unmerged(), RiffleNames.NOT_HELD_CAUSES) + ")");
  }

  static int sum(Map<String, Integer> counts) {
    return counts.values().stream().mapToInt(Integer::intValue).sum();
  }

  /** {@code cause n, ...} in {@code order} (the schema's), causes with none left out ("none" when all are). */
  static String causes(Map<String, Integer> byCause, List<String> order) {
    StringBuilder b = new StringBuilder();
    for (String cause : order) {
      int n = byCause.getOrDefault(cause, 0);
      if (n > 0) {
        b.append(b.length() == 0 ? "" : ", ").append(cause.replace('_', ' ')).append(' ').append(n);
      }
    }
    return b.length() == 0 ? "none" : b.toString();
  }

  /**
   * Riffle's metric source ({@code riffle.*} under the driver's metrics namespace), read from the
   * latest totals when a sink polls (the same numbers as {@code totals} in the tab's JSON): shuffles seen and
   * by state ({@code shuffles.merging}, {@code .settled}, {@code .merged}, {@code .unmerged.<cause>}), merges by
   * outcome ({@code merges.merged}, {@code merges.fellBack.<cause>}), bytes merged, blocks fetched
   * saved, and the reducers' total wait at the gate.
   */
  public MetricRegistry metrics() {
    MetricRegistry r = new MetricRegistry();
    gauge(r, "shuffles", t -> t.shuffles());
    gauge(r, "shuffles.merging", t -> t.merging());
    gauge(r, "shuffles.settled", t -> t.settled());
    gauge(r, "shuffles.merged", t -> t.merged());
    for (String cause : RiffleNames.NOT_HELD_CAUSES) {
      gauge(r, "shuffles.unmerged." + cause, t -> t.unmerged().getOrDefault(cause, 0));
    }
    gauge(r, "merges.merged", t -> t.groupsMerged());
    for (String cause : RiffleNames.FALLBACK_CAUSES) {
      gauge(r, "merges.fellBack." + cause, t -> t.groupsFellBack().getOrDefault(cause, 0));
    }
    gauge(r, "bytes.merged", t -> t.bytesMerged());
    gauge(r, "blocks.unmerged", t -> t.blocksUnmerged());
    gauge(r, "blocks.merged", t -> t.blocksMerged());
    gauge(r, "blocks.saved", t -> t.blocksUnmerged() - t.blocksMerged());
    gauge(r, "gate.waitSeconds", RiffleMessages.RiffleTotals::gateWaitSeconds);
    return r;
  }

  private void gauge(MetricRegistry r, String name, ToDoubleFunction<RiffleMessages.RiffleTotals> value) {
    r.register(name, (Gauge<Double>) () -> value.applyAsDouble(latest.totals()));
  }
}
