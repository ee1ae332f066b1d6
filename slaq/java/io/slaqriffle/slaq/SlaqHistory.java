package io.slaqriffle.slaq;

import io.slaqriffle.seam.TabHistory;

/** The SLAQ tab in Spark's History Server: the logged epochs replayed into a {@link SlaqStatus}, as the live driver recorded them. */
public final class SlaqHistory extends TabHistory<SlaqStatus, SlaqMessages.EpochStatus, SlaqStatus.Saved> {
  public SlaqHistory() {
    super(SlaqPage.VIEW, SlaqMessages.EpochStatus.class, SlaqStatus::new, SlaqStatus::record, SlaqStatus.Saved.class, SlaqStatus::saved,
        SlaqStatus::restored);
  }
}
