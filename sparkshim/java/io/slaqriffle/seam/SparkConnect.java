package io.slaqriffle.seam;

import static io.slaqriffle.seam.Feature.CONNECT;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.TaskSetManager;

/**
 * Raw reads of Spark Connect's running operations (CONNECT; the spark-connect jar, private[connect],
 * reached by reflection since the shim does not compile against it; ML on Connect since 4.0, checked
 * against 4.3.0): the execute holders, their requests' public protos, the listener events that end an
 * operation, and the scheduler's {@code default} pool that Connect's task sets land in. What a request
 * means (is it a spark.ml fit, with which params) is SLAQ's: {@code slaq.ConnectRequest}.
 */
public final class SparkConnect {
  private static final Handle.Registry HANDLES = new Handle.Registry();
  private static final Set<Feature> ONLY = Set.of(CONNECT);
  private static final String SERVICE = "org.apache.spark.sql.connect.service.";
  private static final String PROTO = "org.apache.spark.connect.proto.";
  /** Prefix of the job tag Spark Connect gives every Spark job of one operation ({@code ExecuteHolder.jobTag}). */
  public static final String OPERATION_TAG = "SparkConnect_OperationTag_";

  private SparkConnect() {}

  static void check(SparkContext sc, List<String> problems) {
    HANDLES.check(CONNECT, sc, problems);
  }

  /** {@code SparkConnectService$.MODULE$.executionManager()}, {@code SparkConnectExecutionManager.listExecuteHolders()}. */
  private static final Handle SERVICE_MODULE = HANDLES.field(ONLY, SERVICE + "SparkConnectService$", "MODULE$", Object.class);
  private static final Handle EXECUTION_MANAGER = HANDLES.method(ONLY, SERVICE + "SparkConnectService$", "executionManager");
  private static final Handle EXECUTE_HOLDERS = HANDLES.method(ONLY, SERVICE + "SparkConnectExecutionManager", "listExecuteHolders");

  /** The execute holders of the operations Spark Connect runs now. */
  public static List<Object> executeHolders() throws ReflectiveOperationException {
    Object manager = EXECUTION_MANAGER.invoke(SERVICE_MODULE.get(null));
    List<Object> out = new ArrayList<>();
    for (scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) EXECUTE_HOLDERS.invoke(manager)).iterator(); it.hasNext(); ) {
      out.add(it.next());
    }
    return out;
  }

  /** {@code ExecuteHolder.jobTag()/request()/executeKey()}, {@code ExecuteKey.operationId()}. */
  private static final Handle JOB_TAG = HANDLES.method(ONLY, SERVICE + "ExecuteHolder", "jobTag");
  private static final Handle REQUEST = HANDLES.method(ONLY, SERVICE + "ExecuteHolder", "request");
  private static final Handle EXECUTE_KEY = HANDLES.method(ONLY, SERVICE + "ExecuteHolder", "executeKey");
  private static final Handle OPERATION_ID = HANDLES.method(ONLY, SERVICE + "ExecuteKey", "operationId");

  /** The job tag of the holder's operation. */
  public static String jobTag(Object holder) throws ReflectiveOperationException {
    return (String) JOB_TAG.invoke(holder);
  }

  /** The operation's id. */
  public static String operationId(Object holder) throws ReflectiveOperationException {
    return (String) OPERATION_ID.invoke(EXECUTE_KEY.invoke(holder));
  }

  /** {@code ExecutePlanRequest.getPlan()}, {@code Plan.getCommand()}, {@code Command.hasMlCommand()/getMlCommand()}. */
  private static final Handle PLAN = HANDLES.method(ONLY, PROTO + "ExecutePlanRequest", "getPlan");
  private static final Handle COMMAND = HANDLES.method(ONLY, PROTO + "Plan", "getCommand");
  private static final Handle HAS_ML = HANDLES.method(ONLY, PROTO + "Command", "hasMlCommand");
  private static final Handle ML = HANDLES.method(ONLY, PROTO + "Command", "getMlCommand");

  /** The holder's request's {@code MlCommand}, or null when its command is another one. */
  public static Object mlCommand(Object holder) throws ReflectiveOperationException {
    Object command = COMMAND.invoke(PLAN.invoke(REQUEST.invoke(holder)));
    return (Boolean) HAS_ML.invoke(command) ? ML.invoke(command) : null;
  }

  /** {@code MlCommand.hasFit()/getFit()}, {@code MlCommand.Fit.getEstimator()/getParams()}, {@code MlOperator.getName()}, {@code MlParams.getParamsMap()}. */
  private static final Handle HAS_FIT = HANDLES.method(ONLY, PROTO + "MlCommand", "hasFit");
  private static final Handle FIT = HANDLES.method(ONLY, PROTO + "MlCommand", "getFit");
  private static final Handle ESTIMATOR = HANDLES.method(ONLY, PROTO + "MlCommand$Fit", "getEstimator");
  private static final Handle PARAMS = HANDLES.method(ONLY, PROTO + "MlCommand$Fit", "getParams");
  private static final Handle OPERATOR_NAME = HANDLES.method(ONLY, PROTO + "MlOperator", "getName");
  private static final Handle PARAMS_MAP = HANDLES.method(ONLY, PROTO + "MlParams", "getParamsMap");

  /** The command's {@code MlCommand.Fit}, or null when it is another ML command. */
  public static Object fit(Object mlCommand) throws ReflectiveOperationException {
    return (Boolean) HAS_FIT.invoke(mlCommand) ? FIT.invoke(mlCommand) : null;
  }

  /** The fit's estimator (its class name). */
  public static String estimator(Object fit) throws ReflectiveOperationException {
    return (String) OPERATOR_NAME.invoke(ESTIMATOR.invoke(fit));
  }

  /** The fit's params: name to {@code Expression.Literal}. */
  public static Map<?, ?> params(Object fit) throws ReflectiveOperationException {
    return (Map<?, ?>) PARAMS_MAP.invoke(PARAMS.invoke(fit));
  }

  /** {@code Expression.Literal.getLiteralTypeCase()} and the getter of each scalar case. */
  private static final Handle LITERAL_KIND = HANDLES.method(ONLY, PROTO + "Expression$Literal", "getLiteralTypeCase");
  private static final Map<String, Handle> SCALARS = Map.of(
      "DOUBLE", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getDouble"),
      "FLOAT", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getFloat"),
      "INTEGER", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getInteger"),
      "LONG", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getLong"),
      "SHORT", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getShort"),
      "BYTE", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getByte"),
      "BOOLEAN", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getBoolean"),
      "STRING", HANDLES.method(ONLY, PROTO + "Expression$Literal", "getString"));

  /** The literal's kind ({@code DOUBLE}, {@code STRING}, {@code ARRAY}, ...). */
  public static String literalKind(Object literal) throws ReflectiveOperationException {
    return String.valueOf(LITERAL_KIND.invoke(literal));
  }

  /** The literal's scalar value, or null when its kind is not a scalar. */
  public static Object literalScalar(Object literal) throws ReflectiveOperationException {
    Handle getter = SCALARS.get(literalKind(literal));
    return getter == null ? null : getter.invoke(literal);
  }

  /** {@code SparkListenerConnectOperation{Finished,Failed,Canceled,Closed}.jobTag()}. */
  private static final Map<String, Handle> END_EVENTS = List.of("Finished", "Failed", "Canceled", "Closed").stream()
      .map(e -> HANDLES.method(ONLY, SERVICE + "SparkListenerConnectOperation" + e, "jobTag"))
      .collect(Collectors.toMap(Handle::ownerName, h -> h));

  /** The job tag of a Spark Connect operation that ended (finished, failed, was canceled or closed), or null for any other event. */
  public static String operationEnded(SparkContext sc, Object event) {
    Handle tag = END_EVENTS.get(event.getClass().getName());
    if (tag == null || !Features.available(sc, CONNECT)) {
      return null;
    }
    try {
      return (String) tag.invoke(event);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** {@code TaskSetManager.taskSet()}, {@code TaskSet.properties()} (private[spark]). */
  private static final Handle TASK_SET = HANDLES.method(ONLY, "org.apache.spark.scheduler.TaskSetManager", "taskSet");
  private static final Handle PROPERTIES = HANDLES.method(ONLY, "org.apache.spark.scheduler.TaskSet", "properties");

  /** The local properties a task set was submitted with (its job's: pool, job tags, SLAQ job). */
  public static Properties properties(Schedulable s) {
    return s instanceof TaskSetManager tsm ? tsm.taskSet().properties() : null;
  }

  /** {@code Pool.getSchedulableByName(String)} (private[spark]); the root pool's {@code default} pool is replaced. */
  private static final Handle BY_NAME = HANDLES.method(ONLY, "org.apache.spark.scheduler.Pool", "getSchedulableByName", "java.lang.String");

  /**
   * Replaces the root pool's {@code default} pool (where task sets with no pool property go) with
   * {@code make(old)}, which takes over old's task sets. Call under the scheduler lock; returns the
   * new pool, or null when there is no default pool.
   */
  public static Pool replaceDefaultPool(TaskSchedulerImpl ts, Function<Pool, Pool> make) {
    Features.require(ts.sc(), CONNECT);
    Pool root = ts.rootPool();
    Schedulable old = root.getSchedulableByName("default");
    if (!(old instanceof Pool oldPool) || old.getClass() != Pool.class) {
      return null;
    }
    Pool replacement = make.apply(oldPool);
    root.removeSchedulable(oldPool);
    for (Schedulable s : new ArrayList<>(oldPool.schedulableQueue())) {
      oldPool.removeSchedulable(s);
      replacement.addSchedulable(s);
    }
    root.addSchedulable(replacement);
    return replacement;
  }
}
