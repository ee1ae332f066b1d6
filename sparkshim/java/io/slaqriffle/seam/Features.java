package io.slaqriffle.seam;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which {@link Feature}s work on a SparkContext's Spark: the self-check run at attach, and what it
 * found, kept per context (a JVM may run one context after another) until the context stops. A
 * feature whose members are missing is switched off with one WARN per context; the component that
 * needs it asks {@link #available} before it casts or calls anything in the seam classes.
 *
 * <p>Every reach into Spark members that are not public API ({@code private[spark]} classes and
 * members, private fields through reflection) lives in the seam classes of the features' groups,
 * each modelled on Apache Celeborn's {@code SparkUtils}: every member is a {@link Handle} declared
 * beside the accessor that uses it, with the Spark versions it was checked against, and the
 * feature's check iterates those handles. What cannot live there is subclassing: SLAQ's
 * {@code JobsPool}/{@code TokenPool} and Riffle's {@code GateRootPool} extend the scheduler's
 * {@code Pool}, Riffle's listener implements {@code CleanerListener}, the tabs extend
 * {@code SparkUITab}/{@code WebUIPage}; the members those classes override or call are handles of
 * their feature too, so a changed Spark switches the feature off before any of them is loaded.
 *
 * <p>The supported lines are pyproject.toml's pyspark requirement (4.0-4.3). The jar, compiled against
 * 4.3, links on each: every member it references was checked against the bytecode of 4.0.5, 4.1.4,
 * 4.2.1 and 4.3.0, and the few that differ between those lines are reached only through their handles,
 * declared with each line's signature ({@code Handle.Registry.oneOf}, {@code Handle.onlyWith}). "4.3.0" in
 * a note means checked against that release's bytecode and exercised by the live tests; "since" notes
 * come from Spark's source history (JIRA where known). A driver outside the supported lines gets one
 * WARN at attach and this self-check.
 */
public final class Features {
  private static final Logger LOG = LoggerFactory.getLogger(Features.class);
  private static final Map<SparkContext, Features> BY_CONTEXT = new WeakHashMap<>();

  private final Map<Feature, String> missing = Collections.synchronizedMap(new EnumMap<>(Feature.class));
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  private Features() {}

  /** The state of {@code sc}, created on first use (a weak key: it goes with the context). */
  private static Features of(SparkContext sc) {
    synchronized (BY_CONTEXT) {
      return BY_CONTEXT.computeIfAbsent(sc, k -> new Features());
    }
  }

  /** Every feature, checked against the running Spark (the contract the tests hold this project's Spark to). */
  public static Map<Feature, String> selfCheck(SparkContext sc) {
    return selfCheck(sc, EnumSet.allOf(Feature.class));
  }

  /**
   * Checks the handles of {@code features} against the running Spark, at attach, and logs one WARN per
   * feature that is switched off (once per reason per context). Returns the features of those that
   * are missing, with why; {@link #available} answers from the latest check of each feature.
   */
  public static Map<Feature, String> selfCheck(SparkContext sc, Set<Feature> features) {
    Features state = of(sc);
    Map<Feature, String> missing = new EnumMap<>(Feature.class);
    for (Feature f : features) {
      List<String> problems = new ArrayList<>();
      try {
        check(f, sc, problems);
      } catch (RuntimeException | LinkageError e) {
        problems.add(e.toString());
      }
      if (problems.isEmpty()) {
        state.missing.remove(f);
      } else {
        String why = String.join("; ", problems);
        missing.put(f, why);
        state.missing.put(f, why);
        if (state.warned.add(f + why)) {
          LOG.warn("{}: feature {} is switched off on Spark {} ({}): {}.", f.product, f, sc.version(), why, f.consequence);
        }
      }
    }
    return missing;
  }

  private static void check(Feature f, SparkContext sc, List<String> problems) {
    switch (f) {
      case GATE, POOLS -> SparkScheduler.check(f, sc, problems);
      case COMMIT, SKEW_SPLITS -> SparkMapOutput.check(f, sc, problems);
      case LOCAL_DIRS -> SparkLocalDirs.check(sc, problems);
      case UI_TAB, EVENT_LOG, METRICS, CLEANER -> SparkHooks.check(f, sc, problems);
      case CONNECT -> SparkConnect.check(sc, problems);
      default -> throw new IllegalArgumentException(f.toString());
    }
  }

  /** True when the latest {@link #selfCheck} of {@code feature} on {@code sc} found every handle it needs. */
  public static boolean available(SparkContext sc, Feature feature) {
    return !of(sc).missing.containsKey(feature);
  }

  /** Throws when {@code feature} is off on {@code sc}. */
  static void require(SparkContext sc, Feature feature) {
    String why = of(sc).missing.get(feature);
    if (why != null) {
      throw new IllegalStateException("feature " + feature + " is off on this Spark: " + why);
    }
  }

  /** True the first time {@code key} is seen on {@code sc}: a WARN about it is logged once per context. */
  public static boolean firstWarning(SparkContext sc, String key) {
    return of(sc).warned.add(key);
  }
}
