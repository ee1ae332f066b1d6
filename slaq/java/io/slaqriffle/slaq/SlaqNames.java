package io.slaqriffle.slaq;

import io.slaqriffle.seam.Names;

/** SLAQ's names shared with Python, from the {@code "names"} of {@code slaq/messages.json} (packed next to this class). */
public final class SlaqNames {
  private static final Names NAMES = Names.of(SlaqNames.class);

  /** The local property (on the thread that submits Spark work) naming the SLAQ job the work belongs to. */
  public static final String JOB_PROPERTY = NAMES.text("job_property");
  /** A SLAQ job's scheduler pool is this prefix plus the job name. */
  public static final String POOL_PREFIX = NAMES.text("pool_prefix");
  /** The logger hierarchy breeze's optimizers log their iterations on. */
  public static final String BREEZE_LOGGER = NAMES.text("breeze_logger");
  /** How breeze's per-iteration line starts ({@code "Val and Grad Norm: %.6g (rel: %.3g) %.6g"}). */
  public static final String BREEZE_ITERATION_LINE = NAMES.text("breeze_iteration_line");
  /** The logger of spark.ml's training instrumentation ({@code ml.util.Instrumentation}), which prefixes each line with {@code "[<id>] "}. */
  public static final String INSTRUMENTATION_LOGGER = NAMES.text("instrumentation_logger");
  /** How GaussianMixture's per-iteration line starts after that prefix ({@code {"logLikelihood@iter<i>":<value>}}, at INFO). */
  public static final String GMM_ITERATION_LINE = NAMES.text("gmm_iteration_line");

  private SlaqNames() {}
}
