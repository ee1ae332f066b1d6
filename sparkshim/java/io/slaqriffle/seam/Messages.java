package io.slaqriffle.seam;

import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.List;

/**
 * The codec of the typed messages that cross py4j: each product declares its records (one per message
 * type of its {@code <product>/messages.json}, the schema Python generates its classes from) and encodes
 * them here as JSON with the Jackson that ships with Spark: one object per message, its kind in
 * {@code "type"}, fields in snake_case. Decoding is strict (unknown, missing or mistyped fields fail),
 * so a drift between the two sides fails the contract test instead of being read as zeros.
 */
public final class Messages {
  private Messages() {}

  /**
   * Any message: a record of a product's messages class ({@code SlaqMessages}, {@code RiffleMessages}) named by
   * {@code @JsonTypeName}, its kind on the wire in {@code "type"}.
   */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, include = JsonTypeInfo.As.PROPERTY, property = "type")
  public interface Message {}

  // ---------------------------------------------------------------- codec
  private static final ObjectMapper JSON = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES)
      .disable(com.fasterxml.jackson.databind.MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .build();

  private static final com.fasterxml.jackson.databind.ObjectWriter ONE = JSON.writerFor(Message.class);
  private static final com.fasterxml.jackson.databind.ObjectWriter LIST = JSON.writerFor(new TypeReference<List<Message>>() {});

  /** One message as JSON. */
  public static String encode(Message value) {
    try {
      return ONE.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode " + value + ": " + e.getOriginalMessage(), e);
    }
  }

  /** A list of messages as a JSON array (each element carries its {@code "type"}). */
  public static String encode(List<? extends Message> values) {
    try {
      return LIST.writeValueAsString(values);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode " + values.size() + " messages: " + e.getOriginalMessage(), e);
    }
  }

  /** One message of type {@code type} from JSON; IllegalArgumentException names what is wrong. */
  public static <T extends Message> T decode(String json, Class<T> type) {
    try {
      return JSON.readValue(json, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad " + type.getSimpleName() + " message: " + e.getOriginalMessage(), e);
    }
  }

  /** A message (or a record of messages) as a JSON tree, in the encoding of {@link #encode}: what a listener-bus event carries. */
  public static com.fasterxml.jackson.databind.JsonNode tree(Object value) {
    return JSON.valueToTree(value);
  }

  /**
   * A value (a message or a record of messages) as JSON text in the encoding of {@link #tree}, written straight to text:
   * no tree in between, whose nodes take several times the text (a History Server saving a large tab model).
   */
  public static String text(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot encode a " + value.getClass().getSimpleName() + ": " + e.getOriginalMessage(), e);
    }
  }

  /** {@link #text}'s inverse, as strict as {@link #decode}, read straight from the text (no tree in between). */
  public static <T> T read(String json, Class<T> type) {
    try {
      return JSON.readValue(json, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
    }
  }

  /** JSON text as a tree (what {@link #fromTree} reads). */
  public static com.fasterxml.jackson.databind.JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** {@link #tree}'s inverse, as strict as {@link #decode}. */
  public static <T> T fromTree(com.fasterxml.jackson.databind.JsonNode tree, Class<T> type) {
    try {
      return JSON.treeToValue(tree, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
    }
  }
}
