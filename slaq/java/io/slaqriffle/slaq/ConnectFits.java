package io.slaqriffle.slaq;

import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.Outbox;
import io.slaqriffle.seam.SparkConnect;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.TaskSchedulerImpl;

/**
 * Each spark.ml fit a Spark Connect client submits becomes its own SLAQ job. A Connect fit runs in
 * the server's JVM, on the thread of its Connect operation, so no Python hook sees it; what marks
 * its work is the operation's job tag ({@code SparkConnect_OperationTag_...}) in the thread's
 * {@code spark.job.tags} property, which every task set and breeze log line of the fit carries.
 *
 * <p>Task sets with no pool go to the root pool's {@code default} pool; this class replaces it by a
 * {@link Routing} pool that puts the task sets of a Connect fit (an operation whose request is an
 * {@code MlCommand.Fit}, and with no {@code slaq.job} of its own) into that fit's job pool, created
 * at its first task set and named after the estimator and the operation. Everything else stays in
 * {@code default}, as before. The fit's breeze losses are attributed to the same job
 * ({@link #jobOfThread}); the job is closed when Spark Connect reports the operation ended. The
 * Python runtime learns of both through {@link #poll} and tracks the job like any other.
 */
final class ConnectFits {
  private static final String JOB_TAGS = "spark.job.tags";  // SparkContext.SPARK_JOB_TAGS (public since 3.5)
  private static final int MAX_OTHER_OPERATIONS = 4096;
  private static final int MAX_PENDING_FITS = 4096;  // fits opened or ended and not yet polled (bounded like every outbox)
  /** slaq.names.MAX_NAME: characters of a job name's params, before its suffix. */
  static final int MAX_NAME = 160;

  private final SparkContext sc;
  private final TaskSchedulerImpl ts;
  private final SlaqPools pools;
  private volatile boolean enabled;
  private final Map<String, String> jobs = new ConcurrentHashMap<>();  // operation job tag -> SLAQ job
  private final Set<String> others = ConcurrentHashMap.newKeySet();     // tags of operations that are not fits
  private final Outbox<SlaqMessages.ConnectFit> events = new Outbox<>(MAX_PENDING_FITS);

  private ConnectFits(SparkContext sc, TaskSchedulerImpl ts, SlaqPools pools) {
    this.sc = sc;
    this.ts = ts;
    this.pools = pools;
  }

  /** Routes Connect fits of {@code sc} into SLAQ jobs (while {@link #enable}d); null when there is no default pool to route from. */
  static ConnectFits attach(SparkContext sc, TaskSchedulerImpl ts, SlaqPools pools) {
    ConnectFits fits = new ConnectFits(sc, ts, pools);
    Pool routing;
    synchronized (ts) {
      routing = SparkConnect.replaceDefaultPool(ts, old -> fits.new Routing(old));
    }
    if (routing == null) {
      return null;
    }
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onOtherEvent(SparkListenerEvent event) {
        String tag = SparkConnect.operationEnded(sc, event);
        if (tag != null) {
          fits.ended(tag);
        }
      }
    });
    return fits;
  }

  /** While off (SLAQ detached), Connect fits run in the default pool as plain Spark work. */
  void enable(boolean on) {
    enabled = on;
  }

  /** The SLAQ job of the calling thread's Connect fit, or null (the breeze line is from other work). */
  String jobOfThread() {
    String tags = sc.getLocalProperty(JOB_TAGS);
    return tags == null ? null : jobOf(tags);
  }

  private String jobOf(String tags) {
    for (String tag : tags.split(",")) {
      String job = jobs.get(tag);
      if (job != null) {
        return job;
      }
    }
    return null;
  }

  /** The pool for a task set's properties: its Connect fit's job pool (opened now if new), or null. Under the scheduler lock. */
  private Pool route(Properties props) {
    if (!enabled || props == null || props.getProperty(SlaqNames.JOB_PROPERTY) != null) {
      return null;
    }
    String tags = props.getProperty(JOB_TAGS);
    if (tags == null || !tags.contains(SparkConnect.OPERATION_TAG)) {
      return null;
    }
    String job = jobOf(tags);
    if (job == null) {
      for (String tag : tags.split(",")) {
        if (tag.startsWith(SparkConnect.OPERATION_TAG) && others.contains(tag)) {
          return null;
        }
      }
      ConnectRequest.Fit fit = ConnectRequest.fit(sc, tags);
      if (fit == null) {
        for (String tag : tags.split(",")) {
          if (tag.startsWith(SparkConnect.OPERATION_TAG)) {
            remember(tag);
          }
        }
        return null;
      }
      job = jobName(fit.estimator(), fit.params(), fit.operationId());
      pools.registerLocked(job, 1.0);
      jobs.put(fit.jobTag(), job);
      events.add(new SlaqMessages.ConnectFit(job, fit.operationId(), fit.estimator(), fit.paramTexts(), false));
    }
    return pools.pool(job);
  }

  /**
   * {@code LogisticRegression[maxIter=10,regParam=0.1]@<operation id>}: the name a classic fit's job gets
   * ({@code slaq.names.fit_job_name}: the estimator's class name and its explicitly set params but the
   * column ones, sorted, each value as Python writes it, the list cut at {@link #MAX_NAME} characters),
   * with the Connect operation's id in place of the classic sequence number: unique without a counter
   * shared with the driver's Python, and the id Spark Connect's own UI and log show.
   */
  static String jobName(String estimatorClass, Map<String, Object> params, String operationId) {
    StringBuilder body = new StringBuilder();
    for (Map.Entry<String, Object> p : new TreeMap<>(params).entrySet()) {
      if (p.getKey().endsWith("Col") || p.getKey().endsWith("Cols")) {
        continue;
      }
      body.append(body.length() == 0 ? "" : ",").append(p.getKey()).append('=').append(pythonText(p.getValue()));
    }
    return estimatorClass.substring(estimatorClass.lastIndexOf('.') + 1) + "[" + oneLine(body.toString(), MAX_NAME) + "]@"
        + operationId;
  }

  /** A param's value as slaq.names's {@code _format_value} writes the same Python value (a float as {@code %g}). */
  static String pythonText(Object value) {
    if (value instanceof Double || value instanceof Float) {
      return pythonG(((Number) value).doubleValue());
    }
    return String.valueOf(value);  // booleans are true/false, integers and strings as they are, other kinds by name
  }

  /** Python's {@code f"{v:g}"} (6 significant digits, no trailing zeros, an exponent below 1e-4 and from 1e6); str() past the finite. */
  static String pythonG(double v) {
    if (Double.isNaN(v)) {
      return "nan";
    }
    if (Double.isInfinite(v)) {
      return v > 0 ? "inf" : "-inf";
    }
    if (v == 0) {
      return 1 / v < 0 ? "-0" : "0";
    }
    BigDecimal d = new BigDecimal(v).round(new MathContext(6, RoundingMode.HALF_EVEN));
    int exp = d.precision() - d.scale() - 1;
    if (exp < -4 || exp >= 6) {
      String mantissa = d.movePointLeft(exp).stripTrailingZeros().toPlainString();
      return mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }
    return d.stripTrailingZeros().toPlainString();
  }

  /** slaq.names.one_line: runs of whitespace become one space; cut to {@code limit} characters, the last an ellipsis. */
  static String oneLine(String text, int limit) {
    String t = String.join(" ", text.trim().split("\\s+"));
    return t.length() <= limit ? t : t.substring(0, limit - 1) + "\u2026";
  }

  private void ended(String tag) {
    String job = jobs.remove(tag);  // Finished, then Closed: the first one ends the job
    if (job != null) {
      remember(tag);  // a late task set of an ended fit must not open its job again
      pools.close(job);
      events.add(new SlaqMessages.ConnectFit(job, "", "", Map.of(), true));
    }
  }

  /** Tags of operations whose task sets stay in {@code default}: other work, and fits that ended (bounded: cleared when full). */
  private void remember(String tag) {
    if (others.size() >= MAX_OTHER_OPERATIONS) {
      others.clear();
    }
    others.add(tag);
  }

  /** Fits opened and ended since the last call, in order, as a JSON list of {@code connect_fit} messages. */
  String poll() {
    return Messages.encode(events.drain());
  }

  /** The root pool's {@code default} pool, which hands a Connect fit's task sets to its job's pool. */
  final class Routing extends Pool {
    Routing(Pool old) {
      super(old.name(), old.schedulingMode(), old.minShare(), old.weight());
    }

    @Override
    public void addSchedulable(Schedulable schedulable) {
      Pool target = route(SparkConnect.properties(schedulable));
      if (target != null) {
        target.addSchedulable(schedulable);
      } else {
        super.addSchedulable(schedulable);
      }
    }
  }
}
