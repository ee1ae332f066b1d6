package io.slaqriffle.slaq;

import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.SparkInternals;
import io.slaqriffle.seam.TabPage;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.json4s.JValue;
import scala.collection.immutable.Seq;
import scala.xml.Node;

/**
 * The SLAQ tab's one page, at {@code /slaq/} (HTML: jobs table and charts) and {@code /slaq/json/}
 * (the same data as a {@code status_report} message), attached the way Spark's SQL and Streaming
 * tabs attach theirs. {@link #html} is a pure function of the report; Spark's header, navigation and
 * styles come from Spark's {@code UIUtils.headerSparkPage} (through {@link SparkInternals#sparkPage}).
 */
final class SlaqPage extends TabPage {
  private final SlaqTab tab;
  private final SlaqStatus status;

  SlaqPage(SlaqTab tab, SlaqStatus status) {
    this.tab = tab;
    this.status = status;
  }

  @Override
  public Seq<Node> render(HttpServletRequest request) {
    String html = html(status.report(), SparkInternals.prependBaseUri(request, tab.basePath(), "/slaq/json/"), refreshSeconds(request));
    return sparkPage(request, "SLAQ", html, tab);
  }

  @Override
  public JValue renderJson(HttpServletRequest request) {
    int epochs = positiveParameter(request, "epochs", SlaqStatus.MAX_EPOCHS, SlaqStatus.MAX_EPOCHS);
    return json(status.reportJson(epochs), "SLAQ status");
  }

  /** The page body: a summary line, the jobs table (running, then finished) and the two charts. */
  static String html(Messages.StatusReport report, String jsonUrl, int refreshSeconds) {
    List<Messages.EpochStatus> history = report.history();
    StringBuilder b = new StringBuilder("<div id=\"slaq\">");
    if (history.isEmpty()) {
      b.append("<p id=\"slaq-summary\">SLAQ has not completed an epoch yet.</p>");
    } else {
      Messages.EpochStatus last = history.get(history.size() - 1);
      b.append(String.format(Locale.ROOT,
          "<p id=\"slaq-summary\">Policy <strong>%s</strong> &middot; epoch %d at t=%.1f s &middot; %.0f cores &middot; "
              + "%d jobs running, %d finished &middot; <a href=\"%s\">JSON</a> &middot; auto-refresh: <a href=\"?refresh=5\">every 5 s</a></p>",
          escape(last.policy()), last.epoch(), last.t(), last.capacity(), last.jobs().size(), report.finished().size(), escape(jsonUrl)));
    }
    if (refreshSeconds > 0) {
      b.append(String.format(Locale.ROOT, "<script>setTimeout(function () { location.reload(); }, %d);</script>", refreshSeconds * 1000));
    }
    List<Messages.JobStatus> rows = new ArrayList<>(history.isEmpty() ? List.of() : history.get(history.size() - 1).jobs());
    rows.addAll(report.finished());
    b.append("<h4>Jobs</h4><table id=\"slaq-jobs\" class=\"table table-bordered table-sm table-striped\"><thead><tr>")
        .append("<th>Job</th><th>State</th><th>Iterations</th><th>Loss</th><th>Normalized loss</th>")
        .append("<th title=\"predicted drop of normalized loss over the next epoch with the allocated cores\">Predicted gain</th>")
        .append("<th>Cores allocated</th><th>Cores used</th></tr></thead><tbody>");
    for (Messages.JobStatus j : rows) {
      boolean reported = j.iterations() > 0;
      b.append(String.format(Locale.ROOT,
          "<tr class=\"slaq-job\" data-job=\"%s\"><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%.3f</td><td>%.2f</td><td>%.2f</td></tr>",
          escape(j.job()), escape(j.job()), escape(j.state()), j.iterations(),
          reported ? String.format(Locale.ROOT, "%.6g", j.loss()) : "&ndash;",
          reported ? String.format(Locale.ROOT, "%.3f", j.normalizedLoss()) : "&ndash;",
          j.predictedGain(), j.cores(), j.usedCores()));
    }
    b.append("</tbody></table>");
    List<String> jobs = SlaqStatus.jobOrder(history);
    b.append("<h4>Normalized loss over time</h4>").append(SlaqCharts.lossChart(history, jobs))
        .append("<h4>Cores allocated over time</h4>").append(SlaqCharts.allocationChart(history, jobs))
        .append("<p id=\"slaq-legend\">");
    for (int i = 0; i < jobs.size(); i++) {
      b.append(String.format(Locale.ROOT,
          "<span style=\"margin-right:1em\"><span style=\"display:inline-block;width:12px;height:12px;background:%s\"></span> %s</span>",
          SlaqCharts.color(i), escape(jobs.get(i))));
    }
    b.append("<span>thick black: mean normalized loss; dashed: cores used</span></p></div>");
    return b.toString();
  }

  /** Text made safe for HTML and SVG content and attribute values (job names are user input). */
  static String escape(String s) {
    return io.slaqriffle.seam.Html.escape(s);
  }
}
