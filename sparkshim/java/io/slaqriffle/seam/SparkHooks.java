package io.slaqriffle.seam;

import static io.slaqriffle.seam.Feature.CLEANER;
import static io.slaqriffle.seam.Feature.EVENT_LOG;
import static io.slaqriffle.seam.Feature.METRICS;
import static io.slaqriffle.seam.Feature.UI_TAB;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.CleanerListener;
import org.apache.spark.ContextCleaner;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.util.kvstore.KVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function0;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.xml.Node;

/**
 * What the products attach to a running context (all private[spark], as Spark's own SQL and Streaming
 * tabs, sources and plugins use them; checked against 4.0.5, 4.1.4, 4.2.1 and 4.3.0, where only
 * {@code headerSparkPage}'s parameters differ): the tabs in its Spark UI (UI_TAB), the tabs' models on
 * its listener bus and so in the event log (EVENT_LOG), metric sources in its metrics system (METRICS),
 * and a listener of its context cleaner (CLEANER).
 */
public final class SparkHooks {
  private static final Logger LOG = LoggerFactory.getLogger(SparkHooks.class);
  private static final Handle.Registry HANDLES = new Handle.Registry();
  private static final String UI_UTILS = "org.apache.spark.ui.UIUtils";

  private SparkHooks() {}

  static void check(Feature f, SparkContext sc, List<String> problems) {
    // called, not looked up: reflecting over SparkEnv's methods loads types missing from pyspark's jars
    if (f == METRICS && (sc.env() == null || sc.env().metricsSystem() == null)) {
      problems.add("the context has no metrics system");
    }
    HANDLES.check(f, sc, problems);
  }

  // ---------------------------------------------------------------- CLEANER

  /** {@code SparkContext.cleaner()}, {@code ContextCleaner.attachListener(CleanerListener)} (private[spark]). */
  private static final Handle CLEANER_OF = HANDLES.called(Set.of(CLEANER), "org.apache.spark.SparkContext", "cleaner", SparkContext::cleaner);
  private static final Handle ATTACH_LISTENER =
      HANDLES.method(Set.of(CLEANER), "org.apache.spark.ContextCleaner", "attachListener", "org.apache.spark.CleanerListener");

  /** Registers {@code listener} with the context cleaner; false when there is none (reference tracking off) or CLEANER is off. */
  public static boolean attachCleanerListener(SparkContext sc, CleanerListener listener) {
    if (!Features.available(sc, CLEANER)) {
      return false;
    }
    Option<ContextCleaner> cleaner = sc.cleaner();
    if (cleaner.isEmpty()) {
      return false;
    }
    cleaner.get().attachListener(listener);
    return true;
  }

  // ---------------------------------------------------------------- UI_TAB

  /** {@code SparkContext.ui()}, {@code WebUI.attachTab}; {@code SparkUITab}/{@code WebUIPage} are subclassed. */
  private static final Handle UI = HANDLES.called(Set.of(UI_TAB), "org.apache.spark.SparkContext", "ui", SparkContext::ui);
  private static final Handle ATTACH_TAB = HANDLES.method(Set.of(UI_TAB), "org.apache.spark.ui.WebUI", "attachTab", "org.apache.spark.ui.WebUITab");

  /**
   * Adds a tab built by {@code tab} to the driver's Spark UI (nothing when the UI is disabled). A
   * Spark whose UI classes changed loses only the tab, with one WARN; the scheduler is unaffected.
   */
  public static boolean attachTab(SparkContext sc, Function<SparkUI, ? extends SparkUITab> tab) {
    if (!Features.available(sc, UI_TAB)) {
      return false;
    }
    try {
      Option<SparkUI> ui = sc.ui();
      if (ui.isEmpty()) {
        return false;
      }
      ui.get().attachTab(tab.apply(ui.get()));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ/Riffle: a Spark UI tab is switched off on Spark {}: {}. Scheduling and merging are unaffected; the status stays in the driver log.",
          sc.version(), e.toString());
      return false;
    }
  }

  /** {@code UIUtils.prependBaseUri}. */
  private static final Handle PREPEND_BASE_URI = HANDLES.method(Set.of(UI_TAB), UI_UTILS, "prependBaseUri",
      "jakarta.servlet.http.HttpServletRequest", "java.lang.String", "java.lang.String");

  /** {@code path} under the UI's base URI (behind a proxy, the proxy's prefix). */
  public static String prependBaseUri(HttpServletRequest request, String basePath, String path) {
    return UIUtils.prependBaseUri(request, basePath, path);
  }

  /**
   * {@code UIUtils.headerSparkPage(request, title, content, tab, helpText, showVisualization, useDataTables[, useTimeline])}:
   * 4.2 added {@code useTimeline}, so it is called through the handle (a direct call links on one side only).
   */
  private static final Handle HEADER_SPARK_PAGE = HANDLES.oneOf(Set.of(UI_TAB), UI_UTILS, "headerSparkPage",
      Handle.params("jakarta.servlet.http.HttpServletRequest", "java.lang.String", "scala.Function0", "org.apache.spark.ui.SparkUITab",
          "scala.Option", "boolean", "boolean", "boolean"),  // 4.2, 4.3
      Handle.params("jakarta.servlet.http.HttpServletRequest", "java.lang.String", "scala.Function0", "org.apache.spark.ui.SparkUITab",
          "scala.Option", "boolean", "boolean"));  // 4.0, 4.1

  /** A page with Spark's header, navigation and styles around {@code content} (no help text, every flag off). */
  @SuppressWarnings("unchecked")
  public static Seq<Node> sparkPage(HttpServletRequest request, String title, Function0<Seq<Node>> content, SparkUITab tab) {
    Object[] args = {request, title, content, tab, Option.empty(), false, false, false};
    // the 7-parameter form is the 8-parameter one without the last flag
    return (Seq<Node>) HEADER_SPARK_PAGE.call(null, Arrays.copyOf(args, HEADER_SPARK_PAGE.arity()));
  }

  // ---------------------------------------------------------------- EVENT_LOG

  /** {@code SparkContext.listenerBus()}, {@code LiveListenerBus.post} (private[spark]). */
  private static final Handle LISTENER_BUS = HANDLES.called(Set.of(EVENT_LOG), "org.apache.spark.SparkContext", "listenerBus", SparkContext::listenerBus);
  private static final Handle POST = HANDLES.method(Set.of(EVENT_LOG), "org.apache.spark.scheduler.LiveListenerBus", "post",
      "org.apache.spark.scheduler.SparkListenerEvent");

  /**
   * Posts {@code event} on the driver's listener bus, where Spark's event logging listener writes it to
   * the event log (when {@code spark.eventLog.enabled}); false when EVENT_LOG is off. Asynchronous: the
   * bus delivers it to every listener in order, off the caller's thread.
   */
  public static boolean postEvent(SparkContext sc, SparkListenerEvent event) {
    if (!Features.available(sc, EVENT_LOG)) {
      return false;
    }
    try {
      sc.listenerBus().post(event);
      return true;
    } catch (RuntimeException | LinkageError e) {
      if (Features.firstWarning(sc, "postEvent" + e)) {
        LOG.warn("SLAQ/Riffle: cannot post the tabs' models to the event log on Spark {}: {}.", sc.version(), e.toString());
      }
      return false;
    }
  }

  /**
   * {@code SparkUI.store()}, {@code AppStatusStore.store()} (private[spark]; the History Server's
   * {@code AppHistoryServerPlugin} and {@code ElementTrackingStore.write} are used as the SQL tab's history plugin uses them).
   */
  private static final Handle UI_STORE = HANDLES.method(Set.of(EVENT_LOG), "org.apache.spark.ui.SparkUI", "store");
  private static final Handle STATUS_STORE = HANDLES.method(Set.of(EVENT_LOG), "org.apache.spark.status.AppStatusStore", "store");

  /** The key-value store a (live or History Server) Spark UI reads its application's state from. */
  public static KVStore uiStore(SparkUI ui) {
    return ui.store().store();
  }

  // ---------------------------------------------------------------- METRICS

  /**
   * {@code SparkEnv.metricsSystem()} (called in the check), {@code MetricsSystem.registerSource(Source)},
   * {@code Source} (implemented by {@link MetricSource}); since 1.x.
   */
  private static final Handle REGISTER_SOURCE = HANDLES.method(Set.of(METRICS), "org.apache.spark.metrics.MetricsSystem", "registerSource",
      "org.apache.spark.metrics.source.Source");
  private static final Handle SOURCE_NAME = HANDLES.method(Set.of(METRICS), "org.apache.spark.metrics.source.Source", "sourceName");
  private static final Handle METRIC_REGISTRY = HANDLES.method(Set.of(METRICS), "org.apache.spark.metrics.source.Source", "metricRegistry");

  /**
   * Registers {@code registry} as the driver metrics system's source {@code name}, so every configured
   * sink (PrometheusServlet, JMX, CSV, ...) exports its metrics as {@code <namespace>.driver.<name>.*};
   * false when METRICS is off or the context has no running metrics system.
   */
  public static boolean registerSource(SparkContext sc, String name, com.codahale.metrics.MetricRegistry registry) {
    if (!Features.available(sc, METRICS)) {
      return false;
    }
    try {
      SparkEnv env = sc.env();
      if (env == null) {
        return false;
      }
      env.metricsSystem().registerSource(new MetricSource(name, registry));
      return true;
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ/Riffle: the {} metric source is switched off on Spark {}: {}.", name, sc.version(), e.toString());
      return false;
    }
  }
}
