package io.slaqriffle.riffle;

import io.slaqriffle.seam.Html;
import io.slaqriffle.seam.TabPage;
import io.slaqriffle.seam.TabView;
import io.slaqriffle.seam.Words;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Riffle tab's page content, at {@code /riffle/} (HTML: totals, shuffles, mergers and the chart of
 * blocks saved) and {@code /riffle/json/} (the {@code riffle_status} message). {@link #html} is a pure
 * function of the model; the seam's {@link TabView} serves it.
 */
final class RifflePage {
  /** Shuffles drawn in the chart (the latest ones); the table shows every shuffle the model lists. */
  static final int CHART_SHUFFLES = 60;
  /** The Riffle tab over its {@link RiffleStatus}, in the live UI and the History Server alike. */
  static final TabView<RiffleStatus> VIEW = new TabView<>(RiffleTracker.TAB, "Riffle",
      (status, jsonUrl, refreshSeconds) -> html(status.report(), jsonUrl, refreshSeconds), (status, request) -> status.reportJson());

  /** A cleaned shuffle's mark in its state cell: words, not a colour. */
  private static final String CLEANED =
      " <span class=\"riffle-cleaned badge text-bg-secondary\" title=\"Spark cleaned this shuffle up; what happened to it stays listed\">cleaned</span>";

  private RifflePage() {}

  static String html(RiffleMessages.RiffleStatus s, String jsonUrl, int refreshSeconds) {
    RiffleMessages.RiffleTotals t = s.totals();
    StringBuilder b = new StringBuilder("<div id=\"riffle\">");
    b.append(String.format(Locale.ROOT,
        "<p id=\"riffle-summary\">%s &middot; %d groups merged, %d fell back (%s) &middot; blocks fetched %d &rarr; %d "
            + "(%d saved) &middot; %s merged &middot; reducers waited %.3f s at the gate &middot; %s</p>",
        RiffleStatus.shuffleCounts(t, " &middot; "), t.groupsMerged(), RiffleStatus.sum(t.groupsFellBack()),
        RiffleStatus.causes(t.groupsFellBack(), RiffleNames.FALLBACK_CAUSES), t.blocksUnmerged(), t.blocksMerged(),
        t.blocksUnmerged() - t.blocksMerged(), bytes(t.bytesMerged()), t.gateWaitSeconds(), TabPage.summaryLinks(jsonUrl)));
    b.append(TabPage.reloadScript(refreshSeconds));
    long cleaned = s.shuffles().stream().filter(RiffleMessages.RiffleShuffle::cleaned).count();
    b.append(String.format(Locale.ROOT, "<p id=\"riffle-listed\">Listed below: %d of the %d shuffles seen (every merging one and the latest "
        + "settled ones, in the order seen), %d of them cleaned up by Spark since: a cleaned shuffle keeps its row and outcome. "
        + "%s never held %s counted by cause in the table after it, not listed.</p>",
        s.shuffles().size(), t.shuffles(), cleaned, Words.counted(RiffleStatus.sum(t.unmerged()), "shuffle"),
        RiffleStatus.sum(t.unmerged()) == 1 ? "is" : "are"));
    b.append(Html.tableStart("Shuffles", "riffle-shuffles"))
        .append("<th>Shuffle</th><th>Stage</th><th>Maps</th><th>Reducers</th><th>Merge policy</th><th>State</th><th>Groups merged</th>")
        .append("<th title=\"groups left unmerged, by cause\">Groups fell back</th>");
    b.append("<th>Bytes merged</th><th title=\"blocks a reducer fetches without merging\">Blocks unmerged</th>")
        .append("<th title=\"blocks a reducer fetches with the merged files\">Blocks merged</th>")
        .append("<th title=\"from the end of the map stage to the reducers' release\">Gate wait (s)</th>")
        .append("<th title=\"why the reducers were released, or why they were never held\">Why</th>").append(Html.HEAD_END);
    for (RiffleMessages.RiffleShuffle r : s.shuffles()) {
      b.append(String.format(Locale.ROOT,
          "<tr class=\"riffle-shuffle\" data-shuffle=\"%d\" data-state=\"%s\" data-cleaned=\"%b\"><td>%d</td>"
              + "<td style=\"overflow-wrap:anywhere\">%d: %s</td><td>%d</td><td>%d</td><td>%s</td><td>%s%s</td><td>%d</td><td>%s</td>",
          r.shuffle(), Html.escape(r.state()), r.cleaned(), r.shuffle(), r.stage(), Html.name(r.name()), r.maps(), r.reducers(),
          Html.escape(r.policy()), Html.escape(r.state()), r.cleaned() ? CLEANED : "", r.groupsMerged(), fellBack(r.groupsFellBack())));
      b.append(String.format(Locale.ROOT, "<td>%s</td><td>%d</td><td>%d</td><td>%.3f</td><td style=\"overflow-wrap:anywhere\">%s%s</td></tr>",
          bytes(r.bytesMerged()), r.blocksUnmerged(), r.blocksMerged(), r.gateWaitSeconds(), Html.escape(r.reason()),
          r.unmergedWhy().isEmpty() ? "" : "<br><span class=\"riffle-outputs-unmerged\">" + Html.escape(r.unmergedWhy()) + "</span>"));
    }
    b.append("</tbody></table>");
    b.append(neverHeld(s.unmerged()));
    b.append(Html.tableStart("Mergers", "riffle-mergers"))
        .append("<th>Merger</th><th>Health</th><th>Queued</th><th>Running</th><th>Merges done</th><th>Failed</th><th>Cancelled</th>")
        .append(Html.HEAD_END);
    for (RiffleMessages.RiffleMerger m : s.mergers()) {
      b.append(String.format(Locale.ROOT,
          "<tr class=\"riffle-merger\" data-merger=\"%s\"><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>",
          Html.escape(m.address()), Html.escape(m.address()), Html.escape(m.health()), m.queued(), m.running(), m.mergesDone(),
          m.mergesFailed(), m.mergesCancelled()));
    }
    b.append("</tbody></table><h4>Blocks fetched saved per shuffle</h4>").append(savedChart(s.shuffles())).append("</div>");
    return b.toString();
  }

  /**
   * The shuffles never held, one row per cause: how many, the latest ids and the latest one's stage and why. An application's
   * own tiny shuffles may all be such (spark.ml's of JVM objects are unsafe to merge); one row each, they would bury the rest.
   */
  static String neverHeld(List<RiffleMessages.RiffleUnmerged> summaries) {
    StringBuilder b = new StringBuilder(Html.tableStart("Shuffles never held, by cause", "riffle-unmerged"))
        .append("<th>Cause</th><th>Shuffles</th><th title=\"the ids of the latest, oldest first\">Latest</th>")
        .append("<th title=\"the latest one's map stage\">Latest stage</th><th title=\"why the latest one was never held\">Why</th>")
        .append(Html.HEAD_END);
    for (RiffleMessages.RiffleUnmerged u : summaries) {
      StringBuilder latest = new StringBuilder();
      for (int id : u.latest()) {
        latest.append(latest.length() == 0 ? "" : ", ").append(id);
      }
      b.append(String.format(Locale.ROOT,
          "<tr class=\"riffle-unmerged\" data-cause=\"%s\" data-shuffles=\"%d\"><td>%s</td><td>%d</td><td>%s</td>"
              + "<td style=\"overflow-wrap:anywhere\">%d: %s</td><td style=\"overflow-wrap:anywhere\">%s</td></tr>",
          Html.escape(u.cause()), u.shuffles(), Html.escape(u.cause().replace('_', ' ')), u.shuffles(), latest, u.stage(), Html.name(u.name()),
          Html.escape(u.reason())));
    }
    return b.append("</tbody></table>").toString();
  }

  /** One bar per shuffle (the latest {@link #CHART_SHUFFLES}): blocks its reducers did not fetch thanks to merging. */
  static String savedChart(List<RiffleMessages.RiffleShuffle> shuffles) {
    List<RiffleMessages.RiffleShuffle> shown = shuffles.subList(Math.max(shuffles.size() - CHART_SHUFFLES, 0), shuffles.size());
    int width = 900;
    int height = 220;
    int left = 60;
    int bottom = 30;
    int top = 10;
    long max = 1;
    for (RiffleMessages.RiffleShuffle r : shown) {
      max = Math.max(max, r.blocksUnmerged() - r.blocksMerged());
    }
    double slot = shown.isEmpty() ? 0 : (double) (width - left - 10) / shown.size();
    double plot = height - top - bottom;
    StringBuilder svg = new StringBuilder(String.format(Locale.ROOT,
        "<svg id=\"riffle-saved-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" "
            + "aria-label=\"blocks fetched saved per shuffle\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
            + "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%d</text><text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">0</text>",
        width, height, left, height - bottom, width - 10, height - bottom, left - 4, top + 10, max, left - 4, height - bottom));
    for (int i = 0; i < shown.size(); i++) {
      RiffleMessages.RiffleShuffle r = shown.get(i);
      long saved = Math.max(r.blocksUnmerged() - r.blocksMerged(), 0);
      double h = plot * saved / max;
      double x = left + i * slot + slot * 0.1;
      svg.append(String.format(Locale.ROOT,
          "<rect class=\"riffle-bar\" data-shuffle=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1f77b4\">"
              + "<title>shuffle %d: %d blocks saved</title></rect><text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d</text>",
          r.shuffle(), x, height - bottom - h, slot * 0.8, h, r.shuffle(), saved, x + slot * 0.4, height - bottom + 14, r.shuffle()));
    }
    return svg.append("</svg>").toString();
  }

  /** A row's groups fallen back: their number, then one {@code <span data-cause>} per cause with any ({@code 0} when none). */
  private static String fellBack(Map<String, Integer> byCause) {
    StringBuilder b = new StringBuilder().append(RiffleStatus.sum(byCause));
    for (String cause : RiffleNames.FALLBACK_CAUSES) {
      int n = byCause.getOrDefault(cause, 0);
      if (n > 0) {
        b.append("<br><span data-cause=\"").append(cause).append("\">").append(cause.replace('_', ' ')).append(' ').append(n).append("</span>");
      }
    }
    return b.toString();
  }

  private static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
