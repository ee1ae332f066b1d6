package io.slaqriffle.shim;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * Captures the objective value of every L-BFGS/OWLQN/LBFGSB iteration breeze logs
 * ({@code "Val and Grad Norm: %.6g (rel: %.3g) %.6g"}) and reports it for the SLAQ job of the
 * logging thread: spark.ml fits run on the thread that called {@code fit()}, which carries the
 * job's local property (or a log4j ThreadContext entry).
 */
public final class LossAppender extends AbstractAppender {
  static final String LOGGER = "breeze.optimize";
  private static final Pattern LINE = Pattern.compile("Val and Grad Norm: (\\S+) \\(rel: \\S+\\) \\S+");
  private final SlaqPools scheduler;

  private LossAppender(SlaqPools scheduler) {
    super("slaq-loss-capture", null, null, true, Property.EMPTY_ARRAY);
    this.scheduler = scheduler;
  }

  /** Parses one breeze line; NaN when it is not an iteration line. */
  static double objective(String message) {
    if (message == null || !message.startsWith("Val and Grad Norm")) {
      return Double.NaN;
    }
    Matcher m = LINE.matcher(message);
    return m.lookingAt() ? Double.parseDouble(m.group(1)) : Double.NaN;
  }

  @Override
  public void append(LogEvent event) {
    double value = objective(event.getMessage().getFormattedMessage());
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return;
    }
    String job = scheduler.currentJob();
    if (job == null) {
      job = ThreadContext.get(SlaqPools.JOB_PROPERTY);
    }
    if (job != null) {
      scheduler.report(job, value, "mllib");
    }
  }

  /** Adds the appender to Spark's log4j2 context, on its own non-additive INFO logger config. */
  static LossAppender install(SlaqPools scheduler, ClassLoader sparkLoader) {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(sparkLoader, false);
    Configuration config = ctx.getConfiguration();
    LossAppender appender = new LossAppender(scheduler);
    appender.start();
    config.addAppender(appender);
    LoggerConfig existing = config.getLoggerConfig(LOGGER);
    if (existing.getName().equals(LOGGER)) {
      existing.addAppender(appender, Level.INFO, null);
      if (!existing.getLevel().isLessSpecificThan(Level.INFO)) {
        existing.setLevel(Level.INFO);
      }
    } else {
      LoggerConfig mine = new LoggerConfig(LOGGER, Level.INFO, false);
      mine.addAppender(appender, Level.INFO, null);
      config.addLogger(LOGGER, mine);
    }
    ctx.updateLoggers();
    return appender;
  }
}
