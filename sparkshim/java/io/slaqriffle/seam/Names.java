package io.slaqriffle.seam;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;

/**
 * The strings Python and the JVM must agree on that are not messages (the {@code "names"} section of
 * {@code sparkshim/messages.json}, which the build packs next to this class): read from the schema at
 * class load, so neither side spells them on its own.
 */
public final class Names {
  /** Where the build puts the schema inside the jar, relative to this class. */
  static final String SCHEMA_RESOURCE = "messages.json";
  private static final JsonNode NAMES = load();

  /** The local property (on the thread that submits Spark work) naming the SLAQ job the work belongs to. */
  public static final String JOB_PROPERTY = name("job_property");
  /** A SLAQ job's scheduler pool is this prefix plus the job name. */
  public static final String POOL_PREFIX = name("pool_prefix");
  /** The logger hierarchy breeze's optimizers log their iterations on. */
  public static final String BREEZE_LOGGER = name("breeze_logger");
  /** How breeze's per-iteration line starts ({@code "Val and Grad Norm: %.6g (rel: %.3g) %.6g"}). */
  public static final String BREEZE_ITERATION_LINE = name("breeze_iteration_line");

  /** Why a Riffle merge group stayed unmerged: the keys of {@code riffle_shuffle.groups_fell_back}, space-separated, in the order the UI shows them. */
  public static final String FALLBACK_CAUSES = name("fallback_causes");

  /** {@link #FALLBACK_CAUSES} as a list. */
  public static java.util.List<String> fallbackCauses() {
    return java.util.List.of(FALLBACK_CAUSES.split(" "));
  }

  private Names() {}

  private static JsonNode load() {
    try (InputStream in = Names.class.getResourceAsStream(SCHEMA_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(SCHEMA_RESOURCE + " is not in the shim jar next to " + Names.class.getName());
      }
      return new ObjectMapper().readTree(in).path("names");
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + SCHEMA_RESOURCE + ": " + e, e);
    }
  }

  private static String name(String key) {
    JsonNode value = NAMES.get(key);
    if (value == null || !value.isTextual()) {
      throw new IllegalStateException(SCHEMA_RESOURCE + " has no string names." + key);
    }
    return value.asText();
  }
}
