package io.slaqriffle.lab;

import java.util.Collections;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.spark.network.TransportContext;
import org.apache.spark.network.server.TransportServer;
import org.apache.spark.network.shuffle.ExternalBlockHandler;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;

/**
 * Spark's external shuffle service bound to one address, for several "nodes" on one machine.
 *
 * <p>Spark's own {@code ExternalShuffleService} (standalone worker or {@code spark-class} main) binds
 * the wildcard address ({@code TransportContext.createServer(port, ...)}, checked on Spark 4.3.0), so
 * on one host only one of them can hold {@code spark.shuffle.service.port}. Executors reach the service
 * at {@code (their block manager host, spark.shuffle.service.port)}; binding each node's service to its
 * own loopback address gives every node its own service on the same port, like separate machines. The
 * handler and server are Spark's own public network classes: only the bind address differs.
 *
 * <p>Usage: {@code java -cp <pyspark jars>/*:<lab jar> io.slaqriffle.lab.NodeShuffleService HOST PORT}.
 * Runs until killed. No registered-executor database: a restarted service forgets its executors,
 * as a standalone worker's does with {@code spark.shuffle.service.db.enabled=false}.
 */
public final class NodeShuffleService {
  private NodeShuffleService() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: NodeShuffleService HOST PORT");
      System.exit(2);
    }
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    TransportConf conf = new TransportConf("shuffle", new MapConfigProvider(Map.of()));
    ExternalBlockHandler handler = new ExternalBlockHandler(conf, null);
    TransportContext context = new TransportContext(conf, handler, true);
    TransportServer server = context.createServer(host, port, Collections.emptyList());
    System.out.println("NodeShuffleService listening on " + host + ":" + server.getPort());
    System.out.flush();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      context.close();
      stopped.countDown();
    }));
    stopped.await();
  }
}
