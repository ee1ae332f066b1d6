package io.slaqriffle.riffle;

import com.fasterxml.jackson.databind.JsonNode;
import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.TabHistory;
import java.util.List;
import org.apache.spark.ui.SparkUI;

/** The Riffle tab in Spark's History Server: the logged changes replayed into a {@link RiffleStatus}, as the live driver applied them. */
public final class RiffleHistory extends TabHistory {
  public RiffleHistory() {
    super(RiffleTracker.TAB);
  }

  @Override
  protected void attach(SparkUI ui, List<JsonNode> messages) {
    ui.attachTab(new RiffleTab(ui, replay(messages)));
  }

  /** A model rebuilt from logged {@link RiffleDelta} trees, oldest first. */
  static RiffleStatus replay(List<JsonNode> deltas) {
    RiffleStatus status = new RiffleStatus();
    for (JsonNode delta : deltas) {
      status.record(Messages.fromTree(delta, RiffleDelta.class));
    }
    return status;
  }
}
