package io.slaqriffle.seam;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;

/**
 * A product's tab in a Spark UI (the live driver's or the History Server's), at {@code /<prefix>} with
 * its one {@link TabPage}, attached the way Spark's own SQLTab and StreamingTab are.
 */
public final class StatusTab<S> extends SparkUITab {
  private final String title;

  public StatusTab(SparkUI ui, TabView<S> view, S model) {
    this(ui, view, new TabPage.Shown<>(model, null));
  }

  private StatusTab(SparkUI ui, TabView<S> view, TabPage.Shown<S> shown) {
    super(ui, view.prefix());
    this.title = view.title();
    attachPage(new TabPage<>(this, view, shown));
  }

  /** The tab without a model: its page says {@code why} (its JSON fails with it). */
  public static <S> StatusTab<S> unavailable(SparkUI ui, TabView<S> view, String why) {
    return new StatusTab<>(ui, view, new TabPage.Shown<>(null, why));
  }

  @Override
  public String name() {
    return title;
  }
}
