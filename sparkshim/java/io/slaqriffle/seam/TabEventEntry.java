package io.slaqriffle.seam;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Locale;
import org.apache.spark.util.kvstore.KVIndex;

/**
 * One {@link TabEvent} as the History Server keeps it in an application's key-value store (in memory
 * or on disk, so Jackson-serialisable): keyed {@code <tab>/<sequence number>}, zero-padded so a tab's
 * entries sort in the order the events were posted.
 */
public final class TabEventEntry {
  @KVIndex
  @JsonProperty("key")
  private final String key;
  @JsonProperty("message")
  private final String message;

  @JsonCreator
  public TabEventEntry(@JsonProperty("key") String key, @JsonProperty("message") String message) {
    this.key = key;
    this.message = message;
  }

  public static TabEventEntry of(String tab, long sequence, String message) {
    return new TabEventEntry(String.format(Locale.ROOT, "%s/%012d", tab, sequence), message);
  }

  /** The lowest and highest keys of {@code tab}'s entries (for a view's {@code first}/{@code last}). */
  public static String first(String tab) {
    return tab + "/";
  }

  public static String last(String tab) {
    return tab + "/~";
  }

  public String key() {
    return key;
  }

  public String message() {
    return message;
  }
}
