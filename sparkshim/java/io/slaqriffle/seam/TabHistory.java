package io.slaqriffle.seam;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
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
 * {@link #setupUI}, which replays the stored events (each an {@code M}) into a new model {@code S} of the
 * class the live tab reads and attaches the tab when there is any. Each product's subclass is listed in
 * {@code META-INF/services/org.apache.spark.status.AppHistoryServerPlugin}; the History Server finds it
 * when the shim jar is on its class path.
 */
public abstract class TabHistory<S, M> implements AppHistoryServerPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(TabHistory.class);
  private final TabView<S> view;
  private final Class<M> type;
  private final Supplier<S> model;
  private final BiConsumer<S, M> record;

  /** {@code view}'s tab, its model made by {@code model} and fed each logged {@code type} message by {@code record}. */
  protected TabHistory(TabView<S> view, Class<M> type, Supplier<S> model, BiConsumer<S, M> record) {
    this.view = view;
    this.type = type;
    this.model = model;
    this.record = record;
  }

  @Override
  public scala.collection.immutable.Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    SparkListener keeper = new SparkListener() {
      private long sequence;

      @Override
      public void onOtherEvent(SparkListenerEvent event) {
        if (event instanceof TabEvent e && view.prefix().equals(e.tab())) {
          store.write(TabEventEntry.of(view.prefix(), sequence++, e.message().toString()));
        }
      }
    };
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(keeper)).toList();
  }

  @Override
  public void setupUI(SparkUI ui) {
    try {
      List<JsonNode> messages = stored(SparkHooks.uiStore(ui), view.prefix());
      if (!messages.isEmpty()) {
        ui.attachTab(new StatusTab<>(ui, view, replay(messages)));
      }
    } catch (RuntimeException | LinkageError e) {  // the application's other tabs must still show
      LOG.warn("SLAQ/Riffle: the {} tab of {} cannot be shown: {}", view.prefix(), ui.appId(), e.toString());
    }
  }

  /** A model rebuilt from logged messages, oldest first, as the live driver recorded them (no log lines: they were logged live). */
  S replay(List<JsonNode> messages) {
    S rebuilt = model.get();
    for (JsonNode message : messages) {
      record.accept(rebuilt, Messages.fromTree(message, type));
    }
    return rebuilt;
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
