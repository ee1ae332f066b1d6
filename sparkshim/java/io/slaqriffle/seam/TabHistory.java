package io.slaqriffle.seam;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.AbstractFunction0;
import scala.runtime.BoxedUnit;

/**
 * A tab in Spark's History Server, rebuilt from a finished (or running) application's event log the way
 * Spark's SQL tab is. The History Server replays the log through {@link #createListeners}'s listener,
 * which applies each of the tab's {@link TabEvent}s (each an {@code M}) to one model {@code S} of the
 * class the live tab reads, through the method the live driver applies them with; when the replay ends
 * (the store's flush) it saves that model ({@code D}, as JSON) as the tab's one {@link TabModelEntry}.
 * {@link #setupUI} restores it and attaches the tab when there is one. The model is as bounded as the
 * live one, so the History Server's memory for a tab does not grow with the application's length. Each
 * product's subclass is listed in {@code META-INF/services/org.apache.spark.status.AppHistoryServerPlugin};
 * the History Server finds it when the shim jar is on its class path.
 */
public abstract class TabHistory<S, M, D> implements AppHistoryServerPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(TabHistory.class);
  private final TabView<S> view;
  private final Class<M> type;
  private final Supplier<S> model;
  private final BiConsumer<S, M> record;
  private final Class<D> saved;
  private final Function<S, D> save;
  private final Function<D, S> restore;

  /**
   * {@code view}'s tab: its model made by {@code model} and fed each logged {@code type} message by
   * {@code record}; kept in the store as {@code save} makes it (a {@code saved}) and rebuilt by {@code restore}.
   */
  protected TabHistory(TabView<S> view, Class<M> type, Supplier<S> model, BiConsumer<S, M> record, Class<D> saved, Function<S, D> save,
      Function<D, S> restore) {
    this.view = view;
    this.type = type;
    this.model = model;
    this.record = record;
    this.saved = saved;
    this.save = save;
    this.restore = restore;
  }

  @Override
  public scala.collection.immutable.Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    Replay replay = new Replay();
    store.onFlush(new AbstractFunction0<BoxedUnit>() {
      @Override
      public BoxedUnit apply() {
        replay.saveTo(store);
        return BoxedUnit.UNIT;
      }
    });
    return scala.jdk.javaapi.CollectionConverters.asScala(List.<SparkListener>of(replay)).toList();
  }

  /** The listener of one replay: the tab's events applied to one model, saved when the replay ends. */
  private final class Replay extends SparkListener {
    private final S replayed = model.get();
    private long applied;
    private long unreadable;
    private String firstError;

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
      if (event instanceof TabEvent e && view.prefix().equals(e.tab())) {
        try {
          record.accept(replayed, Messages.fromTree(e.message(), type));
          applied++;
        } catch (RuntimeException bad) {  // a damaged or forged event: the others still make the tab
          if (unreadable++ == 0) {
            firstError = bad.getMessage();
          }
        }
      }
    }

    void saveTo(ElementTrackingStore store) {
      if (unreadable > 0) {
        LOG.warn("SLAQ/Riffle: {} of the {} tab's events could not be read and were skipped; the first: {}", unreadable,
            view.prefix(), firstError);
      }
      if (applied > 0) {
        store.write(new TabModelEntry(view.prefix(), Messages.text(save.apply(replayed)))); // no JSON tree: several times the model
      }
    }
  }

  @Override
  public void setupUI(SparkUI ui) {
    TabModelEntry entry;
    try {
      entry = SparkHooks.uiStore(ui).read(TabModelEntry.class, view.prefix());
    } catch (NoSuchElementException e) {  // the application ran without this product
      return;
    } catch (Exception | LinkageError e) {
      unavailable(ui, "cannot read its model from the store: " + e);
      return;
    }
    S restored;
    try {
      restored = restore.apply(Messages.read(entry.model(), saved));
    } catch (RuntimeException e) {
      unavailable(ui, "cannot rebuild its model: " + e.getMessage());
      return;
    }
    ui.attachTab(new StatusTab<>(ui, view, restored));
  }

  /** A tab that says why it cannot show the application (the application's other tabs still show). */
  private void unavailable(SparkUI ui, String why) {
    LOG.warn("SLAQ/Riffle: the {} tab of {} {}", view.prefix(), ui.appId(), why);
    try {
      ui.attachTab(StatusTab.unavailable(ui, view, "This application's " + view.title() + " tab " + why));
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SLAQ/Riffle: cannot attach the {} tab of {}: {}", view.prefix(), ui.appId(), e.toString());
    }
  }
}
