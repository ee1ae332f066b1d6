package io.slaqriffle.slaq;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The job numbers (the jobs table's and the legend's #) drawn on one SLAQ chart, so the charts read without
 * telling colours apart: each bold, in black or white, whichever contrasts more with what it is drawn on (the
 * plot, or its job's band blended over it), inside a halo of the other, so a line or band next to it does not
 * matter either; kept inside the plot and clear of the numbers placed before it. The chart draws them last,
 * over every series.
 */
final class ChartLabels {
  /** A number's box: about this wide per digit (bold, 11 px) and this tall. */
  private static final double DIGIT_WIDTH = 7.5;
  private static final double LINE = 13;
  /** How far a number moves (in lines, up then down) to get clear of the others before it stays where it overlaps. */
  private static final int MAX_SHIFT = 6;

  private final double left;
  private final double top;
  private final double right;
  private final double bottom;
  private final List<double[]> placed = new ArrayList<>(); // x, y, width of each number drawn
  private final StringBuilder svg = new StringBuilder();

  /** The numbers of a plot spanning {@code left..right} and {@code top..bottom}. */
  ChartLabels(double left, double top, double right, double bottom) {
    this.left = left;
    this.top = top;
    this.right = right;
    this.bottom = bottom;
  }

  /** Job {@code index}'s number at ({@code x}, {@code y}), or as near as it fits, drawn on the colour {@code under}. */
  void add(int index, String job, double x, double y, String under) {
    String number = Integer.toString(index + 1);
    double width = number.length() * DIGIT_WIDTH + 4;
    double cx = clamp(x, left + width / 2, right - width / 2);
    double cy = clamp(y, top + LINE / 2, bottom - LINE / 2);
    for (int shift = 1; overlaps(cx, cy, width) && shift <= 2 * MAX_SHIFT; shift++) {
      double moved = clamp(y + (shift % 2 == 1 ? -1 : 1) * LINE * ((shift + 1) / 2), top + LINE / 2, bottom - LINE / 2);
      if (!overlaps(cx, moved, width)) {
        cy = moved;
      }
    }
    placed.add(new double[] {cx, cy, width});
    boolean dark = contrast(under, "#000000") >= contrast(under, "#ffffff");
    svg.append(String.format(Locale.ROOT,
        "<text class=\"slaq-label\" data-job=\"%s\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"middle\" "
            + "dominant-baseline=\"central\" fill=\"%s\" stroke=\"%s\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\">%s</text>",
        SlaqPage.escape(job), cx, cy, dark ? "#000" : "#fff", dark ? "#fff" : "#000", number));
  }

  /** The numbers' SVG, in the order added. */
  String svg() {
    return svg.toString();
  }

  private boolean overlaps(double x, double y, double width) {
    for (double[] p : placed) {
      if (Math.abs(p[0] - x) < (p[2] + width) / 2 && Math.abs(p[1] - y) < LINE) {
        return true;
      }
    }
    return false;
  }

  private static double clamp(double v, double lo, double hi) {
    return Math.max(lo, Math.min(v, hi));
  }

  /** {@code colour} ({@code #rrggbb}) drawn at {@code opacity} over {@code background}. */
  static String blend(String colour, String background, double opacity) {
    StringBuilder b = new StringBuilder("#");
    for (int c = 0; c < 3; c++) {
      double v = opacity * channel(colour, c) + (1 - opacity) * channel(background, c);
      b.append(String.format(Locale.ROOT, "%02x", Math.round(v * 255)));
    }
    return b.toString();
  }

  /** WCAG 2's contrast ratio of two {@code #rrggbb} colours, 1 to 21. */
  static double contrast(String a, String b) {
    double la = luminance(a);
    double lb = luminance(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  }

  private static double luminance(String colour) {
    double[] weights = {0.2126, 0.7152, 0.0722};
    double sum = 0;
    for (int c = 0; c < 3; c++) {
      double v = channel(colour, c);
      sum += weights[c] * (v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
    }
    return sum;
  }

  private static double channel(String colour, int c) {
    return Integer.parseInt(colour.substring(1 + 2 * c, 3 + 2 * c), 16) / 255.0;
  }
}
