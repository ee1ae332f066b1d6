package io.slaqriffle.brain;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.SocketFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import py4j.CallbackClient;
import py4j.ClientServerConnection;
import py4j.Gateway;
import py4j.GatewayServer;
import py4j.JavaServer;
import py4j.Protocol;
import py4j.Py4JJavaServer;
import py4j.Py4JPythonClientPerThread;
import py4j.Py4JServerConnection;
import py4j.PythonClient;
import py4j.commands.AuthCommand;

/**
 * The brain's gateway: py4j's pinned-thread {@code ClientServer} (what pyspark connects to), put
 * together from the same parts but with connections bounded. py4j starts a thread per accepted
 * connection and lets it wait for the secret for ever; here a connection must present the secret
 * within {@link #AUTH_MILLIS}, at most {@link #MAX_UNAUTHENTICATED} wait for theirs at a time and at
 * most {@link #MAX_CONNECTIONS} are open at all: any other is closed at once. A local process without
 * the secret therefore holds at most {@code MAX_UNAUTHENTICATED} driver threads, each for a few
 * seconds. The secret is checked here (in constant time), then py4j serves the connection as usual.
 */
final class BrainGateway {
  /** The brain sends its secret as it connects; a connection still silent after this is not the brain's. */
  static final long AUTH_MILLIS = 5_000;
  static final int MAX_UNAUTHENTICATED = 16;
  /** Far above the brain's own (one per Python thread that calls the JVM, a handful). */
  static final int MAX_CONNECTIONS = 256;
  private static final Logger LOG = LoggerFactory.getLogger(BrainGateway.class);
  private static final int MAX_LINE = 256;

  private final Server server;
  private final AtomicBoolean closed = new AtomicBoolean();

  private BrainGateway(Server server) {
    this.server = server;
  }

  /** Listens on the loopback address, on an ephemeral port, for {@code entryPoint}'s brain holding {@code secret}. */
  static BrainGateway open(Object entryPoint, String secret) {
    PythonClient python = new PythonClient(null, null, GatewayServer.DEFAULT_PYTHON_PORT, InetAddress.getLoopbackAddress(),
        CallbackClient.DEFAULT_MIN_CONNECTION_TIME, TimeUnit.SECONDS, SocketFactory.getDefault(), null, true, 0, secret);
    Server server = new Server(entryPoint, python, secret);
    python.setGateway(server.getGateway());
    python.setJavaServer(server);
    server.start();
    return new BrainGateway(server);
  }

  /** The server the brain connects to (as py4j's {@code ClientServer.getJavaServer}). */
  Py4JJavaServer getJavaServer() {
    return server;
  }

  /** Stops accepting and closes every connection; a second call does nothing. */
  void shutdown() {
    if (closed.compareAndSet(false, true)) {
      server.closing = true;
      server.shutdown(true);
    }
  }

  /**
   * Whether {@code in} brings py4j's authentication command with {@code secret} before {@code deadline}
   * (System.nanoTime): the line {@code A}, then the secret's line. Lines are read byte by byte (nothing
   * past them is consumed) and at most {@link #MAX_LINE} long.
   */
  static boolean presentsSecret(Socket socket, InputStream in, byte[] secret, long deadline) throws IOException {
    String command = readLine(socket, in, deadline);
    if (!AuthCommand.COMMAND_NAME.equals(command)) {
      return false;
    }
    String token = readLine(socket, in, deadline);
    return token != null && MessageDigest.isEqual(secret, token.getBytes(StandardCharsets.UTF_8));
  }

  private static String readLine(Socket socket, InputStream in, long deadline) throws IOException {
    byte[] line = new byte[MAX_LINE];
    for (int n = 0; n < MAX_LINE; n++) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        return null;
      }
      socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
      int b = in.read();
      if (b < 0) {
        return null;
      }
      if (b == '\n') {
        return new String(line, 0, n, StandardCharsets.UTF_8);
      }
      line[n] = (byte) b;
    }
    return null;
  }

  /** py4j's {@code JavaServer} whose connections authenticate here first, within bounds. */
  private static final class Server extends JavaServer {
    private final byte[] secret;
    private final AtomicInteger unauthenticated = new AtomicInteger();
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicBoolean warned = new AtomicBoolean();
    private volatile boolean closing;
    private volatile boolean brainSeen;  // a connection presented the secret

    Server(Object entryPoint, PythonClient python, String secret) {
      super(entryPoint, 0, 0, 0, null, python, null);  // null: no py4j auth command, the secret is checked here
      this.secret = secret.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected void processSocket(Socket socket) {
      if (unauthenticated.get() >= MAX_UNAUTHENTICATED || open.get() >= MAX_CONNECTIONS) {
        // Before the brain's first connection this may be the brain's own: it then says why it cannot connect, in
        // one line of its own. The connections that hold the slots are still refused, with a warning, as they expire.
        refuse(socket, "too many connections open or waiting for the secret", brainSeen);
        return;
      }
      super.processSocket(socket);
    }

    @Override
    protected Py4JServerConnection createConnection(Gateway gateway, Socket socket) throws IOException {
      Connection connection = new Connection(gateway, socket, this);
      unauthenticated.incrementAndGet();
      open.incrementAndGet();
      try {
        connection.startServerConnection();
      } catch (RuntimeException | Error e) {
        unauthenticated.decrementAndGet();
        open.decrementAndGet();
        socket.close();
        throw e;
      }
      return connection;
    }

    void refuse(Socket socket, String why) {
      refuse(socket, why, true);
    }

    void refuse(Socket socket, String why, boolean warn) {
      String from = String.valueOf(socket.getRemoteSocketAddress());
      try {
        socket.setSoLinger(true, 0);
        socket.close();
      } catch (IOException e) {
        // closed already
      }
      if (warn && !closing && !warned.getAndSet(true)) {
        LOG.warn("SLAQ/Riffle plugin: closed a connection to the brain's gateway from {} ({}); only the brain, which "
            + "holds the gateway's secret, connects there. Further ones are logged at DEBUG", from, why);
      } else {
        LOG.debug("closed a connection to the brain's gateway from {} ({})", from, why);
      }
    }
  }

  /** One connection: its secret first (bounded), then py4j's command loop on a thread pinned to the brain's. */
  private static final class Connection extends ClientServerConnection {
    private final Server server;

    Connection(Gateway gateway, Socket socket, Server server) throws IOException {
      super(gateway, socket, server.getCustomCommands(), (Py4JPythonClientPerThread) server.getCallbackClient(), server, 0, null);
      this.server = server;
    }

    @Override
    public void startServerConnection() {
      jvmThread = new Thread(this, "slaq-riffle-brain-gateway");
      jvmThread.setDaemon(true);
      jvmThread.start();
    }

    @Override
    public void run() {
      try {
        if (authenticate()) {
          super.run();
        }
      } finally {
        server.open.decrementAndGet();
      }
    }

    private boolean authenticate() {
      Socket s = socket;
      try {
        boolean ok = presentsSecret(s, s.getInputStream(), server.secret, System.nanoTime() + AUTH_MILLIS * 1_000_000L);
        if (ok) {
          server.brainSeen = true;
          s.setSoTimeout(0);
          writer.write(Protocol.getOutputVoidCommand());
          writer.flush();
          return true;
        }
        writer.write(Protocol.getOutputErrorCommand("Authentication error: no valid secret."));
        writer.flush();
      } catch (IOException e) {
        // timed out, closed, or reset: refused below
      } finally {
        server.unauthenticated.decrementAndGet();
      }
      shutdown(true);
      server.refuse(s, "no valid secret within " + AUTH_MILLIS / 1000 + " s");
      return false;
    }
  }
}
