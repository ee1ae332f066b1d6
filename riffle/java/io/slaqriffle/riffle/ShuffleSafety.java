package io.slaqriffle.riffle;

import io.slaqriffle.seam.SparkMapOutput;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;

/**
 * Whether concatenating a shuffle's map outputs block by block is safe. A merged file is the members'
 * per-partition blocks laid end to end, read back as one block: the serializer must support
 * relocation of serialized objects, the codec concatenated streams, and neither I/O encryption (each
 * stream has its own IV) nor push-based shuffle (which merges the same blocks itself) may be on.
 */
final class ShuffleSafety {
  private ShuffleSafety() {}

  /** Why merging this shuffle would be unsafe, or null when it is safe. {@code dep} null: unknown, unsafe. */
  static String unsafeReason(SparkConf conf, ShuffleDependency<?, ?, ?> dep) {
    try {
      if (conf.getBoolean("spark.io.encryption.enabled", false)) {
        return "spark.io.encryption.enabled=true (encrypted streams cannot be concatenated)";
      }
      if (conf.getBoolean("spark.shuffle.push.enabled", false)) {
        return "push-based shuffle is enabled";
      }
      if (dep == null) {
        return "shuffle dependency not found";
      }
      if (!SparkMapOutput.serializerRelocates(dep)) {
        return "serializer " + dep.serializer().getClass().getName() + " does not support relocation of serialized objects";
      }
      if (conf.getBoolean("spark.shuffle.compress", true)) {
        String codec = conf.get("spark.io.compression.codec", "lz4");
        if (!SparkMapOutput.codecConcatenates(conf, codec)) {
          return "codec " + codec + " does not support concatenated streams";
        }
      }
      return null;
    } catch (RuntimeException e) {
      return "could not inspect the shuffle: " + e;
    }
  }
}
