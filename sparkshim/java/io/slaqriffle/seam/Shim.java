package io.slaqriffle.seam;

import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.Function;
import org.apache.spark.SparkContext;

/**
 * Entry point the Python bridge loads into the driver JVM: one instance per SparkContext, holding
 * that context's components (one per product), each created on first use by its own
 * package's {@code attach}. It names no component class, so a driver that uses only one product
 * loads none of the other's classes. The bridge loads these classes once per JVM, so the static map
 * below is the only registry (nothing is parked in system properties).
 */
public final class Shim {
  private static final Map<SparkContext, Shim> INSTANCES = new WeakHashMap<>();
  private final SparkContext sc;
  private final Map<Class<?>, Object> components = new HashMap<>();

  private Shim(SparkContext sc) {
    this.sc = sc;
  }

  /** A component that can give up everything it enforces, so its application runs on as plain Spark. */
  public interface FailOpen {
    void failOpen(String reason);
  }

  /**
   * Every component of {@code sc} fails open (the brain that drove them is gone); a context with no
   * shim is left alone. Called by the plugin from its own copy of these classes, which is the brain's.
   */
  public static void failOpen(SparkContext sc, String reason) {
    Shim shim;
    synchronized (Shim.class) {
      shim = INSTANCES.get(sc);
    }
    if (shim == null) {
      return;
    }
    java.util.List<Object> all;
    synchronized (shim) {
      all = new java.util.ArrayList<>(shim.components.values());
    }
    for (Object c : all) {
      if (c instanceof FailOpen) {
        ((FailOpen) c).failOpen(reason);
      }
    }
  }

  /** The shim of {@code sc}, created on first use. */
  public static synchronized Shim install(SparkContext sc) {
    return INSTANCES.computeIfAbsent(sc, Shim::new);
  }

  public SparkContext sparkContext() {
    return sc;
  }

  /** This context's {@code type} component, made by {@code create} on first use (a failed create is retried next time). */
  public synchronized <T> T component(Class<T> type, Function<SparkContext, ? extends T> create) {
    Object existing = components.get(type);
    if (existing == null) {
      existing = create.apply(sc);
      components.put(type, existing);
    }
    return type.cast(existing);
  }
}
