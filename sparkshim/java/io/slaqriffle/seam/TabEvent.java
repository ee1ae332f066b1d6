package io.slaqriffle.seam;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * One change of a tab's model on Spark's listener bus: {@code tab} ({@code "slaq"} or {@code "riffle"})
 * and the change as that tab's message tree (SLAQ: one {@code epoch_status}; Riffle: a
 * {@code RiffleDelta}). Spark's event logging listener writes it to the event log with Spark's own
 * Jackson mapper ({@code "Event"} names this class) and the History Server reads it back with the same
 * mapper, so this class is what both sides agree on; the message inside stays in the tabs' own encoding.
 */
public final class TabEvent implements SparkListenerEvent {
  private final String tab;
  private final JsonNode message;

  @JsonCreator
  public TabEvent(@JsonProperty("tab") String tab, @JsonProperty("message") JsonNode message) {
    this.tab = tab;
    this.message = message;
  }

  /** {@code value} (a message or a record of messages) as tab {@code tab}'s event. */
  public static TabEvent of(String tab, Object value) {
    return new TabEvent(tab, Messages.tree(value));
  }

  @JsonProperty("tab")
  public String tab() {
    return tab;
  }

  @JsonProperty("message")
  public JsonNode message() {
    return message;
  }
}
