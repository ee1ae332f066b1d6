package io.slaqriffle.seam;

import com.codahale.metrics.MetricRegistry;
import org.apache.spark.metrics.source.Source;

/**
 * A named registry as one of the driver metrics system's sources (Spark's {@code Source} is
 * private[spark]; registered only through {@link SparkHooks#registerSource}, after the METRICS check).
 */
final class MetricSource implements Source {
  private final String name;
  private final MetricRegistry registry;

  MetricSource(String name, MetricRegistry registry) {
    this.name = name;
    this.registry = registry;
  }

  @Override
  public String sourceName() {
    return name;
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }
}
