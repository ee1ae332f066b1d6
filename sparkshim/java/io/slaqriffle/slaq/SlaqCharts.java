package io.slaqriffle.slaq;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The SLAQ tab's two charts as server-side SVG (no JavaScript), from the retained epochs: every
 * job's normalized loss and their mean over time (the paper's Fig. 7a, live), and the cores each job
 * was allocated over time as stacked areas with the cores actually used on top (Fig. 8, live).
 * Pure functions of their input.
 */
final class SlaqCharts {
  static final int WIDTH = 900;
  static final int HEIGHT = 260;
  private static final int LEFT = 50;
  private static final int RIGHT = 10;
  private static final int TOP = 10;
  private static final int BOTTOM = 30;
  /** Normalized loss is drawn in [0, this]; noisy values beyond are clipped to the frame. */
  private static final double LOSS_MAX = 1.1;
  /** The least first-loss-to-floor distance, as {@code slaq.stats.history.MIN_SPAN}: a job whose first loss is its floor. */
  private static final double MIN_SPAN = 1e-300;
  private static final String[] PALETTE = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"
  };

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

  /** The job's number (its row's #) at a point of its series, so the charts read without telling colours apart. */
  private static String label(int index, String xy) {
    String[] p = xy.trim().split(",");
    return String.format(Locale.ROOT,
        "<text class=\"slaq-label\" x=\"%s\" y=\"%s\" font-size=\"10\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\" paint-order=\"stroke\">%d</text>",
        p[0], p[1], color(index), index + 1);
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
    Map<String, StringBuilder> lines = new HashMap<>();
    StringBuilder mean = new StringBuilder();
    for (SlaqMessages.EpochStatus e : history) {
      double sum = 0;
      int n = 0;
      for (SlaqMessages.JobStatus j : e.jobs()) {
        if (j.iterations() > 0) {
          SlaqMessages.JobStatus ref = latest.get(j.job());
          double normalized = (j.loss() - ref.lossFloor()) / Math.max(ref.firstLoss() - ref.lossFloor(), MIN_SPAN);
          lines.computeIfAbsent(j.job(), k -> new StringBuilder()).append(f.point(e.t(), normalized));
          sum += normalized;
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
            SlaqPage.escape(jobs.get(i)), color(i), dash(i), trimmed, i + 1, SlaqPage.escape(jobs.get(i))));
        svg.append(label(i, trimmed.substring(trimmed.lastIndexOf(' ') + 1)));
      }
    }
    if (mean.length() > 0) {
      svg.append("<polyline class=\"slaq-mean\" fill=\"none\" stroke=\"#000\" stroke-width=\"3\" points=\"")
          .append(mean.toString().trim()).append("\"><title>mean over running jobs</title></polyline>");
    }
    return svg.append("</svg>").toString();
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
    Frame f = new Frame(history, top, Math.max(1.0, Math.ceil(top / 4)));
    StringBuilder svg = f.open("slaq-alloc-chart", "cores allocated over time", "cores");
    int n = history.size();
    double[] below = new double[n];
    for (int i = 0; i < jobs.size(); i++) {
      String job = jobs.get(i);
      double[] above = below.clone();
      boolean any = false;
      for (int k = 0; k < n; k++) {
        for (SlaqMessages.JobStatus j : history.get(k).jobs()) {
          if (j.job().equals(job)) {
            above[k] += j.cores();
            any |= j.cores() > 0;
          }
        }
      }
      if (any) {
        StringBuilder points = new StringBuilder();
        int widest = 0;
        for (int k = 0; k < n; k++) {
          points.append(f.point(history.get(k).t(), above[k]));
          if (above[k] - below[k] > above[widest] - below[widest]) {
            widest = k;
          }
        }
        for (int k = n - 1; k >= 0; k--) {
          points.append(f.point(history.get(k).t(), below[k]));
        }
        svg.append(String.format(Locale.ROOT,
            "<polygon class=\"slaq-series\" data-job=\"%s\" fill=\"%s\" fill-opacity=\"0.75\" stroke=\"%s\" stroke-width=\"1\" stroke-dasharray=\"%s\" points=\"%s\"><title>%d %s</title></polygon>",
            SlaqPage.escape(job), color(i), dash(i).equals("none") ? "none" : "#000", dash(i), points.toString().trim(), i + 1, SlaqPage.escape(job)));
        svg.append(label(i, f.point(history.get(widest).t(), (above[widest] + below[widest]) / 2)));
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
    return svg.append("</svg>").toString();
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

    String point(double t, double y) {
      double px = LEFT + (t - t0) / (t1 - t0) * (WIDTH - LEFT - RIGHT);
      double clipped = Math.max(0, Math.min(y, yMax));
      double py = TOP + (1 - clipped / yMax) * (HEIGHT - TOP - BOTTOM);
      return String.format(Locale.ROOT, "%.1f,%.1f ", px, py);
    }

    StringBuilder open(String id, String title, String yLabel) {
      StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
          "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>%s</title>",
          id, WIDTH, HEIGHT, WIDTH, HEIGHT, title));
      int x0 = LEFT;
      int x1 = WIDTH - RIGHT;
      int y0 = HEIGHT - BOTTOM;
      b.append(String.format(Locale.ROOT,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>", x0, TOP, x1 - x0, y0 - TOP));
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
