package io.slaqriffle.slaq;

import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.Marker;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.filter.AbstractFilter;
import org.apache.logging.log4j.message.Message;
import org.apache.logging.log4j.message.ParameterizedMessage;

/**
 * Hands the per-iteration loss lines of Spark's training code ({@link LossLine}: breeze's INFO line, a
 * Gaussian mixture's INFO line) to the loss appenders of live SparkContexts without changing any logger's
 * configuration, so nothing the user's logging prints changes.
 *
 * <p>These lines are logged below the level most configurations (Spark's shells, {@code setLogLevel("WARN")})
 * enable. An earlier route replaced the breeze logger configs by ones at INFO; but a logger with a config
 * of its own counts as one the user configured to Spark's shell console filter, which then printed every
 * iteration on a WARN console. So this route touches no logger config: it is one configuration-wide filter
 * ({@link Route}), which log4j consults before any logger's level. Asked "is INFO enabled?" for a
 * loss line's logger, on a thread working for a SLAQ job, it answers yes, so the code builds its line; when
 * the line comes it hands it to the capture appenders and answers "no opinion": the logger's own level,
 * filters and appenders then decide what is logged, exactly as without capture. The callers build their
 * line only after that question (breeze's {@code LazyLogger}, Spark's by-name {@code logInfo}), so the one
 * change is that the line is built, and only for fits SLAQ schedules.
 *
 * <p>The filter goes first among configuration-wide filters (so a user's global threshold cannot hide
 * the line from capture) and is removed when the last appender detaches, which leaves the user's own
 * configuration filter in place (the same object). A complete reconfiguration of log4j drops it with
 * the old configuration; the next SparkContext that attaches SLAQ installs it again.
 */
final class LossLogRoute {
  private static Installed installed;

  private LossLogRoute() {}

  /** The route installed in one log4j configuration. */
  private record Installed(Configuration config, Route route) {}

  /** Starts handing the loss lines to {@code appender}. */
  static synchronized void attach(LossAppender appender, LoggerContext ctx) {
    Configuration config = ctx.getConfiguration();
    if (installed == null || installed.config() != config) {
      // first capture, or log4j was reconfigured since (the old configuration is gone with our filter)
      Route route = installed == null ? new Route() : installed.route();
      Filter user = config.getFilter();
      if (user != null) {
        config.removeFilter(user);
      }
      config.addFilter(route);
      if (user != null) {
        config.addFilter(user);
      }
      installed = new Installed(config, route);
    }
    installed.route().appenders.add(appender);
  }

  /** Stops handing lines to {@code appender}; the last one to go removes the filter. */
  static synchronized void detach(LossAppender appender) {
    if (installed == null || !installed.route().appenders.remove(appender)) {
      return;
    }
    if (installed.route().appenders.isEmpty()) {
      installed.config().removeFilter(installed.route());
      installed = null;
    }
  }

  /** The configuration-wide filter: see the class comment. Called on the logging thread, before the event exists. */
  static final class Route extends AbstractFilter {
    private final Set<LossAppender> appenders = new CopyOnWriteArraySet<>();

    Route() {
      start();
    }

    /** slf4j's {@code isInfoEnabled()} (a null message) and {@code info(String)} come here. */
    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object... params) {
      LossLine line = ours(logger, level);
      if (line == null) {
        return Result.NEUTRAL;
      }
      if (msg == null) {
        // "is this level enabled?": yes where a job would get the loss, so the line is built and logged
        return capturing() ? Result.ACCEPT : Result.NEUTRAL;
      }
      hand(line, params == null || params.length == 0 || !line.starts(msg) ? msg : ParameterizedMessage.format(msg, params));
      return Result.NEUTRAL;
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Object msg, Throwable t) {
      LossLine line = msg == null ? null : ours(logger, level);
      if (line != null) {
        hand(line, msg.toString());
      }
      return Result.NEUTRAL;
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Message msg, Throwable t) {
      LossLine line = msg == null ? null : ours(logger, level);
      if (line != null) {
        hand(line, msg.getFormattedMessage());
      }
      return Result.NEUTRAL;
    }

    private LossLine ours(Logger logger, Level level) {
      return logger == null || appenders.isEmpty() ? null : LossLine.of(logger.getName(), level);
    }

    /** Whether the calling thread works for a SLAQ job of some capturing context. */
    private boolean capturing() {
      for (LossAppender a : appenders) {
        if (a.job() != null) {
          return true;
        }
      }
      return false;
    }

    private void hand(LossLine line, String message) {
      for (LossAppender a : appenders) {
        a.append(line, message);
      }
    }

    /** Names the capture appenders (log4j's status output and configuration dumps show a filter by this). */
    @Override
    public String toString() {
      StringBuilder s = new StringBuilder("slaq-loss-route[");
      String sep = "";
      for (LossAppender a : appenders) {
        s.append(sep).append(a.name());
        sep = ",";
      }
      return s.append(']').toString();
    }
  }
}
