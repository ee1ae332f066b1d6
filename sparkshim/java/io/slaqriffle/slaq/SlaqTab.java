package io.slaqriffle.slaq;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;

/** The "SLAQ" tab of the driver's Spark UI (prefix {@code /slaq}), like Spark's own SQLTab and StreamingTab. */
final class SlaqTab extends SparkUITab {
  SlaqTab(SparkUI ui, SlaqStatus status) {
    super(ui, "slaq");
    attachPage(new SlaqPage(this, status));
  }

  @Override
  public String name() {
    return "SLAQ";
  }
}
