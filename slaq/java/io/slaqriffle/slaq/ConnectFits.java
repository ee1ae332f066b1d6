package io.slaqriffle.slaq;

import io.slaqriffle.seam.Messages;
import io.slaqriffle.seam.Outbox;
import io.slaqriffle.seam.SparkConnect;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
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
      job = jobName(fit.estimator(), fit.operationId());
      pools.registerLocked(job, 1.0);
      jobs.put(fit.jobTag(), job);
      events.add(new SlaqMessages.ConnectFit(job, fit.operationId(), fit.estimator(), fit.params(), false));
    }
    return pools.pool(job);
  }

  /** {@code LogisticRegression@<operation id>}: the estimator's class name and the Connect operation (unique). */
  static String jobName(String estimatorClass, String operationId) {
    return estimatorClass.substring(estimatorClass.lastIndexOf('.') + 1) + "@" + operationId;
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
