package io.slaqriffle.seam;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVStore;
import org.apache.spark.util.kvstore.KVStoreIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A tab in Spark's History Server, rebuilt from a finished (or running) application's event log, the
 * way Spark's SQL tab is: the History Server replays the log through {@link #createListeners}'s
 * listener, which keeps each of the tab's {@link TabEvent}s in the application's store, then calls
 * {@link #setupUI}, which replays the stored events into the same model class the live tab reads and
 * attaches the tab when there is any. Listed in {@code META-INF/services/org.apache.spark.status.AppHistoryServerPlugin};
 * the History Server finds it when the shim jar is on its class path.
 */
public abstract class TabHistory implements AppHistoryServerPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(TabHistory.class);
  private final String tab;

  protected TabHistory(String tab) {
    this.tab = tab;
  }

  /** Rebuilds the model from {@code messages} (oldest first) and attaches the tab to {@code ui}. */
  protected abstract void attach(SparkUI ui, List<JsonNode> messages);

  @Override
  public scala.collection.immutable.Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    SparkListener keeper = new SparkListener() {
      private long sequence;

      @Override
      public void onOtherEvent(SparkListenerEvent event) {
        if (event instanceof TabEvent e && tab.equals(e.tab())) {
          store.write(TabEventEntry.of(tab, sequence++, e.message().toString()));
        }
      }
    };
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(keeper)).toList();
  }

  @Override
  public void setupUI(SparkUI ui) {
    try {
      List<JsonNode> messages = stored(SparkHooks.uiStore(ui), tab);
      if (!messages.isEmpty()) {
        attach(ui, messages);
      }
    } catch (RuntimeException | LinkageError e) {  // the application's other tabs must still show
      LOG.warn("SLAQ/Riffle: the {} tab of {} cannot be shown: {}", tab, ui.appId(), e.toString());
    }
  }

  /** {@code tab}'s stored messages, oldest first. */
  public static List<JsonNode> stored(KVStore store, String tab) {
    List<JsonNode> messages = new ArrayList<>();
    try (KVStoreIterator<TabEventEntry> it = store.view(TabEventEntry.class).first(TabEventEntry.first(tab))
        .last(TabEventEntry.last(tab)).closeableIterator()) {
      while (it.hasNext()) {
        messages.add(Messages.parse(it.next().message()));
      }
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the " + tab + " events from the store: " + e, e);
    }
    return messages;
  }
}
