package io.slaqriffle.slaq;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.Level;

/**
 * The lines Spark's training code logs once per iteration with the loss in them, unasked: who logs each,
 * at which level, and how the loss is read from it. {@link LossLogRoute} routes these (and only these)
 * to the capture appenders. The evidence per Spark line is in docs/mllib-capture.md.
 */
enum LossLine {
  /**
   * breeze's first-order minimizers (LBFGS, OWLQN, LBFGSB), at INFO on the {@code breeze.optimize} hierarchy:
   * {@code "Val and Grad Norm: %.6g (rel: %.3g) %.6g"}, the objective first.
   */
  BREEZE(SlaqNames.BREEZE_LOGGER, true, Level.INFO, SlaqNames.BREEZE_ITERATION_LINE) {
    private final Pattern line = Pattern.compile(Pattern.quote(SlaqNames.BREEZE_ITERATION_LINE) + ": (\\S+) \\(rel: \\S+\\) \\S+");

    @Override
    String number(String message) {
      Matcher m = line.matcher(message);
      return m.lookingAt() ? m.group(1) : null;
    }
  },
  /**
   * spark.ml's gradient-boosted trees ({@code ml.tree.impl.GradientBoostedTrees.boost}), at DEBUG on that
   * one logger: {@code "error of gbt = " + error}, the weighted training error after each tree, built only
   * when the logger answers that DEBUG is enabled (Spark's by-name {@code logDebug}).
   */
  GBT(SlaqNames.GBT_LOGGER, false, Level.DEBUG, SlaqNames.GBT_ITERATION_LINE) {
    @Override
    String number(String message) {
      return message.substring(SlaqNames.GBT_ITERATION_LINE.length()).trim();
    }
  };

  private final String logger;
  private final boolean hierarchy;  // also the loggers below it (breeze.optimize.LBFGS, ...)
  private final Level level;
  private final String start;

  LossLine(String logger, boolean hierarchy, Level level, String start) {
    this.logger = logger;
    this.hierarchy = hierarchy;
    this.level = level;
    this.start = start;
  }

  /** The text of the loss in a message that starts with {@link #start}, or null. */
  abstract String number(String message);

  /** The line logged on {@code name} at {@code level}, if it is one of these; else null. */
  static LossLine of(String name, Level level) {
    if (name == null || level == null) {
      return null;
    }
    for (LossLine line : values()) {
      if (level.isMoreSpecificThan(line.level) && line.logs(name)) {
        return line;
      }
    }
    return null;
  }

  private boolean logs(String name) {
    if (!name.startsWith(logger)) {
      return false;
    }
    return name.length() == logger.length() || (hierarchy && name.charAt(logger.length()) == '.');
  }

  /** Whether {@code message} (a format string, before its parameters) is an iteration line. */
  boolean starts(String message) {
    return message != null && message.startsWith(start);
  }

  /** The loss in one logged message; NaN when it is not an iteration line or holds no number. */
  double loss(String message) {
    if (!starts(message)) {
      return Double.NaN;
    }
    String text = number(message);
    try {
      return text == null ? Double.NaN : Double.parseDouble(text);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }
}
