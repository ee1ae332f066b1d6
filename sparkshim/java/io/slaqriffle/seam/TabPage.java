package io.slaqriffle.seam;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Locale;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.WebUIPage;
import org.json4s.JValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.json4s.jackson.JsonMethods$;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction0;
import scala.xml.Node;
import scala.xml.Unparsed;

/**
 * A product tab's one page, at {@code /<prefix>/} (the {@link TabView}'s body inside Spark's own header,
 * navigation and styles, from Spark's {@code UIUtils.headerSparkPage}) and {@code /<prefix>/json/} (its
 * message's JSON). One copy, so both tabs parse {@code ?refresh=N} and fail on bad JSON the same way.
 */
public final class TabPage<S> extends WebUIPage {
  private static final Logger LOG = LoggerFactory.getLogger(TabPage.class);
  /** Longest auto-refresh period accepted from {@code ?refresh=N}. */
  public static final int MAX_REFRESH_SECONDS = 3600;
  private final SparkUITab tab;
  private final TabView<S> view;
  private final Shown<S> shown;

  /** What the page shows: its model, or (model null) why there is none. */
  record Shown<S>(S model, String unavailable) {}

  TabPage(SparkUITab tab, TabView<S> view, Shown<S> shown) {
    super("");
    this.tab = tab;
    this.view = view;
    this.shown = shown;
  }

  /**
   * The page, for a request to it. Spark's {@code WebUI.attachPage} attaches the page's handler ({@code /<prefix>})
   * before its JSON's ({@code /<prefix>/json}), so in between a request for the JSON reaches this page (the longest
   * prefix attached): refused (Spark answers 400 with the message), never answered with the page's HTML as a 200.
   */
  @Override
  public Seq<Node> render(HttpServletRequest request) {
    if (forJson(request.getServletPath() + (request.getPathInfo() == null ? "" : request.getPathInfo()))) {
      throw new IllegalArgumentException("the " + view.title() + " tab's JSON is being attached; ask again");
    }
    String jsonUrl = SparkHooks.prependBaseUri(request, tab.basePath(), "/" + view.prefix() + "/json/");
    String html = body(jsonUrl, refreshSeconds(request));
    return SparkHooks.sparkPage(request, view.title(), new AbstractFunction0<Seq<Node>>() {
      @Override
      public Seq<Node> apply() {
        return new Unparsed(html);
      }
    }, tab);
  }

  /** The view's body, or a notice saying why there is none (the rest of the UI is untouched). */
  private String body(String jsonUrl, int refreshSeconds) {
    if (shown.model() == null) {
      return notice(shown.unavailable());
    }
    try {
      return view.body().html(shown.model(), jsonUrl, refreshSeconds);
    } catch (RuntimeException e) {
      LOG.warn("SLAQ/Riffle: the {} tab cannot render: {}", view.prefix(), e.toString());
      return notice("The " + view.title() + " tab cannot render: " + e);
    }
  }

  @Override
  public JValue renderJson(HttpServletRequest request) {
    if (shown.model() == null) {
      throw new IllegalStateException(shown.unavailable());
    }
    String messageJson = view.json().json(shown.model(), request);
    try {
      return JsonMethods$.MODULE$.mapper().readValue(messageJson, JValue.class);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot render the " + view.title() + " status as JSON: " + e, e);
    }
  }

  /** Whether a request's path below the tab (servlet path and path info) names the tab's JSON ({@code /json}, {@code /json/...}). */
  static boolean forJson(String path) {
    return path.equals("/json") || path.startsWith("/json/");
  }

  /** A page body that only says {@code what} (escaped). */
  static String notice(String what) {
    return "<p class=\"alert alert-warning\" id=\"tab-unavailable\">" + Html.escape(what) + "</p>";
  }

  /** Query parameter {@code name} when it is an integer in 1..{@code max}; {@code otherwise} when absent or out of range. */
  public static int positiveParameter(HttpServletRequest request, String name, int max, int otherwise) {
    String value = request.getParameter(name);
    try {
      int v = value == null ? otherwise : Integer.parseInt(value.trim());
      return v > 0 && v <= max ? v : otherwise;
    } catch (NumberFormatException e) {
      return otherwise;
    }
  }

  /** {@code ?refresh=N} in 1..3600 s, else 0 (no reload). */
  static int refreshSeconds(HttpServletRequest request) {
    return positiveParameter(request, "refresh", MAX_REFRESH_SECONDS, 0);
  }

  /** The end of a page's summary line: its JSON link (at {@code jsonUrl}) and the auto-refresh link. */
  public static String summaryLinks(String jsonUrl) {
    return "<a href=\"" + Html.escape(jsonUrl) + "\">JSON</a> &middot; auto-refresh: <a href=\"?refresh=5\">every 5 s</a>";
  }

  /** The script that reloads the page every {@code refreshSeconds} s; empty when 0. */
  public static String reloadScript(int refreshSeconds) {
    return refreshSeconds > 0
        ? String.format(Locale.ROOT, "<script>setTimeout(function () { location.reload(); }, %d);</script>", refreshSeconds * 1000)
        : "";
  }
}
