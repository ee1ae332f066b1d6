package io.slaqriffle.brain;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The brain's process and the gateway it connects back to. The gateway ({@link BrainGateway}) speaks
 * py4j's pinned-thread {@code ClientServer} protocol (what pyspark connects to by default), bound to
 * the loopback address on an ephemeral port and guarded by a fresh 256-bit secret that only the
 * child's environment carries: the same shape as the gateway Spark itself opens for a Python
 * application, with its connections bounded. The brain's stdout and stderr become driver log lines;
 * closing its stdin asks it to stop. It imports the installed package, never one in the driver's
 * working directory.
 */
final class BrainProcess {
  static final String MODULE = "sparkshim.brain";
  private static final Logger BRAIN_LOG = LoggerFactory.getLogger("io.slaqriffle.brain");
  private static final int TAIL_LINES = 8;
  private static final long STOP_WAIT_SECONDS = 20;

  private final BrainGateway gateway;
  private final Process process;
  private final Thread output;
  private final Deque<String> tail = new ArrayDeque<>();
  private volatile boolean stopping;

  private BrainProcess(BrainGateway gateway, Process process) {
    this.gateway = gateway;
    this.process = process;
    this.output = new Thread(this::forwardOutput, "slaq-riffle-brain-output");
    output.setDaemon(true);
  }

  /**
   * Opens the gateway with {@code handle} as its entry point and starts {@code python -m sparkshim.brain};
   * {@code onExit} gets the exit code when the brain ends without being asked to.
   */
  static BrainProcess start(String python, BrainHandle handle, IntConsumer onExit) throws IOException {
    String secret = newSecret();
    BrainGateway gateway = openGateway(handle, secret);
    Process process;
    try {
      ProcessBuilder pb = new ProcessBuilder(python, "-m", MODULE).redirectErrorStream(true);
      Map<String, String> env = pb.environment();
      env.put("PYSPARK_GATEWAY_PORT", Integer.toString(gateway.getJavaServer().getListeningPort()));
      env.put("PYSPARK_GATEWAY_SECRET", secret);
      env.put("PYSPARK_PIN_THREAD", "true");  // pyspark then speaks ClientServer, as opened above
      env.put("PYTHONUNBUFFERED", "YES");
      // `python -m` puts the working directory first on sys.path, so a driver started in a clone of the project would
      // run that checkout's packages instead of the installed ones: keep it off (Python >= 3.11, as the package
      // requires). PYTHONPATH still counts: Spark's own pyspark zips (below) and a user's entries are deliberate.
      env.put("PYTHONSAFEPATH", "1");
      String path = sparkPythonPath(System.getenv("SPARK_HOME"), env.get("PYTHONPATH"));
      if (path != null) {
        env.put("PYTHONPATH", path);
      }
      process = pb.start();
    } catch (IOException | RuntimeException e) {
      gateway.shutdown();
      throw e;
    }
    BrainProcess brain = new BrainProcess(gateway, process);
    brain.output.start();
    Thread waiter = new Thread(() -> {
      int code = waitFor(process);
      gateway.shutdown();  // nothing but the brain may use it: an ended brain leaves nothing listening
      try {
        brain.output.join(2000);  // its last lines (the reason it ended) come first
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (!brain.stopping) {
        onExit.accept(code);
      }
    }, "slaq-riffle-brain-waiter");
    waiter.setDaemon(true);
    waiter.start();
    return brain;
  }

  private static BrainGateway openGateway(BrainHandle handle, String secret) {
    // py4j resolves the brain's class names through the serving threads' context class loader, which
    // they inherit from this thread: make it the one that holds the shim (--jars puts it in a child
    // of Spark's loader).
    Thread current = Thread.currentThread();
    ClassLoader previous = current.getContextClassLoader();
    current.setContextClassLoader(BrainProcess.class.getClassLoader());
    try {
      return BrainGateway.open(handle, secret);
    } finally {
      current.setContextClassLoader(previous);
    }
  }

  static String newSecret() {
    byte[] bytes = new byte[32];
    new SecureRandom().nextBytes(bytes);
    StringBuilder hex = new StringBuilder();
    for (byte b : bytes) {
      hex.append(String.format("%02x", b));
    }
    return hex.toString();
  }

  /** A Spark distribution's own pyspark and py4j (SPARK_HOME/python/lib/*.zip) ahead of {@code pythonPath}; null when there are none. */
  static String sparkPythonPath(String sparkHome, String pythonPath) {
    if (sparkHome == null) {
      return null;
    }
    File[] zips = new File(sparkHome, "python/lib").listFiles((dir, name) -> name.endsWith(".zip")
        && (name.startsWith("pyspark") || name.startsWith("py4j")));
    if (zips == null || zips.length == 0) {
      return null;
    }
    List<String> parts = new ArrayList<>();
    for (File zip : zips) {
      parts.add(zip.getPath());
    }
    if (pythonPath != null && !pythonPath.isEmpty()) {
      parts.add(pythonPath);
    }
    return String.join(File.pathSeparator, parts);
  }

  long pid() {
    return process.pid();
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** The gateway's port on the loopback address. */
  int port() {
    return gateway.getJavaServer().getListeningPort();
  }

  /** Ends the brain at once (SIGKILL ends a stopped process too) and closes its gateway; its exit is not reported. */
  void end() {
    stopping = true;
    process.destroyForcibly();
    gateway.shutdown();
  }

  /** The brain's last few output lines, for the message that says why it ended. */
  synchronized String tail() {
    return String.join(" | ", tail);
  }

  /** Asks the brain to stop (its stdin closes), waits a bounded time, then ends it and the gateway. */
  void stop() {
    stopping = true;
    if (!process.isAlive()) {
      gateway.shutdown();
      return;
    }
    try {
      process.getOutputStream().close();
      if (!process.waitFor(STOP_WAIT_SECONDS, TimeUnit.SECONDS)) {
        BRAIN_LOG.warn("the brain did not stop within {} s; ending it", STOP_WAIT_SECONDS);
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      }
      output.join(2000);
    } catch (IOException e) {
      process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      gateway.shutdown();
    }
  }

  private void forwardOutput() {
    String level = "INFO";
    try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        int space = line.indexOf(' ');
        String first = space > 0 ? line.substring(0, space) : "";
        if (first.equals("DEBUG") || first.equals("INFO") || first.equals("WARNING") || first.equals("ERROR")
            || first.equals("CRITICAL")) {
          level = first;
          line = line.substring(space + 1);
        }  // other lines (a traceback) continue the previous record
        remember(line);
        log(level, line);
      }
    } catch (IOException e) {
      BRAIN_LOG.debug("brain output closed", e);
    }
  }

  private synchronized void remember(String line) {
    tail.addLast(line);
    if (tail.size() > TAIL_LINES) {
      tail.removeFirst();
    }
  }

  private static void log(String level, String line) {
    switch (level) {
      case "DEBUG" -> BRAIN_LOG.debug(line);
      case "WARNING" -> BRAIN_LOG.warn(line);
      case "ERROR", "CRITICAL" -> BRAIN_LOG.error(line);
      default -> BRAIN_LOG.info(line);
    }
  }

  private static int waitFor(Process process) {
    while (true) {
      try {
        return process.waitFor();
      } catch (InterruptedException e) {
        // the waiter lives as long as the brain
      }
    }
  }
}
