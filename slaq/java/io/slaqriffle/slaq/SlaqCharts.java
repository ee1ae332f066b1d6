package io.slaqriffle.slaq;

import io.slaqriffle.seam.Html;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The SLAQ tab's two charts as server-side SVG (no JavaScript), from the retained epochs: every
 * job's normalized loss and their mean over time (the paper's Fig. 7a, live), and the cores each job
 * was allocated over time as stacked areas with the cores actually used on top (Fig. 8, live), each
 * job's number on its line's end and in its band ({@link ChartLabels}). Pure functions of their input.
 */
final class SlaqCharts {
  static final int WIDTH = 900;
  static final int HEIGHT = 260;
  private static final int LEFT = 50;
  private static final int RIGHT = 10;
  private static final int TOP = 10;
  private static final int BOTTOM = 30;
  /** The plot area's background, and the allocation bands' opacity over it. */
  private static final String PLOT = "#fafafa";
  private static final double BAND_OPACITY = 0.75;
  /** Normalized loss is drawn in [0, this]; noisy values beyond are clipped to the frame. */
  private static final double LOSS_MAX = 1.1;
  /** The least first-loss-to-floor distance, as {@code slaq.stats.history.MIN_SPAN}: a job whose first loss is its floor. */
  private static final double MIN_SPAN = 1e-300;
  private static final String[] PALETTE = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"
  };

  /** Jobs the charts and the legend draw: the first this many to appear in the window (the table numbers them; the rest get a dash). */
  static final int MAX_JOBS = 100;

  private SlaqCharts() {}

  /** Line styles: the palette's colours repeat every 10 jobs, so each round of colours gets its own dash pattern. */
  private static final String[] DASHES = {"none", "7 3", "2 2", "9 3 2 3", "4 4", "12 2 2 2 2 2"};

  static String color(int index) {
    return PALETTE[Math.floorMod(index, PALETTE.length)];
  }

  /** The dash pattern of job {@code index} ({@code none}: solid), distinct for the first 60 jobs together with its colour. */
  static String dash(int index) {
    return DASHES[Math.floorMod(index / PALETTE.length, DASHES.length)];
  }

  /** A legend key: a short line in the job's colour and dash pattern, as an inline SVG. */
  static String swatch(int index) {
    return String.format(Locale.ROOT,
        "<svg width=\"28\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" x2=\"28\" y2=\"5\" stroke=\"%s\" stroke-width=\"3\" stroke-dasharray=\"%s\"/></svg>",
        color(index), dash(index));
  }

  /**
   * Normalized loss of every job that reported a loss, one line each, and their mean (thick, black). Each job's whole
   * line is drawn against its latest row's first loss and floor ({@code finished}: the jobs' final rows), so a floor
   * estimate that moved never makes a falling loss look like a rising one; its last point is its row's normalized loss.
   */
  static String lossChart(List<SlaqMessages.EpochStatus> history, List<SlaqMessages.JobStatus> finished, List<String> jobs) {
    Map<String, SlaqMessages.JobStatus> latest = new HashMap<>();
    for (SlaqMessages.EpochStatus e : history) {
      for (SlaqMessages.JobStatus j : e.jobs()) {
        if (j.iterations() > 0) {
          latest.put(j.job(), j);
        }
      }
    }
    for (SlaqMessages.JobStatus j : finished) {
      latest.put(j.job(), j);
    }
    Frame f = new Frame(history, LOSS_MAX, 0.25);
    StringBuilder svg = f.open("slaq-loss-chart", "normalized loss over time", "normalized loss");
    ChartLabels labels = f.labels();
    Set<String> drawn = new HashSet<>(jobs);
    Map<String, StringBuilder> lines = new HashMap<>();
    Map<String, double[]> ends = new HashMap<>(); // job -> its line's last (t, normalized loss)
    StringBuilder mean = new StringBuilder();
    for (SlaqMessages.EpochStatus e : history) {
      double sum = 0;
      int n = 0;
      for (SlaqMessages.JobStatus j : e.jobs()) {
        if (j.iterations() > 0) {
          SlaqMessages.JobStatus ref = latest.get(j.job());
          double normalized = normalized(j.loss(), ref.firstLoss(), ref.lossFloor());
          if (drawn.contains(j.job())) {
            lines.computeIfAbsent(j.job(), k -> new StringBuilder()).append(f.point(e.t(), normalized));
            ends.put(j.job(), new double[] {e.t(), normalized});
          }
          sum += Math.max(-1e300, Math.min(normalized, 1e300)); // a sum of a few thousand stays finite
          n++;
        }
      }
      if (n > 0) {
        mean.append(f.point(e.t(), sum / n));
      }
    }
    for (int i = 0; i < jobs.size(); i++) {
      StringBuilder points = lines.get(jobs.get(i));
      if (points != null) {
        String trimmed = points.toString().trim();
        svg.append(String.format(Locale.ROOT,
            "<polyline class=\"slaq-series\" data-job=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"%s\" points=\"%s\"><title>%d %s</title></polyline>",
            SlaqPage.escape(jobs.get(i)), color(i), dash(i), trimmed, i + 1, Html.text(jobs.get(i))));
        double[] end = ends.get(jobs.get(i));
        labels.add(i, jobs.get(i), f.x(end[0]), f.y(end[1]), PLOT);
      }
    }
    if (mean.length() > 0) {
      svg.append("<polyline class=\"slaq-mean\" fill=\"none\" stroke=\"#000\" stroke-width=\"3\" points=\"")
          .append(mean.toString().trim()).append("\"><title>mean over running jobs</title></polyline>");
    }
    return svg.append(labels.svg()).append("</svg>").toString();
  }

  /**
   * {@code (loss - floor) / (first - floor)} without overflow: every operand halved first, so losses near
   * {@code ±Double.MAX_VALUE} give a finite ratio, never {@code inf / inf} (NaN in the SVG's points).
   */
  static double normalized(double loss, double first, double floor) {
    return (loss / 2 - floor / 2) / Math.max(first / 2 - floor / 2, MIN_SPAN);
  }

  /** Cores allocated per job as stacked areas (legend order), and the total cores used as a dashed line. */
  static String allocationChart(List<SlaqMessages.EpochStatus> history, List<String> jobs) {
    double top = 1;
    for (SlaqMessages.EpochStatus e : history) {
      double allocated = 0;
      double used = 0;
      for (SlaqMessages.JobStatus j : e.jobs()) {
        allocated += j.cores();
        used += j.usedCores();
      }
      top = Math.max(top, Math.max(e.capacity(), Math.max(allocated, used)));
    }
    top = Double.isFinite(top) ? top : Double.MAX_VALUE / 2; // cores summing past the doubles (a forged event log) still frame
    Frame f = new Frame(history, top, Math.max(1.0, Math.ceil(top / 4)));
    StringBuilder svg = f.open("slaq-alloc-chart", "cores allocated over time", "cores");
    int n = history.size();
    ChartLabels labels = f.labels();
    Set<String> drawn = new HashSet<>(jobs);
    Map<String, double[]> cores = new HashMap<>(); // job -> its cores in each epoch: one pass over the rows, not one per job
    for (int k = 0; k < n; k++) {
      for (SlaqMessages.JobStatus j : history.get(k).jobs()) {
        if (drawn.contains(j.job())) {
          cores.computeIfAbsent(j.job(), x -> new double[n])[k] += j.cores();
        }
      }
    }
    double[] below = new double[n];
    for (int i = 0; i < jobs.size(); i++) {
      String job = jobs.get(i);
      double[] above = below.clone();
      double[] own = cores.getOrDefault(job, new double[n]);
      boolean any = false;
      for (int k = 0; k < n; k++) {
        above[k] += own[k];
        any |= own[k] > 0;
      }
      if (any) {
        StringBuilder points = new StringBuilder();
        double[] width = new double[n];
        for (int k = 0; k < n; k++) {
          points.append(f.point(history.get(k).t(), above[k]));
          width[k] = above[k] - below[k];
        }
        for (int k = n - 1; k >= 0; k--) {
          points.append(f.point(history.get(k).t(), below[k]));
        }
        svg.append(String.format(Locale.ROOT,
            "<polygon class=\"slaq-series\" data-job=\"%s\" fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"%s\" stroke-width=\"1\" stroke-dasharray=\"%s\" points=\"%s\"><title>%d %s</title></polygon>",
            SlaqPage.escape(job), color(i), BAND_OPACITY, dash(i).equals("none") ? "none" : "#000", dash(i), points.toString().trim(), i + 1,
            Html.text(job)));
        int at = widestRunMiddle(width);
        labels.add(i, job, f.x(history.get(at).t()), f.y((above[at] + below[at]) / 2), ChartLabels.blend(color(i), PLOT, BAND_OPACITY));
      }
      below = above;
    }
    StringBuilder used = new StringBuilder();
    for (SlaqMessages.EpochStatus e : history) {
      double sum = 0;
      for (SlaqMessages.JobStatus j : e.jobs()) {
        sum += j.usedCores();
      }
      used.append(f.point(e.t(), sum));
    }
    if (n > 0) {
      svg.append("<polyline class=\"slaq-used\" fill=\"none\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"6 4\" points=\"")
          .append(used.toString().trim()).append("\"><title>cores used (all jobs)</title></polyline>");
    }
    return svg.append(labels.svg()).append("</svg>").toString();
  }

  /** Where a band's number goes: the middle epoch of its longest run at (nearly) its widest, not an edge of the chart. */
  static int widestRunMiddle(double[] width) {
    double max = 0;
    for (double w : width) {
      max = Math.max(max, w);
    }
    int bestStart = 0;
    int bestLength = 0;
    int start = -1;
    for (int k = 0; k < width.length; k++) {
      if (width[k] >= 0.9 * max && width[k] > 0) {
        start = start < 0 ? k : start;
        if (k - start + 1 > bestLength) {
          bestStart = start;
          bestLength = k - start + 1;
        }
      } else {
        start = -1;
      }
    }
    return bestStart + (bestLength - 1) / 2;
  }

  /** Maps (t, value) into the plot area and draws the axes. */
  private static final class Frame {
    private final double t0;
    private final double t1;
    private final double yMax;
    private final double tick;

    Frame(List<SlaqMessages.EpochStatus> history, double yMax, double tick) {
      this.t0 = history.isEmpty() ? 0 : history.get(0).t();
      double last = history.isEmpty() ? 1 : history.get(history.size() - 1).t();
      this.t1 = last > t0 ? last : t0 + 1;
      this.yMax = yMax;
      this.tick = tick;
    }

    String point(double t, double v) {
      return String.format(Locale.ROOT, "%.1f,%.1f ", x(t), y(v));
    }

    /** The plot's x of {@code t}; a time the frame cannot place (span beyond the doubles) sits at the left edge. */
    double x(double t) {
      double x = LEFT + (t / 2 - t0 / 2) / (t1 / 2 - t0 / 2) * (WIDTH - LEFT - RIGHT);
      return Double.isFinite(x) ? x : LEFT;
    }

    /** The plot's y of {@code v}, clipped to the frame; a value that is not a number at all sits at 0. */
    double y(double v) {
      double clipped = Double.isNaN(v) ? 0 : Math.max(0, Math.min(v, yMax));
      return TOP + (1 - clipped / yMax) * (HEIGHT - TOP - BOTTOM);
    }

    /** The job numbers of this frame's plot. */
    ChartLabels labels() {
      return new ChartLabels(LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM);
    }

    StringBuilder open(String id, String title, String yLabel) {
      StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
          "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>%s</title>",
          id, WIDTH, HEIGHT, WIDTH, HEIGHT, title));
      int x0 = LEFT;
      int x1 = WIDTH - RIGHT;
      int y0 = HEIGHT - BOTTOM;
      b.append(String.format(Locale.ROOT,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#999\"/>", x0, TOP, x1 - x0, y0 - TOP, PLOT));
      for (double v = 0; v <= yMax + 1e-9; v += tick) {
        double py = TOP + (1 - v / yMax) * (y0 - TOP);
        b.append(String.format(Locale.ROOT,
            "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.2f</text>", x0 - 4, py + 4, v));
      }
      b.append(String.format(Locale.ROOT,
          "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.0f s</text><text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.0f s</text>",
          x0, HEIGHT - 12, t0, x1, HEIGHT - 12, t1));
      b.append(String.format(Locale.ROOT,
          "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">time since SLAQ started; y: %s</text>",
          (x0 + x1) / 2, HEIGHT - 12, yLabel));
      return b;
    }
  }
}
