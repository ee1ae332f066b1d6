package io.slaqriffle.seam;

/**
 * What breaks when a handle into Spark's internals is missing; each is switched off on its own, with
 * what the application loses ({@link Features} checks them per SparkContext). The handles of each
 * feature are declared in the seam class of its group: {@link SparkScheduler} (GATE, POOLS),
 * {@link SparkMapOutput} (COMMIT, SKEW_SPLITS), {@link SparkLocalDirs} (LOCAL_DIRS), {@link SparkHooks}
 * (UI_TAB, EVENT_LOG, METRICS, CLEANER) and {@link SparkConnect} (CONNECT).
 */
public enum Feature {
  /** Holding a shuffle's reducers (the root-pool replacement). */
  GATE("Riffle", "shuffles run unmerged (plain Spark)"),
  /** Rewriting a shuffle's map statuses to point at merged files. */
  COMMIT("Riffle", "shuffles run unmerged (plain Spark)"),
  /** Reading an executor's ordered local dirs from the block manager master. */
  LOCAL_DIRS("Riffle", "shuffles run unmerged (plain Spark)"),
  /** Reading AQE's skew-split plan of a shuffle (SQL confs, Spark's own split function) so merged groups never straddle a split. */
  SKEW_SPLITS("Riffle", "merged groups are committed without regard to AQE's skew splits: a skewed partition of a merged shuffle may be split unevenly"),
  /** Hearing that Spark cleaned a shuffle. */
  CLEANER("Riffle", "merged files of cleaned shuffles are deleted only when the application ends"),
  /** SLAQ's token pools under the task scheduler's root pool. */
  POOLS("SLAQ", "allocations are not enforced: jobs share cores as Spark's scheduler decides"),
  /** SLAQ's and Riffle's tabs in the driver's Spark UI. */
  UI_TAB("SLAQ/Riffle", "the Spark UI has no SLAQ or Riffle tab; scheduling and merging are unaffected and the status stays in the driver log"),
  /** SLAQ's and Riffle's metric sources in the driver's metrics system. */
  METRICS("SLAQ/Riffle", "no slaq.* or riffle.* metrics reach the configured sinks; the tabs and the driver log still show the numbers"),
  /** Posting the tabs' models on the listener bus, so the event log carries them to the History Server. */
  EVENT_LOG("SLAQ/Riffle", "the tabs' models are not written to the event log, so Spark's History Server shows no SLAQ or Riffle tab; "
      + "the live tabs are unaffected"),
  /** Spark Connect's running operations, to make each spark.ml fit a Connect client submits a SLAQ job. */
  CONNECT("SLAQ", "spark.ml fits submitted by Spark Connect clients run as plain Spark work, outside SLAQ's jobs");

  final String product;
  final String consequence;

  Feature(String product, String consequence) {
    this.product = product;
    this.consequence = consequence;
  }
}
