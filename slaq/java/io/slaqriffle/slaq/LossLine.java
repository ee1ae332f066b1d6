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
    String number(String text) {
      Matcher m = line.matcher(text);
      return m.lookingAt() ? m.group(1) : null;
    }
  },
  /**
   * spark.ml's GaussianMixture, at INFO on its training instrumentation's logger, after each EM iteration:
   * {@code "[<id>] " + {"logLikelihood@iter<i>":<value>}} (json4s). The log-likelihood rises, so the loss is
   * its negation.
   */
  GMM(SlaqNames.INSTRUMENTATION_LOGGER, false, Level.INFO, SlaqNames.GMM_ITERATION_LINE) {
    private final Pattern value = Pattern.compile(Pattern.quote(SlaqNames.GMM_ITERATION_LINE) + "\\d+\":([^}]+)}");

    @Override
    int from(String message) {
      int end = message.startsWith("[") ? message.indexOf("] ") : -1;  // Instrumentation's prefix
      return end < 0 ? -1 : end + 2;
    }

    @Override
    String number(String line) {
      Matcher m = value.matcher(line);
      return m.lookingAt() ? m.group(1) : null;
    }

    @Override
    double loss(double number) {
      return -number;
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

  /** The text of the loss in the line (the message from {@link #from}, starting with {@link #start}), or null. */
  abstract String number(String line);

  /** Where the line begins in a logged message (after a prefix its logger adds), or -1. */
  int from(String message) {
    return 0;
  }

  /** The loss a logged number stands for. */
  double loss(double number) {
    return number;
  }

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
    return lineAt(message) >= 0;
  }

  /** Where the iteration line begins in {@code message}, or -1 when it is not one. */
  private int lineAt(String message) {
    int at = message == null ? -1 : from(message);
    return at >= 0 && message.startsWith(start, at) ? at : -1;
  }

  /** The loss in one logged message; NaN when it is not an iteration line or holds no number. */
  double loss(String message) {
    int at = lineAt(message);
    if (at < 0) {
      return Double.NaN;
    }
    String text = number(message.substring(at));
    try {
      return text == null ? Double.NaN : loss(Double.parseDouble(text));
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }
}
