package io.slaqriffle.slaq;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;

/**
 * Captures the loss of every iteration Spark's training code logs ({@link LossLine}: the objective of each
 * breeze L-BFGS/OWLQN/LBFGSB iteration, a Gaussian mixture's log-likelihood after each EM step) and reports it
 * for the SLAQ job of the logging thread: spark.ml fits run on the thread that called {@code fit()}, which
 * carries the job's local property (or a log4j ThreadContext entry). One per SparkContext, handed the lines
 * by {@link LossLogRoute}, which changes nothing any appender of the user's receives.
 */
public final class LossAppender {
  private static final AtomicInteger SERIAL = new AtomicInteger();
  private final String name;
  private final SlaqPools scheduler;

  private LossAppender(SlaqPools scheduler) {
    this.name = "slaq-loss-capture-" + SERIAL.incrementAndGet();
    this.scheduler = scheduler;
  }

  String name() {
    return name;
  }

  /** The SLAQ job the calling thread works for, or null. */
  String job() {
    String job = scheduler.currentJob();
    return job != null ? job : ThreadContext.get(SlaqNames.JOB_PROPERTY);
  }

  /** One message logged on {@code line}'s logger at its level or coarser, on the thread that logged it. */
  void append(LossLine line, String message) {
    double value = line.loss(message);
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return;
    }
    String job = job();
    if (job != null) {
      scheduler.report(job, value, "mllib");
    }
  }

  /**
   * Captures the logged iterations for {@code scheduler}'s jobs until {@code sc} stops: the appender
   * is this context's own (a later SparkContext in the same JVM gets its own), and on application
   * end it is detached and, with the last one, the log4j configuration is given back.
   */
  static LossAppender attach(SlaqPools scheduler, SparkContext sc) {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(SparkContext.class.getClassLoader(), false);
    LossAppender appender = new LossAppender(scheduler);
    LossLogRoute.attach(appender, ctx);
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
    LossLogRoute.detach(this);
  }
}
