package io.slaqriffle.shim;

import org.apache.spark.SparkContext;

/**
 * Entry point the Python bridge loads into the driver JVM: one instance per SparkContext, holding
 * SLAQ's pools and Riffle's tracker. Python makes a few coarse calls on it per epoch; per-task work
 * stays here in the JVM.
 */
public final class Shim {
  private static final String KEY = "io.slaqriffle.shim.instance";
  private final SparkContext sc;
  private SlaqScheduler slaq;
  private RiffleTracker riffle;

  private Shim(SparkContext sc) {
    this.sc = sc;
  }

  /** The shim of {@code sc}, created on first use (shared across class loaders via a system property). */
  public static synchronized Object install(SparkContext sc) {
    Object existing = System.getProperties().get(KEY);
    if (existing instanceof Shim && ((Shim) existing).sc == sc) {
      return existing;
    }
    if (existing != null) {
      try {
        if (existing.getClass().getMethod("sparkContext").invoke(existing) == sc) {
          return existing;
        }
      } catch (ReflectiveOperationException ignored) {
        // an older shim for a stopped context: replace it
      }
    }
    Shim shim = new Shim(sc);
    System.getProperties().put(KEY, shim);
    return shim;
  }

  public SparkContext sparkContext() {
    return sc;
  }

  public synchronized SlaqScheduler slaq() {
    if (slaq == null) {
      slaq = new SlaqScheduler(sc);
      LossAppender.install(slaq, SparkContext.class.getClassLoader());
    }
    return slaq;
  }

  public synchronized RiffleTracker riffle() throws ReflectiveOperationException {
    if (riffle == null) {
      riffle = new RiffleTracker(sc);
    }
    return riffle;
  }
}
