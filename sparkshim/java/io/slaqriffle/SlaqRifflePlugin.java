package io.slaqriffle;

import io.slaqriffle.brain.BrainPlugin;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The one JVM entry point for any driver: {@code --jars <shim jar> --conf
 * spark.plugins=io.slaqriffle.SlaqRifflePlugin} plus the usual {@code spark.slaq.*}/{@code
 * spark.riffle.*} confs switch SLAQ and Riffle on for a Java or Scala application, the spark-sql CLI
 * or a Spark Connect server, whose drivers run no Python of their own. The driver side starts the
 * Python brain next to the driver ({@link BrainPlugin}); executors need nothing.
 */
public final class SlaqRifflePlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new BrainPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null;
  }
}
