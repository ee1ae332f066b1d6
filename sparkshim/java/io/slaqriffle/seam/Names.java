package io.slaqriffle.seam;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The strings and numbers Python and the JVM must agree on that are not messages: the {@code "names"} section of a
 * product's message schema ({@code <product>/messages.json}), which the build packs next to the product's
 * classes. A product's names class reads them at class load through {@link #of}, so neither side spells
 * them on its own.
 */
public final class Names {
  /** Where the build puts a product's schema inside the jar, relative to the product's classes. */
  static final String SCHEMA_RESOURCE = "messages.json";
  private final Class<?> owner;
  private final JsonNode names;

  private Names(Class<?> owner, JsonNode names) {
    this.owner = owner;
    this.names = names;
  }

  /** The names of the schema packed next to {@code owner}. */
  public static Names of(Class<?> owner) {
    try (InputStream in = owner.getResourceAsStream(SCHEMA_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(SCHEMA_RESOURCE + " is not in the shim jar next to " + owner.getName());
      }
      return new Names(owner, new ObjectMapper().readTree(in).path("names"));
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + SCHEMA_RESOURCE + " next to " + owner.getName() + ": " + e, e);
    }
  }

  /** The string {@code names.<key>}. */
  public String text(String key) {
    JsonNode value = names.get(key);
    if (value == null || !value.isTextual()) {
      throw new IllegalStateException(where() + " has no string names." + key);
    }
    return value.asText();
  }

  /** The integer {@code names.<key>} (a bound both sides keep). */
  public int number(String key) {
    JsonNode value = names.get(key);
    if (value == null || !value.isInt()) {
      throw new IllegalStateException(where() + " has no integer names." + key);
    }
    return value.asInt();
  }

  /** The list of strings {@code names.<key>}, in the schema's order. */
  public List<String> list(String key) {
    JsonNode value = names.get(key);
    if (value == null || !value.isArray()) {
      throw new IllegalStateException(where() + " has no list names." + key);
    }
    List<String> out = new ArrayList<>();
    for (JsonNode item : value) {
      if (!item.isTextual()) {
        throw new IllegalStateException(where() + ": names." + key + " holds a non-string " + item);
      }
      out.add(item.asText());
    }
    return List.copyOf(out);
  }

  private String where() {
    return SCHEMA_RESOURCE + " next to " + owner.getName();
  }
}
