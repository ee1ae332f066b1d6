package io.slaqriffle.riffle;

import io.slaqriffle.seam.Names;
import java.util.List;

/** Riffle's names (and bounds) shared with Python, from the {@code "names"} of {@code riffle/messages.json} (packed next to this class). */
public final class RiffleNames {
  private static final Names NAMES = Names.of(RiffleNames.class);

  /** Why a Riffle merge group stayed unmerged: the keys of {@code riffle_shuffle.groups_fell_back}, in the order the UI shows them. */
  public static final List<String> FALLBACK_CAUSES = NAMES.list("fallback_causes");

  /** Why a shuffle's reducers were never held: the keys of {@code riffle_totals.unmerged}, in the order the UI shows them. */
  public static final List<String> NOT_HELD_CAUSES = NAMES.list("not_held_causes");
  /** Finished shuffles the Riffle tab's model lists besides every merging one, the latest seen ({@link RiffleBounds}). */
  public static final int MAX_FINISHED_SHUFFLES = NAMES.number("max_finished_shuffles");
  /** Shuffle ids a summary of the shuffles never held for one cause names, the latest ({@link RiffleBounds}). */
  public static final int MAX_UNMERGED_LATEST = NAMES.number("max_unmerged_latest");
  /** Why a settled shuffle's map output stayed unmerged: the keys of {@code riffle_shuffle.outputs_unmerged}, in the order the UI shows them. */
  public static final List<String> OUTPUT_CAUSES = NAMES.list("output_causes");

  static final String UNSAFE = notHeldCause("unsafe");
  static final String UNAVAILABLE = notHeldCause("unavailable");
  static final String MERGING_OFF = notHeldCause("merging_off");
  static final String READER_RUNNING = notHeldCause("reader_running");
  static final String RETRIED = notHeldCause("retried");
  static final String NOT_WORTH_IT = notHeldCause("not_worth_it");

  private RiffleNames() {}

  /** {@code cause}, checked against the schema when the class loads (a renamed cause fails there, not in the UI). */
  private static String notHeldCause(String cause) {
    if (!NOT_HELD_CAUSES.contains(cause)) {
      throw new IllegalStateException("names.not_held_causes has no " + cause);
    }
    return cause;
  }
}
