package io.slaqriffle.seam;

import java.util.Map;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.message.Message;
import org.apache.logging.log4j.message.SimpleMessage;
import org.apache.logging.log4j.spi.ExtendedLogger;
import org.apache.spark.SparkContext;

/**
 * The driver-side end of SLAQ's and Riffle's Python logging ({@code sparkshim.driver_log}): each Python record
 * becomes a log4j event on the logger of the same name ({@code slaq.loop}, {@code riffle.driver}, ...), so it gets
 * the driver log's time, level and layout and obeys the user's log4j2 configuration, like Spark's own lines.
 *
 * <p>Levels are Python's numbers (DEBUG 10, INFO 20, WARNING 30, ERROR 40, CRITICAL 50), mapped to log4j's. It
 * takes no lock of its own: Python threads call it concurrently, each on its own py4j connection.
 */
public final class PythonLog {
  public PythonLog() {}

  private static org.apache.logging.log4j.spi.LoggerContext context() {
    return LogManager.getContext(SparkContext.class.getClassLoader(), false);
  }

  /** Logs {@code message} (already formatted, traceback included) on log4j logger {@code name} at Python level {@code level}. */
  public void log(String name, int level, String message) {
    ExtendedLogger logger = context().getLogger(name);
    Level mapped = level(level);
    if (logger.isEnabled(mapped)) {
      logger.log(mapped, (Message) new SimpleMessage(message));  // never a pattern: a "{}" in a job's name stays as it is
    }
  }

  /**
   * The finest Python level the log4j configuration lets through anywhere at or below logger {@code name} (its
   * own level, or that of a logger configured under it, such as {@code riffle.driver} under {@code riffle}), so
   * Python creates only the records some logger wants.
   */
  public int threshold(String name) {
    if (context() instanceof LoggerContext ctx) {
      Configuration config = ctx.getConfiguration();
      Level finest = config.getLoggerConfig(name).getLevel();
      for (Map.Entry<String, LoggerConfig> e : config.getLoggers().entrySet()) {
        Level own = e.getValue().getLevel();
        if (e.getKey().startsWith(name + ".") && own != null && own.isLessSpecificThan(finest)) {
          finest = own;
        }
      }
      return python(finest);
    }
    ExtendedLogger logger = context().getLogger(name);
    for (Level l : new Level[] {Level.TRACE, Level.DEBUG, Level.INFO, Level.WARN, Level.ERROR, Level.FATAL}) {
      if (logger.isEnabled(l)) {
        return python(l);
      }
    }
    return python(Level.OFF);
  }

  static Level level(int python) {
    if (python >= 50) {
      return Level.FATAL;
    }
    if (python >= 40) {
      return Level.ERROR;
    }
    if (python >= 30) {
      return Level.WARN;
    }
    if (python >= 20) {
      return Level.INFO;
    }
    return python >= 10 ? Level.DEBUG : Level.TRACE;
  }

  static int python(Level level) {
    if (level == null || level.intLevel() == Level.OFF.intLevel()) {
      return 60;  // above CRITICAL: Python creates no record
    }
    if (level.isMoreSpecificThan(Level.FATAL)) {
      return 50;
    }
    if (level.isMoreSpecificThan(Level.ERROR)) {
      return 40;
    }
    if (level.isMoreSpecificThan(Level.WARN)) {
      return 30;
    }
    if (level.isMoreSpecificThan(Level.INFO)) {
      return 20;
    }
    return level.isMoreSpecificThan(Level.DEBUG) ? 10 : 5;
  }
}
