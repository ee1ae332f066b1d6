package io.slaqriffle.riffle;

import io.slaqriffle.seam.TabHistory;

/** The Riffle tab in Spark's History Server: the logged changes ({@link RiffleDelta}s) replayed into a {@link RiffleStatus}, as the live driver applied them. */
public final class RiffleHistory extends TabHistory<RiffleStatus, RiffleDelta, RiffleMessages.RiffleStatus> {
  public RiffleHistory() {
    super(RifflePage.VIEW, RiffleDelta.class, RiffleStatus::new, RiffleStatus::record, RiffleMessages.RiffleStatus.class, RiffleStatus::report,
        RiffleStatus::restored);
  }
}
