package io.slaqriffle.seam;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import org.apache.spark.util.kvstore.KVIndex;

/**
 * A tab's model as the History Server keeps it in an application's key-value store (in memory or on
 * disk, so Jackson-serialisable): one entry per tab, keyed by the tab's prefix, its model saved as JSON
 * once the event log has been replayed. One entry, not one per event, so what the store holds for a tab
 * is as bounded as the model, whatever the application's length.
 */
public final class TabModelEntry {
  @KVIndex
  @JsonProperty("tab")
  private final String tab;
  @JsonProperty("model")
  private final String model;

  @JsonCreator
  public TabModelEntry(@JsonProperty("tab") String tab, @JsonProperty("model") String model) {
    this.tab = tab;
    this.model = model;
  }

  public String tab() {
    return tab;
  }

  public String model() {
    return model;
  }
}
