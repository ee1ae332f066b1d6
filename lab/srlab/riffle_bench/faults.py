"""The fault matrix of Riffle on a multi-node standalone cluster: each case disturbs one shuffle at a
deterministic point and records what must hold afterwards (vanilla's rows, nothing of Riffle's left on
any node, which merges were committed or fell back). ``tests/cluster/test_fault_matrix.py`` asserts on
the outcomes; ``riffle bench faults`` times each case against an undisturbed run of the same job.

Points are driven by events, never by sleeping: a case's hook runs in the driver's merge-scheduler
thread just before it handles a chosen event (the map stage's first outputs, its end), or a watcher
waits for a merger's own log line (a merge stalled at a publish step by fault injection). The SIGSTOP
cases stop the real daemon process; the disk-full case fills a real small file system (tmpfs) mounted
as one node's local dir, which needs root: without it, that node's merger fails every write with
ENOSPC by fault injection instead (Spark's own writes on that node then still succeed).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import add
from pathlib import Path
from typing import Any

from riffle import messages
from riffle.driver.settled import SettledShuffle
from riffle.merger.faults import FAIL_ENV, PAUSE_ENV
from riffle.merger.publish import TEMP_PREFIX
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srlab.cluster.harness import Cluster, running_cluster, wait_executors
from srlab.cluster.layout import NodeLayout, node_local_dir
from srlab.storage.disks import backing_dir
from srlab.storage.model import DiskProfile
from srsupport.riffle_watch import forget_refusals, mark_all_up, on_events, set_merging, use_config, wait_idle

log = logging.getLogger("srlab.faults")
KEYS, ROWS, MAPS, REDUCERS = 41, 12000, 12, 6
APP_LEASE = 4.0  # the mergers' --app-lease on the fault cluster: a killed driver's files go within this + lease / 4
RPC_TIMEOUT = 2.0  # spark.riffle.rpcTimeout of the SIGSTOP cases: the stop outlasts it
DISK_MB = 64  # the small file system of the disk-full node
SESSION_CONF = {  # a node whose disk fills fails its tasks: they are retried on the other nodes, not there
    "spark.task.maxFailures": "8", "spark.excludeOnFailure.enabled": "true",
    "spark.excludeOnFailure.application.maxFailedTasksPerExecutor": "1000",
    "spark.excludeOnFailure.stage.maxFailedTasksPerExecutor": "1000",
    "spark.excludeOnFailure.application.maxFailedExecutorsPerNode": "1000",
    "spark.excludeOnFailure.stage.maxFailedExecutorsPerNode": "1000",
}


# ---------------------------------------------------------------- the job and what is on disk
def expected() -> list[tuple[int, int]]:
    """Vanilla's answer, computed without Spark."""
    return sorted({k: sum(x for x in range(ROWS) if x % KEYS == k) for k in range(KEYS)}.items())


def job(sc: Any) -> list[tuple[int, int]]:
    """A few-second RDD shuffle (PySpark pair RDDs pick Kryo, so Riffle merges it)."""
    return sorted(sc.parallelize(range(ROWS), MAPS).map(lambda x: (x % KEYS, x)).reduceByKey(add, REDUCERS).collect())


def files_under(root: str | Path) -> Iterator[Path]:
    """Every file below ``root``, walked while workers and mergers may be deleting dirs in it (``os.walk`` passes
    over a dir gone before it is read; ``Path.rglob`` raises FileNotFoundError for it)."""
    for parent, _, names in os.walk(root):
        for name in names:
            yield Path(parent) / name


def riffle_files(cluster: Cluster) -> list[str]:
    """Everything of Riffle's on any node: merged files (synthetic map ids), merge temps, merge records."""
    found = []
    for node in cluster.layout.nodes:
        for p in files_under(node.local_dir):
            parts = p.name.split("_")
            merged = p.name.startswith("shuffle_") and len(parts) == 4 and parts[2].isdigit() and int(parts[2]) >= SYNTHETIC_MAP_ID_BASE
            record = ".riffle-merger" in p.parts and p.suffix == ".json"
            if merged or record or p.name.startswith(TEMP_PREFIX):
                found.append(str(p))
    return sorted(found)


def app_files(cluster: Cluster) -> list[str]:
    """Files (not dirs: a standalone worker leaves each application's emptied ``spark-*`` dir) of Spark's own
    under the nodes' local dirs."""
    return sorted(str(p) for n in cluster.layout.nodes for p in files_under(n.local_dir) if ".riffle-merger" not in p.parts)


def merger_pid(cluster: Cluster, node: NodeLayout) -> int:
    return cluster.pids[f"merger-{node.index}"]


class LogWatch:
    """Waits for a line in a cluster process's log written after this watch was made."""

    def __init__(self, cluster: Cluster, role: str):
        self.path = Path(cluster.layout.log_file(role))
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def text(self) -> str:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace")

    def wait(self, needle: str, timeout: float, stop: threading.Event | None = None) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (stop and stop.is_set()):
            if needle in self.text():
                return True
            time.sleep(0.02)
        return False


# ---------------------------------------------------------------- the cluster
def can_mount_tmpfs(where: Path) -> bool:
    """Whether this process may mount a small tmpfs (root, or CAP_SYS_ADMIN); probes once and unmounts."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True).returncode == 0
    except OSError:  # no mount command
        return False
    if ok:
        subprocess.run(["umount", str(where)], check=True)
    return ok


@contextmanager
def fault_cluster(base_dir: Path, small_disk: bool | None = None, storage: DiskProfile | None = None) -> Iterator[Cluster]:
    """Three nodes (token + TLS, short application lease); node 3's local dir a ``DISK_MB`` tmpfs when allowed
    (with ``storage``, every node's local dir a simulated disk, node 3's backed by that tmpfs)."""
    base_dir = Path(base_dir)
    local = node_local_dir(base_dir, 3)
    disk = backing_dir(local) if storage else local
    if small_disk is None:  # SRLAB_FAULTS_SMALL_DISK=0 forces the injected variant (what a CI runner without root gets)
        small_disk = os.environ.get("SRLAB_FAULTS_SMALL_DISK") != "0" and can_mount_tmpfs(base_dir / "probe")
    if small_disk:
        disk.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0755", "tmpfs", str(disk)], check=True)
    try:
        with running_cluster(nodes=3, base_dir=base_dir, tls=True, merger_args=("--no-fsync", "--app-lease", str(APP_LEASE)),
                             storage=storage) as c:
            c.small_disk = small_disk  # type: ignore[attr-defined]
            yield c
    finally:
        if small_disk:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def restart_merger(cluster: Cluster, node: NodeLayout, env: dict[str, str] | None = None, kill: bool = False,
                   token_file: str | None = None) -> None:
    extra = ("--no-fsync", "--app-lease", str(APP_LEASE)) + (("--token-file", token_file) if token_file else ())
    cluster.restart_merger(node, extra, env, kill=kill)


# ---------------------------------------------------------------- one case in a running session
@dataclass
class Outcome:
    case: str
    seconds: float
    correct: bool
    shuffles: list[SettledShuffle]  # what each of the case's shuffles ended as
    merges: list[dict]    # every merge of those shuffles: its node, final state and error
    orphans: list[str]    # Riffle's files left on the nodes after the application's cleanup
    warnings: list[str]   # WARN lines of the driver's Riffle logger during the case
    detail: dict = field(default_factory=dict)

    def committed_on(self, host: str | None = None) -> int:
        return sum(1 for m in self.merges if m["state"] == "done" and (host is None or m["host"] == host))

    def failed_on(self, host: str, code: str = "") -> int:
        return sum(1 for m in self.merges if m["state"] == "failed" and m["host"] == host and code in m["error"])

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Case:
    """A disturbance: ``setup`` before the job, ``on_event`` at its deterministic point (in the scheduler
    thread), ``watch`` alongside the job (in a thread of its own), ``restore`` after it."""

    name: str
    nway: int = 2
    rpc_timeout: float = 60.0
    setup: Callable[[FaultRun], None] = lambda run: None
    on_event: Callable[[FaultRun, Any], None] = lambda run, e: None
    watch: Callable[[FaultRun], None] | None = None
    restore: Callable[[FaultRun], None] = lambda run: None


@dataclass
class FaultRun:
    """One case's run: the cluster, the driver's scheduler, and what the case noted along the way."""

    cluster: Cluster
    scheduler: Any
    notes: dict = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def node(self, index: int) -> NodeLayout:
        return self.cluster.layout.nodes[index - 1]


def run_case(cluster: Cluster, spark: Any, scheduler: Any, case: Case) -> Outcome:
    """Runs the job once under ``case`` with merging on; then does what the application does when it ends
    (deletes its merged files everywhere) and lists what is left."""
    run = FaultRun(cluster, scheduler)
    base = scheduler.config
    mark_all_up(scheduler.fleet)
    use_config(scheduler, dataclasses.replace(base, nway=case.nway, rpc_timeout=case.rpc_timeout, best_effort=1.0))
    set_merging(scheduler, True)
    captured = _Captured()
    logging.getLogger("riffle.driver").addHandler(captured)
    before = set(scheduler.shuffles)
    case.setup(run)
    watcher = threading.Thread(target=case.watch, args=(run,), daemon=True) if case.watch else None
    try:
        if watcher:
            watcher.start()
        with on_events(scheduler, lambda e: case.on_event(run, e)):
            started = time.perf_counter()
            result = job(spark.sparkContext)
            idle = wait_idle(scheduler, 120)
            seconds = time.perf_counter() - started
    finally:
        run.stop.set()
        if watcher:
            watcher.join(60)
        case.restore(run)
        use_config(scheduler, base)
        logging.getLogger("riffle.driver").removeHandler(captured)
    states = [scheduler.shuffles[sid] for sid in sorted(set(scheduler.shuffles) - before)]
    host_of = {cluster.layout.merger_address(n): n.host for n in cluster.layout.nodes}
    merges = [{"shuffle": m.shuffle_id, "host": host_of.get(m.merger, m.merger), "state": m.state.value, "error": m.error,
               "outputs": len(m.members)} for s in states for m in s.merges]
    stats = [scheduler.settled[s.shuffle_id] for s in states if s.shuffle_id in scheduler.settled]
    scheduler.fleet.cleanup_all()  # what an application's end does (ApplicationEnd)
    orphans = riffle_files(cluster)
    return Outcome(case.name, round(seconds, 3), result == expected() and idle, stats, merges, orphans, captured.lines, run.notes)


# ---------------------------------------------------------------- the cases
def _on_map_output(index: int, count: int, action: Callable[[FaultRun], None]) -> Callable[[FaultRun, Any], None]:
    """A hook that runs ``action`` once, when node ``index`` reports its ``count``-th map output of the case."""
    def hook(run: FaultRun, e: Any) -> None:
        if isinstance(e, messages.MapOutput) and e.attempt == 0 and e.host == run.node(index).host and "fired" not in run.notes:
            run.notes["outputs_seen"] = run.notes.get("outputs_seen", 0) + 1
            if run.notes["outputs_seen"] == count:
                run.notes["fired"] = True
                action(run)
    return hook


def _sigstop(index: int) -> Callable[[FaultRun], None]:
    def stop(run: FaultRun) -> None:
        os.kill(merger_pid(run.cluster, run.node(index)), signal.SIGSTOP)
        run.notes["stopped_at"] = time.monotonic()
    return stop


def _sigcont(index: int) -> Callable[[FaultRun], None]:
    def cont(run: FaultRun) -> None:
        if "stopped_at" in run.notes:
            run.notes["stopped_seconds"] = round(time.monotonic() - run.notes.pop("stopped_at"), 3)
            os.kill(merger_pid(run.cluster, run.node(index)), signal.SIGCONT)
    return cont


def _stop_at_map_stage_done(run: FaultRun, e: Any) -> None:
    if isinstance(e, messages.MapStageDone) and e.succeeded and "stopped_at" not in run.notes:
        _sigstop(2)(run)


def _crash_while_publishing(run: FaultRun) -> None:
    """Node 2's merger stalls at its publish step "recorded" (merge written, record made, nothing linked):
    SIGKILL it there and start it again."""
    if run.notes["watch"].wait("fault injected: pausing", 90, run.stop):
        restart_merger(run.cluster, run.node(2), kill=True)
        run.notes["restarted"] = True


def _setup_crash(run: FaultRun) -> None:
    node = run.node(2)
    restart_merger(run.cluster, node, env={PAUSE_ENV: "recorded:120"})
    run.notes["watch"] = LogWatch(run.cluster, f"merger-{node.index}")


def _restore_crash(run: FaultRun) -> None:
    watch = run.notes.pop("watch")
    run.notes["recovery_log"] = [json.loads(line)["msg"] for line in watch.text().splitlines()
                                 if "recovered" in line or "temp files left" in line][:3]
    if not run.notes.get("restarted"):
        restart_merger(run.cluster, run.node(2))


def _fill(path: Path) -> int:
    """Fills the file system of ``path`` with one file; returns the bytes written."""
    filler = path / "filler"
    written = 0
    chunk = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    return written
                chunk = chunk[: len(chunk) // 16 or 1]


def _fill_disk(run: FaultRun) -> None:
    node = run.node(3)
    if getattr(run.cluster, "small_disk", False):
        run.notes["filled_bytes"] = _fill(Path(node.local_dir))
        run.notes["how"] = f"tmpfs of {DISK_MB} MB filled"


def _setup_disk(run: FaultRun) -> None:
    if not getattr(run.cluster, "small_disk", False):  # no tmpfs: the merger's writes fail as on a full disk
        restart_merger(run.cluster, run.node(3), env={FAIL_ENV: "temp-create:ENOSPC"})
        run.notes["how"] = "ENOSPC injected into the merger (no privilege to mount a small file system)"


def _restore_disk(run: FaultRun) -> None:
    filler = Path(run.node(3).local_dir) / "filler"
    if filler.exists():
        filler.unlink()
    if not getattr(run.cluster, "small_disk", False):
        restart_merger(run.cluster, run.node(3))


def _rotate_tokens(run: FaultRun, e: Any) -> None:
    if isinstance(e, messages.MapStageSubmitted) and "rotated" not in run.notes:
        run.notes["rotated"] = True
        new = Path(run.cluster.layout.token_file).with_name("merger-token-rotated")
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32))
        for node in run.cluster.layout.nodes:
            restart_merger(run.cluster, node, token_file=str(new))


def _restore_tokens(run: FaultRun) -> None:
    for node in run.cluster.layout.nodes:
        restart_merger(run.cluster, node)
    forget_refusals(run.scheduler.fleet)


CASES: dict[str, Case] = {c.name: c for c in (
    Case("undisturbed"),
    Case("merger-stopped-in-map-stage", nway=2, rpc_timeout=RPC_TIMEOUT, on_event=_on_map_output(2, 1, _sigstop(2)), restore=_sigcont(2)),
    Case("merger-stopped-in-reducer-gate", nway=20, rpc_timeout=RPC_TIMEOUT, on_event=_stop_at_map_stage_done, restore=_sigcont(2)),
    Case("merger-restarted-before-commit", nway=2, setup=_setup_crash, watch=_crash_while_publishing, restore=_restore_crash),
    Case("token-rotated", nway=2, on_event=_rotate_tokens, restore=_restore_tokens),
    Case("disk-full-in-map-stage", nway=2, setup=_setup_disk, on_event=_on_map_output(3, 2, _fill_disk), restore=_restore_disk),
)}


# ---------------------------------------------------------------- the driver killed (its own process)
DRIVER_APP = """
from pyspark.sql import SparkSession
from srlab.cluster.harness import wait_executors
from srlab.riffle_bench.faults import job
sc = SparkSession.builder.getOrCreate().sparkContext
wait_executors(sc, 3)
job(sc)
"""


def run_driver_killed(cluster: Cluster, workdir: Path, pause: float = 2.0) -> dict:
    """A driver (spark-submit, its own process group) SIGKILLed while its merges are in flight: every merger
    holds each merge ``pause`` s at its last publish step, "committed" (the pair published and recorded, the
    reply not yet sent). Returns how long until nothing of Riffle's (merged files, temps, merge records) and
    no file of the application is left on any node, and the mergers' lease lines."""
    env = {PAUSE_ENV: f"committed:{pause}"}
    for node in cluster.layout.nodes:
        restart_merger(cluster, node, env=env)
    watches = [LogWatch(cluster, f"merger-{n.index}") for n in cluster.layout.nodes]
    app = workdir / "killed_driver_app.py"
    app.write_text(DRIVER_APP)
    confs = cluster.driver_conf() | {"spark.ui.enabled": "false", "spark.riffle.enabled": "true", "spark.riffle.nway": "2",
                                     "spark.riffle.bestEffort": "1.0", "spark.scheduler.mode": "FAIR",
                                     "spark.riffle.cost.enabled": "false"}  # every group merged: the faults need merges
    args = [str(Path(sys.executable).parent / "spark-submit"), "--master", confs.pop("spark.master")]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    lab = str(Path(__file__).resolve().parents[2])
    root = str(Path(__file__).resolve().parents[3])
    penv = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join([root, lab, os.environ.get("PYTHONPATH", "")])}
    out = open(workdir / "killed_driver.log", "wb")
    proc = subprocess.Popen(args + [str(app)], stdout=out, stderr=subprocess.STDOUT, env=penv, start_new_session=True)
    outcome: dict = {"case": "driver-killed"}
    try:
        deadline = time.monotonic() + 180
        while not any("fault injected: pausing" in w.text() for w in watches):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the driver ended before any merge was in flight: "
                                   + (workdir / "killed_driver.log").read_text(errors="replace")[-3000:])
            time.sleep(0.02)
        outcome["files_at_kill"] = len(riffle_files(cluster))
        os.killpg(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait(30)
        left: list[str] = []
        while time.monotonic() - killed < 120:
            left = riffle_files(cluster) + app_files(cluster)
            if not left:
                break
            time.sleep(0.1)
        clean_seconds = time.monotonic() - killed
        # a merger logs its lease line just after deleting what the lease held: the files can be gone before the line is
        # written. The merge held at "committed" left a record, so the merger holding it writes one
        lease, undone = "(its lease)", "the caller cancelled it"
        deadline = time.monotonic() + 10
        while not left and not any(lease in w.text() for w in watches) and time.monotonic() < deadline:
            time.sleep(0.05)
        messages = [json.loads(line)["msg"] for w in watches for line in w.text().splitlines() if lease in line or undone in line]
        outcome |= {"clean_seconds": round(clean_seconds, 3), "left": left,
                    "merger_log": [m for m in messages if lease in m],
                    # merges the driver's death ended while they ran or waited (each merger logs them at once)
                    "undone_on_disconnect": [m for m in messages if undone in m]}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        out.close()
        for node in cluster.layout.nodes:
            restart_merger(cluster, node)
    return outcome


# ---------------------------------------------------------------- the benchmark
def bench_faults(base_dir: Path, repeat: int = 1, storage: DiskProfile | None = None) -> dict:
    """Every case timed against an undisturbed run of the same job (and merge width) just before it, in one
    session; medians over ``repeat`` pairs, slowdown the median of the pairs' ratios. ``storage``: every node's
    local dir a simulated disk of that profile."""
    import riffle
    from srsupport.session import shutdown_gateway, spark_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    report: dict = {"job": {"rows": ROWS, "maps": MAPS, "reducers": REDUCERS, "nodes": 3}, "app_lease_seconds": APP_LEASE,
                    "rpc_timeout_seconds": RPC_TIMEOUT, "cases": []}
    with fault_cluster(base_dir / "cluster", storage=storage) as cluster:
        report["storage_profile"] = cluster.storage
        report["driver_killed"] = run_driver_killed(cluster, base_dir)
        settings = cluster.driver_conf() | SESSION_CONF | {"spark.scheduler.mode": "FAIR", "spark.riffle.enabled": "true",
                                                           "spark.riffle.cost.enabled": "false"}  # the faults need merges
        try:
            with spark_session("riffle-fault-bench", settings.pop("spark.master"), settings) as spark:
                spark.sparkContext.setLogLevel("ERROR")
                wait_executors(spark.sparkContext, 3)
                scheduler = riffle.attach(spark).scheduler
                if scheduler is None:
                    raise RuntimeError("spark.riffle.enabled=true did not attach Riffle")
                set_merging(scheduler, False)
                job(spark.sparkContext)  # warm-up: Python workers on every executor
                vanilla = _timed(lambda: job(spark.sparkContext), repeat)
                undisturbed = CASES["undisturbed"]
                for nway in sorted({c.nway for c in CASES.values()}):  # warm-up with merging
                    run_case(cluster, spark, scheduler, dataclasses.replace(undisturbed, nway=nway))
                runs: dict[str, list[tuple[Outcome, float]]] = {name: [] for name in CASES if name != "undisturbed"}
                for _ in range(repeat):  # each case right after an undisturbed run of the same job and merge width
                    for name in runs:
                        case = CASES[name]
                        base = run_case(cluster, spark, scheduler, dataclasses.replace(undisturbed, nway=case.nway)).seconds
                        runs[name].append((run_case(cluster, spark, scheduler, case), base))
                for name, pairs in runs.items():
                    o = pairs[-1][0]
                    report["cases"].append({
                        "case": name, "seconds": _median([x.seconds for x, _ in pairs]), "undisturbed_seconds": _median([b for _, b in pairs]),
                        "slowdown": round(_median([x.seconds / b for x, b in pairs]), 2), "correct": all(x.correct for x, _ in pairs),
                        "orphans": max(len(x.orphans) for x, _ in pairs), "merges_committed": o.committed_on(),
                        "merges_failed": sum(m["state"] == "failed" for m in o.merges),
                        "detail": {k: v for k, v in o.detail.items() if k not in ("watch", "fired", "outputs_seen")}})
                report["vanilla_seconds"] = vanilla
        finally:
            shutdown_gateway()
    return report


def _timed(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(_median(times), 3)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return round(xs[len(xs) // 2], 3)

