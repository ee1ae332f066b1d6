package io.slaqriffle.brain;

import io.slaqriffle.seam.Shim;
import java.io.IOException;
import java.util.Collections;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of {@code io.slaqriffle.SlaqRifflePlugin}. In a driver with no Python (a Java
 * application, spark-sql, a Spark Connect server) it starts the brain ({@link BrainProcess}) while
 * the SparkContext is being built, and holds the constructor's last step until the brain attached
 * (bounded), so the application's first job already runs with SLAQ and Riffle. In a pyspark driver
 * it does nothing: the in-process start hook attaches there, and one brain per application is the
 * rule. A brain that ends before the application does, or stops answering ({@link BrainWatchdog}),
 * fails open: its JVM components give up their holds ({@link Shim#failOpen}) and the application
 * runs on as plain Spark.
 */
public final class BrainPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(BrainPlugin.class);
  static final String[] SWITCHES = {"spark.slaq.enabled", "spark.riffle.enabled"};
  /** Longest the SparkContext constructor waits for the brain to attach (Python start-up included). */
  static final long ATTACH_WAIT_MILLIS = 60_000;
  /** The brain's exit code for a spark.slaq.* or spark.riffle.* value it refused (its ERROR line names it). */
  static final int EXIT_CONFIG = 2;
  /** The brain's exit code when it could not reach its gateway (its one WARN line names the cause). */
  static final int EXIT_NO_GATEWAY = 4;

  private SparkContext sc;
  private BrainHandle handle;
  private volatile BrainProcess brain;
  private volatile BrainWatchdog watchdog;

  @Override
  public Map<String, String> init(SparkContext context, PluginContext pluginContext) {
    this.sc = context;
    SparkConf conf = context.getConf();
    String skip = skipReason(key -> conf.get(key, null), System.getenv(), calledFromPython());
    if (skip != null) {
      LOG.info("SLAQ/Riffle plugin: {}", skip);
      return Collections.emptyMap();
    }
    String python = pythonExecutable(key -> conf.get(key, null), System.getenv());
    handle = new BrainHandle();
    watchdog = BrainWatchdog.start(handle::beats, this::brainStuck);  // first: a brain may end at once
    try {
      brain = BrainProcess.start(python, handle, this::brainEnded);
      LOG.info("SLAQ/Riffle plugin: started the brain ({} -m {}, pid {}) on loopback gateway port {}", python, BrainProcess.MODULE,
          brain.pid(), brain.port());
    } catch (IOException | RuntimeException | LinkageError e) {
      stopWatchdog();
      LOG.warn("SLAQ/Riffle plugin: cannot start the brain `{} -m {}` ({}); set spark.pyspark.driver.python (or "
          + "PYSPARK_DRIVER_PYTHON) to a Python with slaq-riffle installed. The application runs as plain Spark",
          python, BrainProcess.MODULE, e.toString());
    }
    return Collections.emptyMap();
  }

  /** Spark calls this at the end of the SparkContext constructor: the context is complete, so the brain may attach. */
  @Override
  public void registerMetrics(String appId, PluginContext pluginContext) {
    BrainProcess b = brain;
    if (b == null) {
      return;
    }
    handle.contextReady(sc);
    long deadline = System.nanoTime() + ATTACH_WAIT_MILLIS * 1_000_000L;
    try {
      while (!handle.awaitAttached(100)) {
        if (!b.isAlive()) {
          return;  // brainEnded says why
        }
        if (System.nanoTime() > deadline) {
          LOG.warn("SLAQ/Riffle plugin: the brain has not attached after {} s; the application starts without waiting "
              + "(jobs before it attaches run as plain Spark)", ATTACH_WAIT_MILLIS / 1000);
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops the brain (bounded wait) and closes its gateway, whose server thread would otherwise keep the JVM alive. */
  @Override
  public void shutdown() {
    BrainProcess b = brain;
    brain = null;
    stopWatchdog();
    if (b != null) {
      b.stop();
    }
  }

  /** The brain ended on its own (shutdown still closes its gateway). */
  private void brainEnded(int code) {
    stopWatchdog();
    BrainProcess b = brain;
    String tail = b == null ? "" : b.tail();
    if (handle.isAttached()) {
      failOpen("the brain (pid " + (b == null ? "?" : b.pid()) + ") exited with code " + code, "");
    } else if (code == EXIT_NO_GATEWAY) {
      Shim.failOpen(sc, "the brain could not reach its gateway");  // its line said why; Python is not at fault
    } else if (code == EXIT_CONFIG) {
      LOG.warn("SLAQ/Riffle plugin: the brain refused a configuration value (the error above names it); the application "
          + "runs as plain Spark");
      Shim.failOpen(sc, "the brain refused a configuration value");
    } else {
      LOG.warn("SLAQ/Riffle plugin: the brain ended before attaching (exit code {}: {}); the driver's Python needs "
          + "slaq-riffle and pyspark importable (set spark.pyspark.driver.python or PYSPARK_DRIVER_PYTHON to such a "
          + "Python). The application runs as plain Spark", code, tail.isEmpty() ? "no output" : tail);
      Shim.failOpen(sc, "the brain ended before attaching");
    }
  }

  /** The brain beat no more for {@code silentMillis}: it is ended, so it cannot come back half-way, and fails open as a dead one. */
  private void brainStuck(long silentMillis) {
    BrainProcess b = brain;
    if (b == null || !b.isAlive()) {
      return;  // the application is stopping, or the brain exited (brainEnded says so)
    }
    b.end();
    failOpen("the brain (pid " + b.pid() + ") stopped answering: no heartbeat for " + silentMillis / 1000 + " s",
        " (it may have been stopped, swapped out or hung; it is ended)");
  }

  private void stopWatchdog() {
    BrainWatchdog w = watchdog;
    if (w != null) {
      w.stop();
    }
  }

  private void failOpen(String reason, String detail) {
    LOG.warn("SLAQ/Riffle plugin: {}{}; SLAQ and Riffle fail open: held reducers are released, pools open, and the "
        + "application runs on as plain Spark", reason, detail);
    Shim.failOpen(sc, reason);
  }

  /**
   * Why this driver gets no brain from the plugin, or null when it does: nothing is switched on, or
   * the driver is a pyspark driver (its SparkContext is built from Python, whose start hook attaches).
   * A switch set to anything but {@code false} counts as on: the brain's parser then names a bad value.
   */
  static String skipReason(Function<String, String> conf, Map<String, String> env, boolean fromPython) {
    boolean any = false;
    for (String key : SWITCHES) {
      String value = conf.apply(key);
      any |= value != null && !value.trim().equalsIgnoreCase("false");
    }
    if (!any) {
      return "neither spark.slaq.enabled nor spark.riffle.enabled is true; nothing to start";
    }
    if (fromPython || env.containsKey("_PYSPARK_DRIVER_CONN_INFO_PATH")) {
      return "this is a pyspark driver: its in-process start hook attaches SLAQ and Riffle (no second brain)";
    }
    return null;
  }

  /** Spark's own choice of the driver's Python, as for a Python application (PythonRunner's order). */
  static String pythonExecutable(Function<String, String> conf, Map<String, String> env) {
    for (String value : new String[] {conf.apply("spark.pyspark.driver.python"), conf.apply("spark.pyspark.python"),
        env.get("PYSPARK_DRIVER_PYTHON"), env.get("PYSPARK_PYTHON")}) {
      if (value != null && !value.isBlank()) {
        return value;
      }
    }
    return "python3";
  }

  /** The SparkContext is being built from a py4j call: a pyspark driver (launched by python, or by spark-submit app.py). */
  private static boolean calledFromPython() {
    for (StackTraceElement frame : Thread.currentThread().getStackTrace()) {
      if (frame.getClassName().startsWith("py4j.")) {
        return true;
      }
    }
    return false;
  }
}
