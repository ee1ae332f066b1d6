package io.slaqriffle.riffle;

import io.slaqriffle.seam.Names;
import java.util.List;

/** Riffle's names shared with Python, from the {@code "names"} of {@code riffle/messages.json} (packed next to this class). */
public final class RiffleNames {
  private static final Names NAMES = Names.of(RiffleNames.class);

  /** Why a Riffle merge group stayed unmerged: the keys of {@code riffle_shuffle.groups_fell_back}, in the order the UI shows them. */
  public static final List<String> FALLBACK_CAUSES = NAMES.list("fallback_causes");

  private RiffleNames() {}
}
