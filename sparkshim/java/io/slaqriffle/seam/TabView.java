package io.slaqriffle.seam;

import jakarta.servlet.http.HttpServletRequest;

/**
 * What one product's tab is, over its status model {@code S}: its URL prefix (also its events'
 * {@code tab} in the event log), its title in Spark's navigation, its page body and its JSON. The
 * seam's {@link StatusTab} and {@link TabPage} serve it in the live driver's UI, and {@link TabHistory}
 * in the History Server, so each product writes only its own content.
 */
public record TabView<S>(String prefix, String title, Body<S> body, Json<S> json) {
  /** The page's HTML from the model, linking {@code jsonUrl} and reloading every {@code refreshSeconds} s (0: never). */
  @FunctionalInterface
  public interface Body<S> {
    String html(S model, String jsonUrl, int refreshSeconds);
  }

  /** The page's JSON endpoint from the model: a message's JSON (the request's parameters may narrow it). */
  @FunctionalInterface
  public interface Json<S> {
    String json(S model, HttpServletRequest request);
  }
}
