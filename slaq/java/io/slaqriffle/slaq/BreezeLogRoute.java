package io.slaqriffle.slaq;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.AppenderRef;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.logging.log4j.core.filter.AbstractFilter;

/**
 * Routes breeze's INFO iteration lines to the loss appenders of live SparkContexts without changing
 * what any other appender receives.
 *
 * <p>Breeze logs its iteration line at INFO on {@code breeze.optimize.*}, which most configurations
 * (Spark's shells, {@code setLogLevel("WARN")}) filter out. While at least one appender is attached,
 * each logger config on the {@code breeze.optimize} hierarchy is replaced by a non-additive one at
 * INFO (or finer) that holds the capture appenders plus a copy of every appender the original config
 * reached (its own and its additive ancestors'), each behind a gate that applies the original
 * config's level, read live, and the original config and reference filters. So the user's appenders
 * see exactly the events they saw before. When the last appender detaches, the original configs are
 * put back (the same objects, untouched).
 *
 * <p>Limitation: while capture is on, raising the original level above INFO verbosity (e.g. DEBUG
 * on {@code breeze.optimize}) shows only INFO and coarser breeze events until capture ends.
 */
final class BreezeLogRoute {
  static final String LOGGER = SlaqNames.BREEZE_LOGGER;

  private static Installed installed;

  private BreezeLogRoute() {}

  /** One install into one log4j configuration. */
  private record Installed(LoggerContext ctx, Configuration config, Map<String, LoggerConfig> originals,
                           Map<String, LoggerConfig> replacements, Set<Appender> appenders) {}

  /** Starts routing breeze's iteration lines (INFO and coarser) to {@code appender}. */
  static synchronized void attach(Appender appender, LoggerContext ctx) {
    Configuration config = ctx.getConfiguration();
    if (installed == null || installed.config() != config) {
      // first capture, or log4j was reconfigured since (the old configuration is gone with our configs)
      Set<Appender> carried = installed == null ? new LinkedHashSet<>() : installed.appenders();
      installed = install(ctx, config, carried);
    }
    installed.appenders().add(appender);
    for (LoggerConfig replacement : installed.replacements().values()) {
      replacement.addAppender(appender, Level.INFO, null);
    }
    ctx.updateLoggers();
  }

  /** Stops routing to {@code appender}; the last one to go restores the original logger configs. */
  static synchronized void detach(Appender appender) {
    if (installed == null || !installed.appenders().remove(appender)) {
      return;
    }
    for (LoggerConfig replacement : installed.replacements().values()) {
      replacement.removeAppender(appender.getName());
    }
    if (installed.appenders().isEmpty()) {
      restore(installed);
      installed = null;
    } else {
      installed.ctx().updateLoggers();
    }
  }

  private static Installed install(LoggerContext ctx, Configuration config, Set<Appender> carried) {
    Set<String> names = new LinkedHashSet<>();
    names.add(LOGGER);
    for (String name : config.getLoggers().keySet()) {
      if (name.startsWith(LOGGER + ".")) {
        names.add(name);
      }
    }
    Map<String, LoggerConfig> originals = new LinkedHashMap<>();
    Map<String, LoggerConfig> replacements = new LinkedHashMap<>();
    for (String name : names) {  // all built from the untouched configuration, then swapped in
      originals.put(name, config.getLoggers().get(name));
      replacements.put(name, replacement(name, config.getLoggerConfig(name), config));
    }
    for (String name : names) {
      if (originals.get(name) != null) {
        config.removeLogger(name);
      }
      LoggerConfig replacement = replacements.get(name);
      for (Appender a : carried) {
        replacement.addAppender(a, Level.INFO, null);
      }
      config.addLogger(name, replacement);
    }
    return new Installed(ctx, config, originals, replacements, carried);
  }

  private static void restore(Installed state) {
    Configuration config = state.config();
    for (Map.Entry<String, LoggerConfig> e : state.replacements().entrySet()) {
      if (config.getLoggers().get(e.getKey()) == e.getValue()) {
        config.removeLogger(e.getKey());
      }
      LoggerConfig original = state.originals().get(e.getKey());
      if (original != null) {
        config.addLogger(e.getKey(), original);
      }
    }
    state.ctx().updateLoggers();
  }

  /** A non-additive config for {@code name} forwarding to everything {@code effective} reached, gated as before. */
  private static LoggerConfig replacement(String name, LoggerConfig effective, Configuration config) {
    Level level = effective.getLevel().isMoreSpecificThan(Level.INFO) ? Level.INFO : effective.getLevel();
    List<Property> properties = effective.getPropertyList();
    LoggerConfig mine = LoggerConfig.newBuilder()
        .withLoggerName(name)
        .withLevel(level)
        .withAdditivity(false)
        .withIncludeLocation(Boolean.toString(effective.isIncludeLocation()))
        .withProperties(properties == null ? null : properties.toArray(new Property[0]))
        .withConfig(config)
        .build();
    List<Filter> configFilters = new ArrayList<>();
    for (LoggerConfig c = effective; c != null; c = c.getParent()) {
      if (c.getFilter() != null) {
        configFilters.add(c.getFilter());
      }
      for (Map.Entry<String, Appender> a : c.getAppenders().entrySet()) {
        AppenderRef ref = refNamed(c, a.getKey());
        List<Filter> filters = new ArrayList<>(configFilters);
        if (ref != null && ref.getFilter() != null) {
          filters.add(ref.getFilter());
        }
        mine.addAppender(a.getValue(), ref == null ? null : ref.getLevel(), new Gate(effective, filters));
      }
      if (!c.isAdditive()) {
        break;
      }
    }
    return mine;
  }

  private static AppenderRef refNamed(LoggerConfig c, String appenderName) {
    for (AppenderRef ref : c.getAppenderRefs()) {
      if (ref.getRef().equals(appenderName)) {
        return ref;
      }
    }
    return null;
  }

  /** Lets an event through only if the original config would have passed it to this appender. */
  static final class Gate extends AbstractFilter {
    private final LoggerConfig original;
    private final List<Filter> filters;

    Gate(LoggerConfig original, List<Filter> filters) {
      this.original = original;
      this.filters = List.copyOf(filters);
      start();
    }

    @Override
    public Result filter(LogEvent event) {
      if (!event.getLevel().isMoreSpecificThan(original.getLevel())) {
        return Result.DENY;
      }
      for (Filter f : filters) {
        if (f.filter(event) == Result.DENY) {
          return Result.DENY;
        }
      }
      return Result.NEUTRAL;
    }
  }
}
