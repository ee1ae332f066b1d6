"""``--jars <shim> --conf spark.plugins=io.slaqriffle.SlaqRifflePlugin`` switches Riffle on for drivers
that run no Python (a Java application under ``spark-submit --class``, the ``spark-sql`` CLI), leaves
a pyspark driver to its in-process hook (one brain), and a brain killed mid-application leaves the
application running to a correct result. A brain that is alive but stopped (SIGSTOP) is found out by
its missing heartbeat and fails open the same way, the brain's gateway holds no thread for long for
a connection without its secret, and a brain whose gateway's slots another local process holds says so
in one line. Real driver JVMs, real merger daemon, real shuffle files.
"""

from __future__ import annotations

import os
import queue
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from riffle.merger.node_status import probe
from sparkshim.build import PACKAGED_JAR, javac_command, pyspark_jars
from sparkshim.starthook import PTH_NAME
from srsupport.daemons import DaemonProcess
from srsupport.driver_log import on_lines, our_warnings

PLUGIN = "io.slaqriffle.SlaqRifflePlugin"
QUERY = "SELECT id % 53 AS k, count(*) AS c FROM range(0, 20000, 1, 12) GROUP BY id % 53"
EXPECTED = sorted((k, len(range(k, 20000, 53))) for k in range(53))
BIN = Path(sys.executable).parent

# Runs QUERY (prints its rows and the shuffle blocks its reducers fetched); with --pause it then says
# PAUSED and runs it again for each line on stdin, until stdin ends.
JAVA_APP = """
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public class PluginApp {
  static final AtomicLong BLOCKS = new AtomicLong();

  static void run(SparkSession spark, String tag) throws Exception {
    long before = BLOCKS.get();
    for (Row r : spark.sql("%QUERY%").collectAsList()) {
      System.out.println(tag + "ROW " + r.getLong(0) + " " + r.getLong(1));
    }
    spark.sparkContext().listenerBus().waitUntilEmpty();
    System.out.println(tag + "BLOCKS " + (BLOCKS.get() - before));
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().appName("plugin-app").getOrCreate();
    SparkContext sc = spark.sparkContext();
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onTaskEnd(SparkListenerTaskEnd e) {
        if (e.taskMetrics() != null) {
          BLOCKS.addAndGet(e.taskMetrics().shuffleReadMetrics().totalBlocksFetched());
        }
      }
    });
    run(spark, "1");
    if (args.length > 0 && args[0].equals("--pause")) {
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
      for (int n = 2; ; n++) {
        System.out.println("PAUSED");
        System.out.flush();
        if (in.readLine() == null) {
          break;
        }
        run(spark, Integer.toString(n));
      }
    }
    spark.stop();
  }
}
""".replace("%QUERY%", QUERY)

PY_APP = f"""
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
rows = sorted(tuple(r) for r in spark.sql("{QUERY}").collect())
import riffle.runtime  # only to read what happened; the app never calls riffle
from srsupport.riffle_watch import wait_idle
scheduler = riffle.runtime.current().scheduler
wait_idle(scheduler, 60)
committed = sum(s.merges_committed for s in scheduler.settled.values())
print("RESULT " + __import__("json").dumps({{"rows": rows, "committed": committed}}))
spark.stop()
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("plugin")


@pytest.fixture(scope="module")
def local(work):
    d = work / "local"
    d.mkdir()
    return d


@pytest.fixture(scope="module")
def merger(local):
    daemon = DaemonProcess([local], "--no-fsync")
    yield daemon
    daemon.stop()


@pytest.fixture(scope="module")
def app_jar(work):
    src = work / "src"
    src.mkdir()
    (src / "PluginApp.java").write_text(JAVA_APP)
    classes = work / "classes"
    classes.mkdir()
    compiled = subprocess.run(javac_command(pyspark_jars(), classes) + [str(src / "PluginApp.java")], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    jar = work / "plugin-app.jar"
    with zipfile.ZipFile(jar, "w") as z:  # spark-submit --class needs no manifest
        for cls in classes.rglob("*.class"):
            z.write(cls, cls.relative_to(classes).as_posix())
    return jar


def env() -> dict[str, str]:
    out = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out.pop("PYSPARK_SUBMIT_ARGS", None)
    return out


def confs(local: Path, *extra: str) -> list[str]:
    base = ["spark.ui.enabled=false", f"spark.local.dir={local}", "spark.sql.shuffle.partitions=6",
            "spark.sql.adaptive.enabled=false", *extra]
    return [a for c in base for a in ("--conf", c)]


def plugin_confs(merger: DaemonProcess, *extra: str) -> list[str]:
    return ["--jars", str(PACKAGED_JAR), "--conf", f"spark.plugins={PLUGIN}", "--conf", "spark.riffle.enabled=true",
            "--conf", f"spark.riffle.mergers={merger.address}", "--conf", "spark.riffle.nway=3",
            "--conf", "spark.riffle.cost.enabled=false",  # merge every group: these shuffles are too small to pay on a local disk
            *[a for c in extra for a in ("--conf", c)]]


# Where the executors are is beside the point of a run that checks the driver alone (plain Spark's reference, a
# brain that cannot start, a refused conf): one JVM instead of three. Its block counts equal local-cluster's (the
# stopped brain's run under local[2] is compared with them too)
DRIVER_ONLY = "local[2]"
# Where a run checks what reaches executors in JVMs of their own (the plugin's class from --jars) but not how many
# there are: one executor JVM, not two (the shared session's Riffle tests merge two executors' map outputs)
ONE_EXECUTOR = "local-cluster[1,1,1024]"


def java_submit(app_jar: Path, local: Path, *args: str, app_args: tuple[str, ...] = (),
                master: str = "local-cluster[2,1,1024]") -> list[str]:
    return [str(BIN / "spark-submit"), "--master", master, "--class", "PluginApp", *confs(local), *args, str(app_jar), *app_args]


def tagged(lines: list[str], tag: str) -> tuple[list[tuple[int, int]], int]:
    rows = sorted((int(k), int(c)) for k, c in (x.split()[1:] for x in lines if x.startswith(tag + "ROW ")))
    blocks = next(int(x.split()[1]) for x in lines if x.startswith(tag + "BLOCKS "))
    return rows, blocks


def completed(merger: DaemonProcess) -> int:
    return int(probe(merger.address, None, None, 5.0)["completed"])


def children_running(parent: int, module: str) -> list[int]:
    """Processes whose parent is ``parent`` and whose command line runs ``python -m module``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and module.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def vanilla(app_jar, local):
    proc = subprocess.run(java_submit(app_jar, local, master=DRIVER_ONLY), capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr[-4000:]
    return tagged(proc.stdout.splitlines(), "1")


@pytest.fixture(scope="module")
def java_with_plugin(app_jar, local, merger):
    """The Java app with the plugin: query 1, then the brain is SIGKILLed, then query 2. The hold timeout
    is far longer than the run may take, so query 2 finishes only if the dead brain's holds fail open."""
    before = completed(merger)
    stderr = (local.parent / "java-plugin.stderr").open("w+")
    args = java_submit(app_jar, local, *plugin_confs(merger, "spark.riffle.holdTimeout=600s"), app_args=("--pause",))
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env())
    out: list[str] = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            out.append(line.rstrip("\n"))
            if line.startswith("PAUSED"):
                break
        merged_by_query_1 = completed(merger) - before
        brains = children_running(proc.pid, "sparkshim.brain")
        for pid in brains:
            os.kill(pid, signal.SIGKILL)
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        rest, _ = proc.communicate(timeout=200)
        out += rest.splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.seek(0)
        log = stderr.read()
        stderr.close()
    assert proc.returncode == 0, log[-6000:]
    return {"out": out, "log": log, "brains": brains, "merged_by_query_1": merged_by_query_1}


class AppLines:
    """A running app's stdout lines, waited for with a deadline (a hung app fails the test, not the run)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.seen: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def until(self, prefix: str, timeout: float) -> bool:
        """Whether a line starting with ``prefix`` came within ``timeout`` s (the lines before it are kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                return False
            if line is None:
                return False
            self.seen.append(line)
            if line.startswith(prefix):
                return True
        return False

    def run_query(self, timeout: float) -> bool:
        """Runs the query once more; whether it finished (its BLOCKS line) within ``timeout`` s."""
        self.proc.stdin.write("go\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self.until("PAUSED", timeout)


def jvm_threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def flood(port: int, count: int, within: float, jvm: int) -> dict[str, int]:
    """Opens ``count`` connections to ``port`` that never send anything; how many the other side closed
    within ``within`` s, and the JVM's threads before and at most while they were open."""
    before = jvm_threads(jvm)
    socks, closed = [], 0
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except ConnectionResetError:  # accepted and closed before connect() returned
            closed += 1
    sel = selectors.DefaultSelector()
    for sock in socks:
        sel.register(sock, selectors.EVENT_READ)
    peak = before
    deadline = time.monotonic() + within
    try:
        while closed < count and (left := deadline - time.monotonic()) > 0:
            peak = max(peak, jvm_threads(jvm))
            for key, _ in sel.select(min(left, 0.2)):
                sel.unregister(key.fileobj)
                try:
                    data = key.fileobj.recv(64)  # type: ignore[union-attr]
                except OSError:  # reset
                    data = b""
                closed += data == b""
    finally:
        for sock in socks:
            sock.close()
    return {"closed": closed, "before": before, "peak": peak}


def wait_gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() and "(Z)" not in state(pid) for pid in pids):
            return True
        time.sleep(0.2)
    return False


def state(pid: int) -> str:
    try:
        return "(" + Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] + ")"
    except OSError:
        return "(gone)"


STUCK_DEADLINE = 30  # BrainWatchdog.DEADLINE_MILLIS
IDLE_CONNECTIONS = 100


def run_stuck_brain(app_jar: Path, local: Path, merger: DaemonProcess, stopped: threading.Event) -> dict:
    """The Java app with SLAQ and Riffle under a ``local[2]`` master (no periodic revive of offers, as
    spark-sql's default master): query 1; idle connections to the brain's gateway; query 2 (the brain
    still merges); the brain SIGSTOPped (``stopped`` is set), query 3; once the watchdog ended it, query 4.
    Each step has a deadline; at the end the brain is resumed and killed so nothing outlives the test."""
    stderr_path = local.parent / "stuck-brain.stderr"
    stderr = stderr_path.open("w")
    args = java_submit(app_jar, local, *plugin_confs(merger, "spark.riffle.holdTimeout=5s", "spark.slaq.enabled=true",
                                                     "spark.scheduler.mode=FAIR"), app_args=("--pause",), master="local[2]")
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env())
    lines = AppLines(proc)
    out: dict = {"steps": []}
    brains: list[int] = []
    try:
        assert lines.until("PAUSED", 240), stderr_path.read_text()[-4000:]
        brains = children_running(proc.pid, "sparkshim.brain")
        port = int(re.findall(r"on loopback gateway port (\d+)", stderr_path.read_text())[0])
        out["flood"] = flood(port, IDLE_CONNECTIONS, 15.0, proc.pid)
        before = completed(merger)
        out["steps"].append(lines.run_query(120))
        out["merged_after_flood"] = completed(merger) - before
        for pid in brains:
            os.kill(pid, signal.SIGSTOP)
        stopped.set()
        out["steps"].append(lines.run_query(60))  # before the watchdog's deadline: the held reducers' own timeout
        out["brains_after_stopped_query"] = [state(pid) for pid in brains]  # "(T)": still stopped, not yet ended
        out["brain_ended"] = wait_gone(brains, STUCK_DEADLINE + 30)
        out["steps"].append(lines.run_query(60))
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            out["exit"] = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            out["exit"] = None
    finally:
        for pid in brains:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    out["out"] = lines.seen
    out["log"] = stderr_path.read_text()
    return out


@pytest.fixture(scope="module")
def stuck_brain_until_stopped(app_jar, work):
    """:func:`run_stuck_brain` in a thread, returned once the brain is stopped: from there the run mostly waits out
    the watchdog's deadline, and the module's other runs (``vanilla``, ``java_with_plugin``) use that wait. Its own
    local dir and merger, so the merges each run counts are its own."""
    local = work / "stuck-local"
    local.mkdir()
    merger = DaemonProcess([local], "--no-fsync")
    stopped = threading.Event()
    result: dict = {}

    def run() -> None:
        try:
            result["out"] = run_stuck_brain(app_jar, local, merger, stopped)
        except BaseException as e:  # re-raised in the test's thread by stuck_brain
            result["error"] = e
        finally:
            stopped.set()

    thread = threading.Thread(target=run, name="stuck-brain", daemon=True)
    thread.start()
    try:
        stopped.wait(600)  # the run's own deadlines end it well before
        yield thread, result
    finally:
        thread.join(600)
        merger.stop()


@pytest.fixture(scope="module")
def stuck_brain(stuck_brain_until_stopped, vanilla, java_with_plugin):
    """The stuck brain's run, finished (``vanilla`` and ``java_with_plugin`` ran while it waited for the watchdog)."""
    thread, result = stuck_brain_until_stopped
    thread.join(600)
    assert not thread.is_alive(), "the stuck brain's run did not end"
    if "error" in result:
        raise result["error"]
    return result["out"]


def test_the_brains_gateway_closes_connections_without_the_secret_and_holds_few_threads(stuck_brain):
    flooded = stuck_brain["flood"]
    assert flooded["closed"] == IDLE_CONNECTIONS, (flooded, stuck_brain["log"][-3000:])  # all within 15 s
    assert flooded["peak"] - flooded["before"] <= 16 + 8, flooded  # BrainGateway.MAX_UNAUTHENTICATED, and Spark's own
    assert stuck_brain["steps"][0] and stuck_brain["merged_after_flood"] > 0, stuck_brain["log"][-4000:]
    refused = [line for line in stuck_brain["log"].splitlines() if "WARN" in line and "brain's gateway" in line]
    assert len(refused) == 1, refused


def test_a_stopped_brain_is_found_out_and_fails_open(stuck_brain, vanilla):
    log = stuck_brain["log"]
    assert stuck_brain["steps"][1], log[-4000:]  # the reducers ran with the brain stopped: the shim holds only what it asks
    assert set(stuck_brain["brains_after_stopped_query"]) == {"(T)"}, stuck_brain["brains_after_stopped_query"]  # not after the watchdog ended it
    assert stuck_brain["brain_ended"], log[-4000:]
    stuck = [line for line in log.splitlines() if "WARN" in line and "plugin: the brain" in line and "stopped answering" in line]
    assert len(stuck) == 1 and "SLAQ and Riffle fail open" in stuck[0], log[-4000:]
    assert "SLAQ: all job pools opened" in log and "Riffle: merging stopped" in log, log[-4000:]
    assert stuck_brain["steps"][2], log[-4000:]
    rows, blocks = tagged(stuck_brain["out"], "4")
    assert rows == EXPECTED and blocks == vanilla[1]  # plain Spark again
    assert tagged(stuck_brain["out"], "3")[0] == EXPECTED
    assert stuck_brain["exit"] == 0, log[-4000:]


def test_java_app_merges_with_only_the_plugin_confs(java_with_plugin, vanilla):
    rows, blocks = tagged(java_with_plugin["out"], "1")
    assert rows == vanilla[0] == EXPECTED
    assert java_with_plugin["merged_by_query_1"] > 0, java_with_plugin["log"][-4000:]
    assert blocks < vanilla[1], (blocks, vanilla[1])  # the reducers read the merged files: fewer, larger blocks
    assert "started the brain" in java_with_plugin["log"]
    assert len(java_with_plugin["brains"]) == 1


def test_a_killed_brain_leaves_the_app_running_to_a_correct_result(java_with_plugin, vanilla):
    rows, blocks = tagged(java_with_plugin["out"], "2")
    assert rows == EXPECTED
    assert blocks == vanilla[1]  # plain Spark again: every map output read as it is
    assert "SLAQ and Riffle fail open" in java_with_plugin["log"], java_with_plugin["log"][-4000:]


def test_spark_sql_cli_merges_with_only_jars_and_confs(local, merger, work):
    """Run from a directory holding the project's packages (a clone's root; broken here): the brain imports the installed ones."""
    clone = work / "clone"
    for package in ("riffle", "slaq", "sparkshim"):
        (clone / package).mkdir(parents=True)
        (clone / package / "__init__.py").write_text("raise ImportError('a package of the working directory was imported')\n")
    before = completed(merger)
    # an in-memory catalog: no Derby metastore to create (seconds of start-up), and nothing here reads a table
    args = [str(BIN / "spark-sql"), "--master", ONE_EXECUTOR,
            *confs(local, f"spark.sql.warehouse.dir={work / 'wh'}", "spark.sql.catalogImplementation=in-memory"),
            *plugin_confs(merger), "-e", QUERY]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env(), cwd=clone)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = sorted(tuple(int(x) for x in line.split("\t")) for line in proc.stdout.splitlines() if re.fullmatch(r"\d+\t\d+", line))
    assert rows == EXPECTED
    assert completed(merger) > before, proc.stderr[-4000:]
    # at spark-sql's console (WARN and coarser), Riffle says it is on, once, and a normal stop warns of nothing
    said = on_lines(proc.stderr)
    assert len(said) == 1 and "Riffle: on for app-" in said[0] and "no Riffle tab" in said[0], proc.stderr[-4000:]
    assert our_warnings(proc.stderr) == [], proc.stderr[-4000:]
    assert "working directory was imported" not in proc.stderr and "brain ended" not in proc.stderr
    # and what Riffle did, once, at the application's end (it was logged below the console's WARN: spark-sql showed nothing)
    summary = [line for line in proc.stderr.splitlines() if "Riffle summary: " in line]
    assert len(summary) == 1 and re.search(r"\d+ settled \([1-9]\d* with groups merged\)", summary[0]), proc.stderr[-4000:]


def test_pyspark_app_with_the_plugin_keeps_one_in_process_brain(local, merger, work):
    import json
    import sysconfig

    if not (Path(sysconfig.get_paths()["purelib"]) / PTH_NAME).exists():
        pytest.fail("the start-up hook is not installed; scripts/setup.sh installs it (python -m sparkshim.autoload install)")
    app = work / "app.py"
    app.write_text(PY_APP)
    args = [str(BIN / "spark-submit"), "--master", "local-cluster[2,1,1024]", *confs(local), *plugin_confs(merger), str(app)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT "):])
    assert sorted(map(tuple, out["rows"])) == EXPECTED
    assert out["committed"] > 0
    assert "this is a pyspark driver" in proc.stderr
    assert "started the brain" not in proc.stderr
    said = on_lines(proc.stderr)  # the Python side's "on" line reaches the driver log, once
    assert len(said) == 1 and "Riffle: on for app-" in said[0], proc.stderr[-4000:]


def test_a_brain_that_cannot_start_is_one_warning_and_plain_spark(app_jar, local, merger, work):
    missing = work / "no-such-python"
    args = java_submit(app_jar, local, *plugin_confs(merger, f"spark.pyspark.driver.python={missing}"), master=DRIVER_ONLY)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert tagged(proc.stdout.splitlines(), "1")[0] == EXPECTED
    warnings = [line for line in proc.stderr.splitlines() if "WARN" in line and "cannot start the brain" in line]
    assert len(warnings) == 1 and str(missing) in warnings[0] and "spark.pyspark.driver.python" in warnings[0], proc.stderr[-4000:]


def test_a_token_file_that_is_a_fifo_is_one_error_line_and_plain_spark_at_once(app_jar, local, merger, work, vanilla):
    """The brain refuses the conf at once, naming it in one line, and the application runs as plain Spark: it
    neither waits out the attach wait (60 s) nor the brain's stop (20 s), as when the brain blocked on the FIFO."""
    fifo = work / "token-fifo"
    os.mkfifo(fifo)
    args = java_submit(app_jar, local, *plugin_confs(merger, f"spark.riffle.authTokenFile={fifo}"), master=DRIVER_ONLY)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert tagged(proc.stdout.splitlines(), "1") == vanilla  # the same rows, every map output read as it is
    named = [line for line in proc.stderr.splitlines() if "spark.riffle.authTokenFile" in line]
    assert len(named) == 1 and f"{fifo}: not a regular file but a FIFO" in named[0], proc.stderr[-4000:]
    assert "has not attached after" not in proc.stderr and "did not stop within" not in proc.stderr, proc.stderr[-4000:]


# Another local process holding the brain's gateway's slots for connections waiting for the secret (16, as
# BrainGateway.MAX_UNAUTHENTICATED) from the start: it opens them, says "held", and opens one again whenever the
# gateway closes one (each after 5 s without the secret), until the gateway stops listening or 120 s passed.
HOLDER = """
import os, selectors, socket, sys, time
port = int(sys.argv[1])
open(sys.argv[2], "w").write(str(os.getpid()))
sel = selectors.DefaultSelector()
for _ in range(16):
    sel.register(socket.create_connection(("127.0.0.1", port), timeout=5), selectors.EVENT_READ)
print("held", flush=True)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    for key, _ in sel.select(1.0):
        sel.unregister(key.fileobj)
        key.fileobj.close()
        try:
            sel.register(socket.create_connection(("127.0.0.1", port), timeout=5), selectors.EVENT_READ)
        except OSError:
            sys.exit(0)
"""

# The brain's Python: starts the holder against the gateway the plugin opened for it, and only once the slots are
# held runs the brain (`python -m sparkshim.brain`, as the plugin asked)
HELD_SLOTS_PYTHON = """#!{python}
import os, subprocess, sys
holder = subprocess.Popen([sys.executable, "-c", {holder!r}, os.environ["PYSPARK_GATEWAY_PORT"], {pidfile!r}],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
if holder.stdout.readline().strip() != b"held":
    sys.exit("the holder did not hold the gateway's slots")
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def test_a_brain_whose_gateway_slots_are_held_says_so_in_one_line_and_the_app_runs_as_plain_spark(app_jar, local, work):
    """Not a traceback, and not a Python install blamed: the one line names the cause."""
    pidfile = work / "holder.pid"
    python = work / "python-behind-held-slots"
    python.write_text(HELD_SLOTS_PYTHON.format(python=sys.executable, holder=HOLDER, pidfile=str(pidfile)))
    python.chmod(0o755)
    args = java_submit(app_jar, local, "--jars", str(PACKAGED_JAR), "--conf", f"spark.plugins={PLUGIN}",
                       "--conf", "spark.slaq.enabled=true", "--conf", "spark.scheduler.mode=FAIR",
                       "--conf", f"spark.pyspark.driver.python={python}", master=DRIVER_ONLY)
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env())
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert tagged(proc.stdout.splitlines(), "1")[0] == EXPECTED
    assert "started the brain" in proc.stderr, proc.stderr[-4000:]
    said = our_warnings(proc.stderr)
    assert len(said) == 1, said
    assert "cannot reach the driver's gateway" in said[0] and "slots are taken by other local connections" in said[0], said
    assert "plain Spark" in said[0]
    assert "Traceback" not in proc.stderr and "importable" not in proc.stderr, proc.stderr[-4000:]
