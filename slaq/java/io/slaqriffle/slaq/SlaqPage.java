package io.slaqriffle.slaq;

import io.slaqriffle.seam.Html;
import io.slaqriffle.seam.TabPage;
import io.slaqriffle.seam.TabView;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;

/**
 * The SLAQ tab's page content, at {@code /slaq/} (HTML: jobs table and charts) and {@code /slaq/json/}
 * (the same data as a {@code status_report} message, its window narrowed by {@code ?epochs=N}).
 * {@link #html} is a pure function of the report; the seam's {@link TabView} serves it.
 */
final class SlaqPage {
  /** The SLAQ tab over its {@link SlaqStatus}, in the live UI and the History Server alike. */
  static final TabView<SlaqStatus> VIEW = new TabView<>(SlaqPools.TAB, "SLAQ",
      (status, jsonUrl, refreshSeconds) -> html(status.report(), jsonUrl, refreshSeconds),
      (status, request) -> status.reportJson(TabPage.positiveParameter(request, "epochs", SlaqStatus.MAX_EPOCHS, SlaqStatus.MAX_EPOCHS)));

  private SlaqPage() {}

  /** The page body: a summary line, the jobs table (running, then finished) and the two charts. */
  static String html(SlaqMessages.StatusReport report, String jsonUrl, int refreshSeconds) {
    List<SlaqMessages.EpochStatus> history = report.history();
    StringBuilder b = new StringBuilder("<div id=\"slaq\">");
    if (history.isEmpty()) {
      b.append("<p id=\"slaq-summary\">SLAQ has not completed an epoch yet.</p>");
    } else {
      SlaqMessages.EpochStatus last = history.get(history.size() - 1);
      b.append(String.format(Locale.ROOT,
          "<p id=\"slaq-summary\">Policy <strong>%s</strong> &middot; epoch %d at t=%.1f s &middot; %.0f cores &middot; "
              + "%s running, %d finished &middot; %s</p>",
          escape(last.policy()), last.epoch(), last.t(), last.capacity(), escape(SlaqLines.jobCount(last)), report.finished().size(),
          TabPage.summaryLinks(jsonUrl)));
    }
    b.append(TabPage.reloadScript(refreshSeconds));
    List<SlaqMessages.JobStatus> rows = new ArrayList<>(history.isEmpty() ? List.of() : history.get(history.size() - 1).jobs());
    rows.addAll(report.finished());
    List<String> order = SlaqStatus.jobOrder(history);
    List<String> jobs = order.subList(0, Math.min(order.size(), SlaqCharts.MAX_JOBS)); // what the charts and legend draw
    Map<String, Integer> number = new HashMap<>();
    for (int i = 0; i < jobs.size(); i++) {
      number.put(jobs.get(i), i);
    }
    // The table fits the window: a long name breaks anywhere (a name without spaces would widen the table past it), and a
    // window too narrow for the figures scrolls the table, not the page.
    b.append(Html.tableStart("Jobs", "slaq-jobs").replace("<table ", "<div id=\"slaq-jobs-box\" style=\"overflow-x:auto\"><table "))
        .append("<th title=\"the job's number and line style in the charts\">#</th><th>Job</th>")
        .append("<th title=\"a tuning candidate's param map and fold, or the tuner's refit on the best param map\">Tuning</th>")
        .append("<th>State</th><th title=\"why the job got its share this epoch (see below)\">Why</th><th>Iterations</th>")
        .append("<th title=\"").append(LOSS_DEFINITION).append("\">Loss</th>")
        .append("<th title=\"").append(NORMALIZED_DEFINITION).append("\">Normalized loss</th>")
        .append("<th title=\"").append(GAIN_DEFINITION).append("\">Predicted gain</th>")
        .append("<th>Cores allocated</th><th title=\"cores the job's tasks ran on over the last epoch\">Cores used</th>")
        .append("<th>Wall time</th><th title=\"").append(TARGET_DEFINITION).append("\">Time to target</th>")
        .append("<th title=\"").append(NINETY_DEFINITION).append("\">Time to 90%</th>")
        .append("<th title=\"cores x seconds the job's tasks ran\">Core-seconds</th>").append(Html.HEAD_END);
    for (Group g : groups(rows)) {
      if (!g.name.isEmpty()) {
        b.append(String.format(Locale.ROOT,
            "<tr class=\"slaq-group\" data-group=\"%s\"><th colspan=\"15\" style=\"%s\">%s &middot; %d fits</th></tr>",
            escape(g.name), BREAK_ANYWHERE, Html.name(g.name), g.rows.size()));
      }
      for (SlaqMessages.JobStatus j : g.rows) {
        b.append(row(j, number.get(j.job())));
      }
    }
    b.append("</tbody></table></div>");
    b.append("<h4>Normalized loss over time</h4>").append(SlaqCharts.lossChart(history, report.finished(), jobs))
        .append("<h4>Cores allocated over time</h4>").append(SlaqCharts.allocationChart(history, jobs))
        .append("<div id=\"slaq-legend\">");
    for (int i = 0; i < jobs.size(); i++) {
      b.append(String.format(Locale.ROOT, "<span class=\"slaq-key\" data-job=\"%s\" style=\"margin-right:1em;white-space:nowrap\">%s %d %s</span> ",
          escape(jobs.get(i)), SlaqCharts.swatch(i), i + 1, Html.name(jobs.get(i))));
    }
    b.append("<p>Thick black: mean normalized loss; dashed black: cores used by all jobs. Each job keeps its number, colour and "
        + "line style in both charts; its number is drawn at its loss line's end and in its band.</p></div>");
    b.append("<h4>Reading the table</h4><dl id=\"slaq-definitions\">")
        .append("<dt>Loss</dt><dd>").append(LOSS_DEFINITION).append("</dd>")
        .append("<dt>Normalized loss</dt><dd>").append(NORMALIZED_DEFINITION).append("</dd>")
        .append("<dt>Predicted gain</dt><dd>").append(GAIN_DEFINITION).append("</dd>")
        .append("<dt>Time to target</dt><dd>").append(TARGET_DEFINITION).append("</dd>")
        .append("<dt>Time to 90%</dt><dd>").append(NINETY_DEFINITION).append("</dd>")
        .append("<dt>Why</dt><dd><ul>")
        .append("<li><em>exploring a new job</em>: fewer than two losses, so no curve to predict from; new jobs get cores first</li>")
        .append("<li><em>no loss yet</em>: the job reports no loss (or none after 3 epochs); it gets an even share, as fair sharing would</li>")
        .append("<li><em>predicted gain per core</em>: it got cores beyond the minimum because its predicted gain per core ranked high</li>")
        .append("<li><em>minimum share</em>: other jobs' predicted gain per core ranked higher; it keeps the guaranteed minimum</li>")
        .append("<li><em>target reached</em>: it reached its target loss or reduction; the minimum share from then on</li>")
        .append("<li><em>policy's share</em>: the policy does not rank by predicted gain (fair, fifo, ...)</li>")
        .append("<li><em>ranked by work left to 90%</em>: the order policy offers free cores first to the job expected to have "
            + "the least executor work left to its 90% point; jobs past it, and jobs that report no loss, last</li>")
        .append("<li><em>ended</em>: a finished job that did not reach a target</li>")
        .append("<li><em>pruned</em>: a finished fit of a CrossValidator candidate that cannot beat the best one; its remaining folds are not fitted (spark.slaq.prune)</li>")
        .append("<li><em>failed</em>: a finished job whose block or fit ended with an exception</li>")
        .append("</ul></dd></dl></div>");
    return b.toString();
  }

  static final String LOSS_DEFINITION = "the latest loss as reported (a finished job's final one)";
  static final String NORMALIZED_DEFINITION = "1 at the job's first loss, 0 at the floor its fitted loss curve predicts; before it has "
      + "4 losses (too few to fit a floor), its loss over its first loss. The charts draw each job's whole line against its latest floor";
  static final String GAIN_DEFINITION = "the drop of normalized loss that the job's fitted loss curve predicts over the next epoch with the "
      + "cores allocated; 0 before the job has two losses";
  static final String TARGET_DEFINITION = "seconds from the job's start until it reached the target it declared (target loss or "
      + "reduction; the cell's tooltip names it); a dash for a job without a target or one that has not reached it";
  static final String NINETY_DEFINITION = "seconds from the job's start until its loss first made 90% of its whole loss reduction (first "
      + "loss to lowest), known once it finished; a dash before that or if its loss never fell";

  /** A name's cell: it may break anywhere, so a long name without spaces wraps instead of widening the table. */
  static final String BREAK_ANYWHERE = "overflow-wrap:anywhere;min-width:10em";

  /** One table row: number, job, tuning place, state, why, then its figures (dashes where there are none). */
  private static String row(SlaqMessages.JobStatus j, Integer number) {
    boolean reported = j.iterations() > 0;
    boolean finished = j.state().equals("finished");
    String tuning = "&ndash;";
    if (!j.group().isEmpty()) {
      tuning = j.refit() ? "<strong>refit</strong> on best params" + (j.candidate() >= 0 ? String.format(Locale.ROOT, " (candidate %d)", j.candidate()) : "")
          : String.format(Locale.ROOT, "candidate %d", j.candidate()) + (j.fold() >= 0 ? String.format(Locale.ROOT, ", fold %d", j.fold()) : "");
    }
    return String.format(Locale.ROOT,
        "<tr class=\"slaq-job\" data-job=\"%s\" data-group=\"%s\"%s><td>%s</td><td style=\"" + BREAK_ANYWHERE + "\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td>"
            + "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td%s>%s</td><td>%s</td><td>%s</td></tr>",
        escape(j.job()), escape(j.group()), j.refit() ? " data-refit=\"true\"" : "",
        number == null ? "&ndash;" : Integer.toString(number + 1), Html.name(j.job()), tuning, escape(j.state()), escape(j.why()), j.iterations(),
        reported ? String.format(Locale.ROOT, "%.6g", j.loss()) : "&ndash;",
        reported ? String.format(Locale.ROOT, "%.3f", j.normalizedLoss()) : "&ndash;",
        finished || j.iterations() < 2 ? "&ndash;" : String.format(Locale.ROOT, "%.3f", j.predictedGain()),
        finished ? "&ndash;" : String.format(Locale.ROOT, "%.2f", j.cores()),
        finished ? "&ndash;" : String.format(Locale.ROOT, "%.2f", j.usedCores()),
        String.format(Locale.ROOT, "%.1f s", j.wallSeconds()),
        j.target().isEmpty() ? "" : " title=\"target: " + escape(j.target()) + "\"", SlaqLines.seconds(j.secondsToTarget(), "&ndash;"),
        SlaqLines.seconds(j.secondsToNinety(), "&ndash;"),
        String.format(Locale.ROOT, "%.1f", j.coreSeconds()));
  }

  /** Rows in order, a tuner's fits gathered under it where its first fit appears (the unnamed group: jobs outside any tuner). */
  private static final class Group {
    final String name;
    final List<SlaqMessages.JobStatus> rows = new ArrayList<>();

    Group(String name) {
      this.name = name;
    }
  }

  private static List<Group> groups(List<SlaqMessages.JobStatus> rows) {
    List<Group> out = new ArrayList<>();
    Map<String, Group> byName = new LinkedHashMap<>();
    Group loose = null;
    for (SlaqMessages.JobStatus j : rows) {
      Group g;
      if (j.group().isEmpty()) {
        if (loose == null) {
          loose = new Group("");
          out.add(loose);
        }
        g = loose;
      } else {
        g = byName.computeIfAbsent(j.group(), Group::new);
        if (g.rows.isEmpty()) {
          out.add(g);
        }
      }
      g.rows.add(j);
    }
    return out;
  }

  /** Text made safe for HTML and SVG content and attribute values (job names are user input). */
  static String escape(String s) {
    return Html.escape(s);
  }
}
