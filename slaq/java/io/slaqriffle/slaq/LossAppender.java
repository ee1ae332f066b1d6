package io.slaqriffle.slaq;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;

/**
 * Captures the objective value of every L-BFGS/OWLQN/LBFGSB iteration breeze logs
 * ({@code "Val and Grad Norm: %.6g (rel: %.3g) %.6g"}, its start is {@link SlaqNames#BREEZE_ITERATION_LINE}) and reports it for the SLAQ job of the
 * logging thread: spark.ml fits run on the thread that called {@code fit()}, which carries the
 * job's local property (or a log4j ThreadContext entry). One per SparkContext, handed breeze's lines
 * by {@link BreezeLogRoute}, which changes nothing any appender of the user's receives.
 */
public final class LossAppender {
  private static final AtomicInteger SERIAL = new AtomicInteger();
  private static final Pattern LINE = Pattern.compile(Pattern.quote(SlaqNames.BREEZE_ITERATION_LINE) + ": (\\S+) \\(rel: \\S+\\) \\S+");
  private final String name;
  private final SlaqPools scheduler;

  private LossAppender(SlaqPools scheduler) {
    this.name = "slaq-loss-capture-" + SERIAL.incrementAndGet();
    this.scheduler = scheduler;
  }

  /** Parses one breeze line; NaN when it is not an iteration line. */
  static double objective(String message) {
    if (message == null || !message.startsWith(SlaqNames.BREEZE_ITERATION_LINE)) {
      return Double.NaN;
    }
    Matcher m = LINE.matcher(message);
    return m.lookingAt() ? Double.parseDouble(m.group(1)) : Double.NaN;
  }

  String name() {
    return name;
  }

  /** One line breeze logged at INFO or coarser, on the thread that logged it. */
  void append(String message) {
    double value = objective(message);
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return;
    }
    String job = scheduler.currentJob();
    if (job == null) {
      job = ThreadContext.get(SlaqNames.JOB_PROPERTY);
    }
    if (job != null) {
      scheduler.report(job, value, "mllib");
    }
  }

  /**
   * Captures breeze's iterations for {@code scheduler}'s jobs until {@code sc} stops: the appender
   * is this context's own (a later SparkContext in the same JVM gets its own), and on application
   * end it is detached and, with the last one, the log4j configuration is given back.
   */
  static LossAppender attach(SlaqPools scheduler, SparkContext sc) {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(SparkContext.class.getClassLoader(), false);
    LossAppender appender = new LossAppender(scheduler);
    BreezeLogRoute.attach(appender, ctx);
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onApplicationEnd(SparkListenerApplicationEnd end) {
        appender.detach();
      }
    });
    return appender;
  }

  /** Stops capturing and gives the log4j configuration back (idempotent). */
  void detach() {
    BreezeLogRoute.detach(this);
  }
}
