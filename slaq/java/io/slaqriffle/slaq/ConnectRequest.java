package io.slaqriffle.slaq;

import io.slaqriffle.seam.Feature;
import io.slaqriffle.seam.Features;
import io.slaqriffle.seam.SparkConnect;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which running Spark Connect operation a task set's job tags belong to, and whether its request is a
 * spark.ml fit: the walk {@code ExecutePlanRequest -> Plan -> Command -> MlCommand.Fit} over the raw
 * reads of {@link SparkConnect}.
 */
final class ConnectRequest {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectRequest.class);

  private ConnectRequest() {}

  /**
   * A spark.ml fit a Connect client submitted: its operation's job tag and id, the estimator's class and
   * its params (the ones the client set explicitly), each the proto literal's scalar (a {@code Double},
   * {@code Integer}, {@code Boolean}, {@code String}, ...) or, for anything else, its kind in lower case.
   */
  record Fit(String jobTag, String operationId, String estimator, Map<String, Object> params) {
    /** The params as text, as the {@code connect_fit} message carries them. */
    Map<String, String> paramTexts() {
      Map<String, String> out = new TreeMap<>();
      params.forEach((k, v) -> out.put(k, String.valueOf(v)));
      return out;
    }
  }

  /**
   * The thread's (or task set's) {@code spark.job.tags} property, and so the Connect operation whose
   * Spark jobs they are, when that operation is a spark.ml fit; null for any other operation or work.
   * Reads the running operation's request (Spark Connect keeps it in its ExecuteHolder).
   */
  static Fit fit(SparkContext sc, String jobTags) {
    if (jobTags == null || !jobTags.contains(SparkConnect.OPERATION_TAG) || !Features.available(sc, Feature.CONNECT)) {
      return null;
    }
    try {
      Set<String> tags = Set.of(jobTags.split(","));
      for (Object holder : SparkConnect.executeHolders()) {
        String tag = SparkConnect.jobTag(holder);
        if (tags.contains(tag)) {
          Object ml = SparkConnect.mlCommand(holder);
          Object fit = ml == null ? null : SparkConnect.fit(ml);
          return fit == null ? null : new Fit(tag, SparkConnect.operationId(holder), SparkConnect.estimator(fit), params(fit));
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      if (Features.firstWarning(sc, "connect-read" + e)) {
        LOG.warn("SLAQ: cannot read Spark Connect's operation ({}); its spark.ml fit runs as plain Spark work", e.toString());
      }
    }
    return null;
  }

  /** The fit's params, each proto {@code Expression.Literal} as its scalar, or its kind (lower case) for anything else. */
  private static Map<String, Object> params(Object fit) throws ReflectiveOperationException {
    Map<String, Object> params = new TreeMap<>();
    for (Map.Entry<?, ?> e : SparkConnect.params(fit).entrySet()) {
      Object scalar = SparkConnect.literalScalar(e.getValue());
      params.put((String) e.getKey(), scalar != null ? scalar : SparkConnect.literalKind(e.getValue()).toLowerCase(Locale.ROOT));
    }
    return params;
  }
}
