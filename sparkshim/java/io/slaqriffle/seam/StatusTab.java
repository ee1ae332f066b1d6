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
    super(ui, view.prefix());
    this.title = view.title();
    attachPage(new TabPage<>(this, view, model));
  }

  @Override
  public String name() {
    return title;
  }
}
