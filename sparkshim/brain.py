"""SLAQ's and Riffle's Python side for a driver that runs no Python: ``python -m sparkshim.brain``.

``io.slaqriffle.SlaqRifflePlugin`` starts this process in a Java application's, spark-sql's or a
Spark Connect server's driver and opens a py4j gateway on the loopback address for it
(``PYSPARK_GATEWAY_PORT``/``PYSPARK_GATEWAY_SECRET``, as Spark does for a Python application). The
brain waits until the driver's SparkContext is built, wraps it as a pyspark ``SparkContext`` and calls
the start hook's :func:`~sparkshim.starthook.attach_enabled`: the same policies and merge scheduler
as in a pyspark driver. From its first moment on the gateway it calls ``BrainHandle.alive()`` every
second from a thread of its own: a brain that stops answering (stopped, hung) is told from a busy one
by that heartbeat, and the plugin ends it and fails open. It lives until its stdin closes (the plugin's shutdown, or the driver JVM
exiting), then stops what it attached. Once it attached, its log records are driver log lines on their own loggers
(:mod:`sparkshim.driver_log`); before that they go to stdout, which the plugin turns into driver log lines.

Exit codes: 0 stopped when asked, 2 a ``spark.slaq.*``/``spark.riffle.*`` value it refused, 3 it could
not attach (no context in time, a shim jar from other sources), 4 it could not reach the driver's
gateway (its one line says why: refused, timed out, or closed at once because other local connections
hold the gateway's slots). Whatever it ends with, the application runs on as plain Spark.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from typing import Any

from sparkshim.announce import NotInDriverLog

log = logging.getLogger("sparkshim.brain")
CONTEXT_WAIT_SECONDS = 120.0  # the plugin starts the brain early in the SparkContext constructor
HEARTBEAT_SECONDS = 1.0  # the plugin's watchdog declares the brain stuck after 30 s without one
EXIT_CONFIG, EXIT_NOT_ATTACHED, EXIT_NO_GATEWAY = 2, 3, 4  # the plugin (BrainPlugin.EXIT_*) knows 2 and 4: no second line
GATEWAY_HOST = "127.0.0.1"  # the plugin's gateway listens on the loopback address only
GATEWAY_TIMEOUT = 10.0  # the gateway answers the secret at once; a silent one is not the driver's
PLAIN_SPARK = "SLAQ and Riffle stay off and the application runs as plain Spark"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(prog="python -m sparkshim.brain", description=doc.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Started by the plugin (--conf spark.plugins=io.slaqriffle.SlaqRifflePlugin); "
                                            "not meant to be run by hand.")
    parser.add_argument("--context-wait", type=float, default=CONTEXT_WAIT_SECONDS, metavar="SECONDS",
                        help="how long to wait for the driver's SparkContext (default: %(default)s)")
    return parser.parse_args(argv)


def jar_mismatch(running: str, location: str) -> str | None:
    """Why the shim classes in the driver (built from sources with fingerprint ``running``) must not be
    driven by this package, or None when they may (the same sources, or no fingerprint to compare)."""
    from sparkshim.build import PACKAGED_JAR, SOURCES_ATTR, jar_manifest

    if not running or not PACKAGED_JAR.exists():
        return None
    ours = jar_manifest(PACKAGED_JAR).get(SOURCES_ATTR, "")
    if not ours or ours == running:
        return None
    return (f"the shim jar in the driver ({location}) was built from other sources than this Python package's ({PACKAGED_JAR}); "
            "pass that one: --jars $(python -m sparkshim.build --print-path)")


def gateway_unreachable(port: int, secret: str, timeout: float = GATEWAY_TIMEOUT) -> str | None:
    """Why the driver's gateway on ``port`` cannot be used, or None when it accepted ``secret``. One connection
    that authenticates as py4j's do (the line ``A``, then the secret) and ends: every cause in one phrase, so a
    failure is one clear line, not a py4j traceback."""
    where = f"{GATEWAY_HOST}:{port}"
    closed = (f"the gateway at {where} closed the connection before reading the secret: all its slots are taken "
              "by other local connections without the secret (another local user or process is holding them)")
    try:
        with socket.create_connection((GATEWAY_HOST, port), timeout=timeout) as conn:
            conn.sendall(f"A\n{secret}\n".encode())
            reply = conn.makefile("rb").readline()
    except ConnectionRefusedError:
        return f"connection refused at {where} (the driver's gateway is not listening: the driver stopped or is stopping)"
    except TimeoutError:
        return f"no answer from {where} within {timeout:g} s (the driver JVM may be overloaded or stopped)"
    except (ConnectionResetError, BrokenPipeError):
        return closed
    except OSError as exc:
        return f"cannot connect to {where}: {exc.strerror or exc}"
    if not reply:
        return closed
    if not reply.startswith(b"!y"):
        return f"the gateway at {where} refused the brain's secret ({reply.decode(errors='replace').strip()[:80]})"
    return None


def wrap(gateway: Any, scala_sc: Any) -> Any:
    """A pyspark ``SparkContext`` over the driver's running one (its own conf, nothing set on it)."""
    from pyspark import SparkConf, SparkContext

    jsc = gateway.jvm.org.apache.spark.api.java.JavaSparkContext(scala_sc)
    sc = SparkContext(gateway=gateway, jsc=jsc, conf=SparkConf(_jconf=scala_sc.getConf()))
    # The application owns its context: what the brain attached stops with the brain, never the context.
    sc.stop = _leave_context_running  # type: ignore[method-assign]
    return sc


def _leave_context_running() -> None:
    log.debug("the brain does not stop the application's SparkContext")


def start_heartbeat(handle: Any, every: float = HEARTBEAT_SECONDS) -> threading.Event:
    """Calls ``handle.alive()`` now and every ``every`` seconds on a daemon thread until the returned event
    is set or the gateway is gone (the driver is stopping: nothing left to tell)."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                handle.alive()
            except Exception:  # py4j's errors when the driver closed the gateway
                return
            if stop.wait(every):
                return

    threading.Thread(target=beat, name="sparkshim-brain-heartbeat", daemon=True).start()
    return stop


def run(context_wait: float) -> int:
    from pyspark.java_gateway import launch_gateway

    from sparkshim import bridge
    from sparkshim.attach import detach_all
    from sparkshim.conf import ConfigError
    from sparkshim.starthook import attach_enabled

    gateway = launch_gateway()  # connects to PYSPARK_GATEWAY_PORT with PYSPARK_GATEWAY_SECRET
    handle = gateway.entry_point
    start_heartbeat(handle)
    why = jar_mismatch(str(handle.shimSources()), str(handle.shimLocation()))
    if why:
        log.warning("SLAQ/Riffle brain: %s", why)
        return EXIT_NOT_ATTACHED
    bridge.adopt(gateway, handle.shimClassLoader())
    scala_sc = handle.awaitContext(int(context_wait * 1000))
    if scala_sc is None:
        log.warning("SLAQ/Riffle brain: the driver's SparkContext was not ready after %g s", context_wait)
        return EXIT_NOT_ATTACHED
    sc = wrap(gateway, scala_sc)
    # Ctrl-C on the driver's terminal reaches this process too; pyspark's handler would cancel the
    # application's jobs from here. The driver decides: the brain stops when its stdin closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        attach_enabled(sc)
    except ConfigError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    handle.attached()
    try:
        while sys.stdin.buffer.read(4096):  # EOF: the plugin asked us to stop, or the driver is gone
            pass
    finally:
        detach_all()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "PYSPARK_GATEWAY_PORT" not in os.environ or "PYSPARK_GATEWAY_SECRET" not in os.environ:
        print("sparkshim.brain: no gateway to connect to (PYSPARK_GATEWAY_PORT/PYSPARK_GATEWAY_SECRET); the plugin "
              "io.slaqriffle.SlaqRifflePlugin starts this in a driver JVM", file=sys.stderr)
        return EXIT_NOT_ATTACHED
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # the plugin copies these lines into the driver log: not those already there
        handler.addFilter(NotInDriverLog())
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        why = gateway_unreachable(int(os.environ["PYSPARK_GATEWAY_PORT"]), os.environ["PYSPARK_GATEWAY_SECRET"])
        if why is not None:
            log.warning("SLAQ/Riffle brain: cannot reach the driver's gateway: %s; %s", why, PLAIN_SPARK)
            code = EXIT_NO_GATEWAY
        else:
            code = run(args.context_wait)
    except Exception as exc:
        from py4j.protocol import Py4JNetworkError

        if not isinstance(exc, Py4JNetworkError):
            log.exception("SLAQ/Riffle brain failed")
            code = EXIT_NOT_ATTACHED
        else:  # the gateway went away after it answered: the driver is stopping, or its connections were taken since
            log.warning("SLAQ/Riffle brain: lost the driver's gateway: %s", exc)
            code = EXIT_NO_GATEWAY
    sys.stdout.flush()
    # pyspark's and py4j's non-daemon threads must not keep a finished brain alive
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
