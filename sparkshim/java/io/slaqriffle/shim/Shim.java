package io.slaqriffle.shim;

import java.util.Map;
import java.util.WeakHashMap;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Entry point the Python bridge loads into the driver JVM: one instance per SparkContext, holding
 * SLAQ's pools and Riffle's tracker. Python makes a few coarse calls on it per epoch; per-task work
 * stays here in the JVM. The bridge loads these classes once per JVM, so the static map below is
 * the only registry (nothing is parked in system properties).
 */
public final class Shim {
  private static final Logger LOG = LoggerFactory.getLogger(Shim.class);
  private static final Map<SparkContext, Shim> INSTANCES = new WeakHashMap<>();
  private final SparkContext sc;
  private SlaqPools slaq;
  private RiffleTracker riffle;

  private Shim(SparkContext sc) {
    this.sc = sc;
  }

  /** The shim of {@code sc}, created on first use. */
  public static synchronized Shim install(SparkContext sc) {
    return INSTANCES.computeIfAbsent(sc, Shim::new);
  }

  public SparkContext sparkContext() {
    return sc;
  }

  public synchronized SlaqPools slaq() {
    if (slaq == null) {
      slaq = new SlaqPools(sc);
      try {
        LossAppender.attach(slaq, sc);
      } catch (RuntimeException | LinkageError e) {  // e.g. a logging backend other than log4j2
        LOG.warn("SLAQ: spark.ml loss capture is off ({}); losses reported through slaq still count", e.toString());
      }
    }
    return slaq;
  }

  public synchronized RiffleTracker riffle() {
    if (riffle == null) {
      riffle = new RiffleTracker(sc);
    }
    return riffle;
  }
}
