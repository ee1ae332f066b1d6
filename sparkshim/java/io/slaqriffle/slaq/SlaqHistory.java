package io.slaqriffle.slaq;

import com.fasterxml.jackson.databind.JsonNode;
import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.TabHistory;
import java.util.List;
import org.apache.spark.ui.SparkUI;

/** The SLAQ tab in Spark's History Server: the logged epochs replayed into a {@link SlaqStatus}, as the live driver recorded them. */
public final class SlaqHistory extends TabHistory {
  public SlaqHistory() {
    super(SlaqPools.TAB);
  }

  @Override
  protected void attach(SparkUI ui, List<JsonNode> messages) {
    ui.attachTab(new SlaqTab(ui, replay(messages)));
  }

  /** A model rebuilt from logged {@code epoch_status} trees, oldest first (no log lines: they were logged live). */
  static SlaqStatus replay(List<JsonNode> epochs) {
    SlaqStatus status = new SlaqStatus();
    for (JsonNode epoch : epochs) {
      status.record(Messages.fromTree(epoch, SlaqMessages.EpochStatus.class));
    }
    return status;
  }
}
