package io.slaqriffle.seam;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one line each product logs in the driver's log when it switches on ("SLAQ: on (...)", "Riffle: on
 * for ..."), whatever kind of driver runs it (a pyspark driver, or the brain of a JVM-only one).
 *
 * <p>Spark's shells ({@code spark-sql}, {@code pyspark}, {@code spark-shell}) show only WARN and coarser
 * on their console, except for loggers that have a configuration of their own. So while the driver runs
 * on Spark's default log4j profile (the user configured nothing) and nothing configures {@link #LOGGER},
 * it gets a configuration of its own at INFO: the line shows at every driver's default log level. A
 * user's own log4j configuration is never changed: there the line shows wherever it lets INFO through.
 */
public final class Announce {
  public static final String LOGGER = "io.slaqriffle.SlaqRiffle";
  /** Where Spark's default log4j profiles are (log4j2-defaults.properties, or the JSON layout's), in its own jar. */
  private static final String SPARK_DEFAULT_PROFILE = "org/apache/spark/log4j2-";
  private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

  private Announce() {}

  /** Logs {@code line} at INFO on {@link #LOGGER}, visible on a shell's WARN console unless configured otherwise. */
  public static void line(String line) {
    showAtInfo();
    LOG.info(line);
  }

  private static synchronized void showAtInfo() {
    if (!(LogManager.getContext(SparkContext.class.getClassLoader(), false) instanceof LoggerContext ctx)) {
      return;  // not log4j 2 core: whatever backs slf4j decides
    }
    if (ctx.getConfigLocation() == null || !ctx.getConfigLocation().toString().contains(SPARK_DEFAULT_PROFILE)) {
      return;  // the user's own configuration decides
    }
    Configuration config = ctx.getConfiguration();
    if (config.getLoggerConfig(LOGGER) != config.getRootLogger()) {
      return;  // configured, by the user or by an earlier line
    }
    config.addLogger(LOGGER, new LoggerConfig(LOGGER, Level.INFO, true));
    ctx.updateLoggers();
  }
}
