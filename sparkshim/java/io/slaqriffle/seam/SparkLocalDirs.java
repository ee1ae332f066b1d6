package io.slaqriffle.seam;

import static io.slaqriffle.seam.Feature.LOCAL_DIRS;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;

/**
 * An executor's ordered local dirs as the driver's block manager master recorded them (LOCAL_DIRS),
 * reached through the Netty RPC env's endpoints (checked against 4.3.0).
 */
public final class SparkLocalDirs {
  private static final Handle.Registry HANDLES = new Handle.Registry();
  private static final String NETTY_RPC_ENV = "org.apache.spark.rpc.netty.NettyRpcEnv";

  /**
   * {@code NettyRpcEnv.dispatcher}, {@code Dispatcher.endpointRefs} (Netty RPC, since 1.6),
   * {@code BlockManagerMasterEndpoint.executorIdToLocalDirs} (a Guava cache since 3.0, SPARK-27651;
   * Guava relocated to {@code org.sparkproject.guava}).
   */
  private static final Handle RPC_DISPATCHER = HANDLES.field(Set.of(LOCAL_DIRS), NETTY_RPC_ENV, "dispatcher", Object.class);
  private static final Handle DISPATCHER_ENDPOINT_REFS =
      HANDLES.field(Set.of(LOCAL_DIRS), "org.apache.spark.rpc.netty.Dispatcher", "endpointRefs", Map.class);
  private static final Handle MASTER_LOCAL_DIRS =
      HANDLES.field(Set.of(LOCAL_DIRS), "org.apache.spark.storage.BlockManagerMasterEndpoint", "executorIdToLocalDirs", Object.class);

  private SparkLocalDirs() {}

  static void check(SparkContext sc, List<String> problems) {
    HANDLES.check(LOCAL_DIRS, sc, problems);
    if (problems.isEmpty()) {
      try {
        masterEndpoint();
      } catch (IllegalStateException e) {
        problems.add(e.getMessage());
      }
    }
  }

  private static Object masterEndpoint() {
    Object rpcEnv = SparkEnv.get().rpcEnv();
    if (!RPC_DISPATCHER.owner().isInstance(rpcEnv)) {
      throw new IllegalStateException("RPC env is " + rpcEnv.getClass().getName() + ", not " + NETTY_RPC_ENV);
    }
    try {
      Map<?, ?> refs = (Map<?, ?>) DISPATCHER_ENDPOINT_REFS.get(RPC_DISPATCHER.get(rpcEnv));
      for (Object endpoint : refs.keySet()) {
        if (MASTER_LOCAL_DIRS.owner().isInstance(endpoint)) {
          return endpoint;
        }
      }
    } catch (IllegalAccessException | ClassCastException e) {
      throw new IllegalStateException("cannot walk the RPC endpoints: " + e, e);
    }
    throw new IllegalStateException("no BlockManagerMasterEndpoint registered in this driver");
  }

  /** The executor's ordered blockmgr dirs as the block manager master recorded them; empty when unknown. */
  public static String[] localDirs(SparkContext sc, String executorId) {
    Features.require(sc, LOCAL_DIRS);
    try {
      @SuppressWarnings("unchecked")
      org.sparkproject.guava.cache.Cache<String, String[]> cache =
          (org.sparkproject.guava.cache.Cache<String, String[]>) MASTER_LOCAL_DIRS.get(masterEndpoint());
      String[] dirs = cache.getIfPresent(executorId);
      return dirs == null ? new String[0] : dirs.clone();
    } catch (IllegalAccessException | ClassCastException e) {
      throw new IllegalStateException("cannot read BlockManagerMasterEndpoint.executorIdToLocalDirs: " + e, e);
    }
  }
}
