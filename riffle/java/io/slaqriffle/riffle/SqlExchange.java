package io.slaqriffle.riffle;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.spark.ShuffleDependency;

/**
 * Whether a shuffle is a Spark SQL exchange, and the adaptive-execution settings its job runs under. The driver's
 * cost model needs both: adaptive execution coalesces an exchange's reducers to a few, so merging its outputs
 * saves far fewer reads than the partition count suggests; an RDD shuffle's reducers are its partitions. Spark
 * SQL runs every query's jobs with the session's settings as local properties, so the stage's properties carry
 * any {@code spark.sql.adaptive.*} the session or the application set; the rest are Spark's defaults.
 */
final class SqlExchange {
  /** The serializer of every Spark SQL exchange ({@code ShuffleExchangeExec}): rows in Spark SQL's binary format. */
  static final String ROW_SERIALIZER = "org.apache.spark.sql.execution.UnsafeRowSerializer";
  static final String ADAPTIVE_PREFIX = "spark.sql.adaptive.";
  /** Properties passed on per stage, and the longest value: a job's properties are the application's to set. */
  static final int MAX_PROPERTIES = 64;
  static final int MAX_VALUE_CHARS = 256;

  private SqlExchange() {}

  static boolean isSqlExchange(ShuffleDependency<?, ?, ?> dep) {
    return dep != null && dep.serializer() != null && ROW_SERIALIZER.equals(dep.serializer().getClass().getName());
  }

  /** The stage's {@code spark.sql.adaptive.*} properties (empty when it has none), bounded. */
  static Map<String, String> adaptive(Properties properties) {
    Map<String, String> out = new TreeMap<>();
    if (properties == null) {
      return out;
    }
    for (String key : properties.stringPropertyNames()) {
      if (key.startsWith(ADAPTIVE_PREFIX) && out.size() < MAX_PROPERTIES) {
        String value = properties.getProperty(key);
        if (value != null && value.length() <= MAX_VALUE_CHARS) {
          out.put(key, value);
        }
      }
    }
    return out;
  }
}
