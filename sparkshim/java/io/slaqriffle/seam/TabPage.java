package io.slaqriffle.seam;

import jakarta.servlet.http.HttpServletRequest;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.WebUIPage;
import org.json4s.JValue;
import org.json4s.jackson.JsonMethods$;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction0;
import scala.xml.Node;
import scala.xml.Unparsed;

/**
 * What the SLAQ and Riffle tabs' pages share: a body of HTML inside Spark's own header, navigation and
 * styles, the JSON endpoint from a message's JSON, and bounded integer query parameters. One copy, so
 * both tabs parse {@code ?refresh=N} and fail on bad JSON the same way.
 */
public abstract class TabPage extends WebUIPage {
  /** Longest auto-refresh period accepted from {@code ?refresh=N}. */
  public static final int MAX_REFRESH_SECONDS = 3600;

  protected TabPage() {
    super("");
  }

  /** {@code html} as the page's content, titled {@code title}, in {@code tab}'s place in Spark's navigation. */
  protected static Seq<Node> sparkPage(HttpServletRequest request, String title, String html, SparkUITab tab) {
    return SparkHooks.sparkPage(request, title, new AbstractFunction0<Seq<Node>>() {
      @Override
      public Seq<Node> apply() {
        return new Unparsed(html);
      }
    }, tab);
  }

  /** A message's JSON as the page's JSON endpoint ({@code what} names it in the error). */
  protected static JValue json(String messageJson, String what) {
    try {
      return JsonMethods$.MODULE$.mapper().readValue(messageJson, JValue.class);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot render the " + what + " as JSON: " + e, e);
    }
  }

  /** Query parameter {@code name} when it is an integer in 1..{@code max}; {@code otherwise} when absent or out of range. */
  protected static int positiveParameter(HttpServletRequest request, String name, int max, int otherwise) {
    String value = request.getParameter(name);
    try {
      int v = value == null ? otherwise : Integer.parseInt(value.trim());
      return v > 0 && v <= max ? v : otherwise;
    } catch (NumberFormatException e) {
      return otherwise;
    }
  }

  /** {@code ?refresh=N} in 1..3600 s, else 0 (no reload). */
  protected static int refreshSeconds(HttpServletRequest request) {
    return positiveParameter(request, "refresh", MAX_REFRESH_SECONDS, 0);
  }
}
