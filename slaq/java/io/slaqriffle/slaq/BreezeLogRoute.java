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
 * Hands breeze's INFO iteration lines to the loss appenders of live SparkContexts without changing
 * any logger's configuration, so nothing the user's logging prints changes.
 *
 * <p>Breeze logs its iteration line at INFO on {@code breeze.optimize.*}, which most configurations
 * (Spark's shells, {@code setLogLevel("WARN")}) leave disabled. An earlier route replaced the breeze
 * logger configs by ones at INFO; but a logger with a config of its own counts as one the user
 * configured to Spark's shell console filter, which then printed every iteration on a WARN console.
 * So this route touches no logger config: it is one configuration-wide filter ({@link Route}), which
 * log4j consults before any logger's level. For a breeze logger at INFO or coarser it answers the
 * "is INFO enabled?" question breeze asks before building its line with yes, and when the line comes
 * it hands it to the capture appenders and answers "no opinion": the logger's own level, filters and
 * appenders then decide what is logged, exactly as without capture. Breeze builds its line only after
 * that question (its {@code LazyLogger}), so the only change is that the line is always built.
 *
 * <p>The filter goes first among configuration-wide filters (so a user's global threshold cannot hide
 * the line from capture) and is removed when the last appender detaches, which leaves the user's own
 * configuration filter in place (the same object). A complete reconfiguration of log4j drops it with
 * the old configuration; the next SparkContext that attaches SLAQ installs it again.
 */
final class BreezeLogRoute {
  static final String LOGGER = SlaqNames.BREEZE_LOGGER;

  private static Installed installed;

  private BreezeLogRoute() {}

  /** The route installed in one log4j configuration. */
  private record Installed(Configuration config, Route route) {}

  /** Starts handing breeze's iteration lines (INFO and coarser) to {@code appender}. */
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

  /** Whether {@code name} is a logger on breeze's optimizer hierarchy. */
  static boolean isBreeze(String name) {
    return name.startsWith(LOGGER) && (name.length() == LOGGER.length() || name.charAt(LOGGER.length()) == '.');
  }

  /** The configuration-wide filter: see the class comment. Called on the logging thread, before the event exists. */
  static final class Route extends AbstractFilter {
    private final Set<LossAppender> appenders = new CopyOnWriteArraySet<>();

    Route() {
      start();
    }

    /** slf4j's {@code isInfoEnabled()} (a null message) and {@code info(String)}, breeze's calls, come here. */
    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object... params) {
      if (!ours(logger, level)) {
        return Result.NEUTRAL;
      }
      if (msg == null) {
        return Result.ACCEPT;  // "is INFO enabled?": yes, so breeze builds its line and logs it
      }
      hand(params == null || params.length == 0 || !msg.startsWith(SlaqNames.BREEZE_ITERATION_LINE) ? msg
          : ParameterizedMessage.format(msg, params));
      return Result.NEUTRAL;
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Object msg, Throwable t) {
      if (msg != null && ours(logger, level)) {
        hand(msg.toString());
      }
      return Result.NEUTRAL;
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Message msg, Throwable t) {
      if (msg != null && ours(logger, level)) {
        hand(msg.getFormattedMessage());
      }
      return Result.NEUTRAL;
    }

    private boolean ours(Logger logger, Level level) {
      return level != null && level.isMoreSpecificThan(Level.INFO) && logger != null && isBreeze(logger.getName())
          && !appenders.isEmpty();
    }

    private void hand(String message) {
      for (LossAppender a : appenders) {
        a.append(message);
      }
    }

    /** Names the capture appenders (log4j's status output and configuration dumps show a filter by this). */
    @Override
    public String toString() {
      StringBuilder s = new StringBuilder("slaq-breeze-route[");
      String sep = "";
      for (LossAppender a : appenders) {
        s.append(sep).append(a.name());
        sep = ",";
      }
      return s.append(']').toString();
    }
  }
}
