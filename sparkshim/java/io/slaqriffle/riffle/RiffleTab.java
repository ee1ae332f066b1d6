package io.slaqriffle.riffle;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;

/** The "Riffle" tab of the driver's Spark UI (prefix {@code /riffle}), built like the SLAQ tab. */
final class RiffleTab extends SparkUITab {
  RiffleTab(SparkUI ui, RiffleStatus status) {
    super(ui, "riffle");
    attachPage(new RifflePage(this, status));
  }

  @Override
  public String name() {
    return "Riffle";
  }
}
