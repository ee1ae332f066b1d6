"""Start, inspect and stop a Spark standalone cluster on one machine (the I/O side of ``layout``).

Every process runs in its own process group, so stopping a worker's group also stops the executors it
launched, and ``kill_node`` takes a whole node down at once (worker, executors, merger, shuffle
service) the way a machine failure would. The cluster's plan and pids live in ``cluster.json`` in its
base dir, so ``status`` and ``down`` work from another process.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from srlab.cluster.layout import MASTER_HOST, ClusterLayout, NodeLayout, node_local_dir, plan
from srlab.storage.disks import LOCAL, node_disks
from srlab.storage.model import DiskProfile

log = logging.getLogger("srlab.cluster")
START_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0


class ClusterError(RuntimeError):
    """The cluster could not be started, found or stopped; the message says why and what to do."""


def default_base_dir() -> Path:
    return Path(os.environ.get("SLAQ_RIFFLE_CLUSTER_DIR") or Path(os.environ.get("TMPDIR", "/tmp")) / f"slaq-riffle-cluster-{os.getuid()}")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_ports(count: int, hosts: list[str]) -> list[int]:
    """``count`` distinct ports each free on every one of ``hosts`` (one merger port serves all nodes)."""
    found: list[int] = []
    held: list[socket.socket] = []
    try:
        while len(found) < count:
            s = socket.socket()
            s.bind((MASTER_HOST, 0))
            port = s.getsockname()[1]
            held.append(s)
            if port in found:
                continue
            try:
                for h in hosts:
                    if h == MASTER_HOST:  # held by ``s`` itself
                        continue
                    with socket.socket() as probe:
                        probe.bind((h, port))
            except OSError:
                continue
            found.append(port)
    finally:
        for s in held:
            s.close()
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop_group(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the process group led by ``pid``, then SIGKILL it if it has not gone within ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not _alive(pid):
                break
            time.sleep(0.1)
        # the leader may be gone while executors it started still run in its group
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return


def _http_json(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback URL built here)
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


@dataclass
class Cluster:
    """A running (or planned) cluster: its layout and the pids of its processes by role."""

    layout: ClusterLayout
    pids: dict[str, int] = field(default_factory=dict)
    storage: dict = field(default_factory=lambda: dict(LOCAL))  # what the nodes' disks are (srlab.storage.disks.report)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def up(cls, nodes: int = 3, base_dir: str | Path | None = None, cores_per_node: int = 1, memory_per_node: str = "1g",
           tls: bool = False, shuffle_service: bool = False, merger_args: tuple[str, ...] = (),
           progress: Callable[[str], None] = log.info) -> Cluster:
        """Start a master, ``nodes`` workers and one merger per node; returns once all are ready."""
        base = Path(base_dir) if base_dir else default_base_dir()
        cls.claim(base)
        hosts = [MASTER_HOST] + [f"127.0.0.{i + 1}" for i in range(1, nodes + 1)]
        ports = free_ports(3 + int(shuffle_service) + nodes, hosts)
        layout = plan(base, nodes, ports, cores_per_node, memory_per_node, tls, shuffle_service)
        cluster = cls(layout)
        try:
            cluster._prepare()
            cluster._start_all(merger_args, progress)
        except BaseException:
            cluster.down(progress=lambda _: None)
            raise
        return cluster

    @classmethod
    def claim(cls, base: Path) -> None:
        """Makes ``base`` free for a new cluster: refuses if one is running there, stops what a dead one left."""
        if (base / "cluster.json").exists():
            existing = cls.load(base)
            if existing.running():
                raise ClusterError(f"a cluster is already running in {base} (stop it with `down`, or pick another --dir)")
            existing.down(progress=lambda _: None)

    @classmethod
    def load(cls, base_dir: str | Path | None = None) -> Cluster:
        base = Path(base_dir) if base_dir else default_base_dir()
        try:
            data = json.loads((base / "cluster.json").read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {base} (start one with `up`)") from None
        return cls(ClusterLayout.from_json(data["layout"]), {k: int(v) for k, v in data["pids"].items()})

    def _save(self) -> None:
        path = Path(self.layout.state_file)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"layout": self.layout.to_json(), "pids": self.pids}, indent=1))
        os.replace(tmp, path)

    def _prepare(self) -> None:
        base = Path(self.layout.base_dir)
        (base / "logs").mkdir(parents=True, exist_ok=True)
        secrets_dir = base / "secrets"
        secrets_dir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(secrets_dir, 0o700)
        token = Path(self.layout.token_file)
        if not token.exists():
            fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
        if self.layout.tls and not Path(self.layout.tls_cert).exists():
            self._make_tls_cert()
        for node in self.layout.nodes:
            Path(node.local_dir).mkdir(parents=True, exist_ok=True)
            Path(node.work_dir).mkdir(parents=True, exist_ok=True)
        self._save()

    def _make_tls_cert(self) -> None:
        """A self-signed certificate naming every node's address (the driver trusts it as its CA)."""
        if shutil.which("openssl") is None:
            raise ClusterError("--tls needs the openssl command (apt-get install openssl)")
        sans = ",".join(f"IP:{n.host}" for n in self.layout.nodes) + f",IP:{MASTER_HOST},DNS:localhost"
        proc = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.layout.tls_key,
                               "-out", self.layout.tls_cert, "-days", "30", "-subj", "/CN=slaq-riffle-cluster",
                               "-addext", f"subjectAltName={sans}"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClusterError(f"openssl could not make the TLS certificate: {proc.stderr.strip()}")
        os.chmod(self.layout.tls_key, 0o600)

    def _spawn(self, role: str, cmd: list[str], env: dict[str, str] | None = None) -> int:
        with open(self.layout.log_file(role), "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, **(env or {})}, start_new_session=True)
        self.pids[role] = proc.pid
        self._save()
        return proc.pid

    def _start_all(self, merger_args: tuple[str, ...], progress: Callable[[str], None]) -> None:
        lay = self.layout
        spark_class = str(spark_home() / "bin" / "spark-class")
        base_env = {"SPARK_HOME": str(spark_home()), "SPARK_NO_DAEMONIZE": "1"}
        progress(f"starting master at {lay.master_url} (UI {lay.master_webui})")
        self._spawn("master", lay.master_command(spark_class), base_env | lay.master_env())
        for node in lay.nodes:
            self.start_merger(node, merger_args)
            if lay.shuffle_service_port is not None:
                self._start_shuffle_service(node)
        self._wait_master()
        for node in lay.nodes:
            progress(f"starting {node.name} at {node.host} (merger {lay.merger_address(node)})")
            self._spawn(f"worker-{node.index}", lay.worker_command(spark_class, node), base_env | lay.worker_env(node))
        self._wait_ready(progress)

    def start_merger(self, node: NodeLayout, extra: tuple[str, ...] = (), env: dict[str, str] | None = None) -> int:
        """Starts ``node``'s merger (``extra`` flags after the layout's, so they win; ``env`` e.g. fault injection)."""
        return self._spawn(f"merger-{node.index}", self.layout.merger_command(node, *extra), env)

    def restart_merger(self, node: NodeLayout, extra: tuple[str, ...] = (), env: dict[str, str] | None = None,
                       kill: bool = False) -> None:
        """Stops ``node``'s merger (SIGTERM, or SIGKILL like a crash with ``kill``) and starts it again; returns once it serves."""
        role = f"merger-{node.index}"
        if kill:
            self.kill_role(role)
        else:
            self.stop_role(role)
        self.start_merger(node, extra, env)
        deadline = time.monotonic() + START_TIMEOUT
        while not self.merger_healthy(node):
            self._check_running(role)
            if time.monotonic() > deadline:
                raise ClusterError(f"{role} not healthy {START_TIMEOUT:.0f}s after a restart; see {self.layout.log_file(role)}")
            time.sleep(0.05)

    def _start_shuffle_service(self, node: NodeLayout) -> None:
        from sparkshim.build import pyspark_jars
        from srsupport.session import lab_jar

        java = shutil.which("java") or "java"
        classpath = f"{pyspark_jars()}/*:{lab_jar()}"
        self._spawn(f"shuffle-{node.index}", self.layout.shuffle_service_command(java, classpath, node))

    def driver_conf(self, riffle: bool = True) -> dict[str, str]:
        """The layout's driver confs and what Spark needs on the nodes' disks (the same for every configuration)."""
        return self.layout.driver_conf(riffle) | self.storage.get("spark_conf", {})

    # -- readiness and status ----------------------------------------------------------------
    def master_state(self) -> dict | None:
        return _http_json(f"{self.layout.master_webui}/json/")

    def _wait_master(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while self.master_state() is None:
            self._check_running("master")
            if time.monotonic() > deadline:
                raise ClusterError(f"the master did not start within {START_TIMEOUT:.0f}s; see {self.layout.log_file('master')}")
            time.sleep(0.3)

    def _check_running(self, role: str) -> None:
        pid = self.pids.get(role)
        if pid is not None and not _alive(pid):
            tail = Path(self.layout.log_file(role)).read_text(errors="replace")[-2000:]
            raise ClusterError(f"{role} exited during start-up; last log lines:\n{tail}")

    def _wait_ready(self, progress: Callable[[str], None]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        want = len(self.layout.nodes)
        while True:
            for role in self.pids:
                self._check_running(role)
            alive = self.alive_workers()
            unhealthy = [n.name for n in self.layout.nodes if not self.merger_healthy(n)]
            if len(alive) == want and not unhealthy:
                progress(f"cluster ready: {want} workers, {want} mergers")
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"not ready after {START_TIMEOUT:.0f}s: {len(alive)}/{want} workers alive, mergers not healthy: "
                                   f"{unhealthy}; logs in {Path(self.layout.base_dir) / 'logs'}")
            time.sleep(0.5)

    def alive_workers(self) -> list[str]:
        state = self.master_state() or {}
        return [w["host"] for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def merger_client(self, node: NodeLayout, timeout: float = 5.0):
        from riffle.merger.client import MergerClient

        token = Path(self.layout.token_file).read_text().strip()
        return MergerClient(self.layout.merger_address(node), token=token, tls_ca=self.layout.tls_cert if self.layout.tls else None,
                            timeout=timeout)

    def merger_healthy(self, node: NodeLayout) -> bool:
        with self.merger_client(node) as client:
            return client.healthy()

    def running(self) -> bool:
        return any(_alive(pid) for pid in self.pids.values())

    def status(self) -> dict:
        """Every node: its worker, executors, merger (health and load) and shuffle service."""
        master = self.master_state()
        workers = {w["host"]: w for w in (master or {}).get("workers", [])}
        nodes = []
        for node in self.layout.nodes:
            worker = workers.get(node.host, {})
            ui = _http_json(f"http://{node.host}:{node.worker_webui_port}/json/") or {}
            merger: dict = {"address": self.layout.merger_address(node), "healthy": False}
            with self.merger_client(node, timeout=2.0) as client:
                merger["healthy"] = client.healthy()
                if merger["healthy"]:
                    try:
                        s = client.status()
                        merger |= {"load": round(s.load, 3), "running": s.running, "queued": s.queued, "merges_completed": s.merges_completed}
                    except Exception as exc:  # noqa: BLE001 (status is best-effort; health already answered)
                        merger["error"] = str(exc).splitlines()[0]
            entry = {
                "node": node.name, "host": node.host,
                "worker": {"state": worker.get("state", "DOWN" if master else "UNKNOWN"), "cores": worker.get("cores"),
                           "cores_used": worker.get("coresused"), "pid_alive": _alive(self.pids.get(f"worker-{node.index}", -1))},
                "executors": [{"app": e.get("appid"), "id": e.get("id"), "cores": e.get("cores"), "state": e.get("state")}
                              for e in ui.get("executors", [])],
                "merger": merger | {"pid_alive": _alive(self.pids.get(f"merger-{node.index}", -1))},
            }
            if self.layout.shuffle_service_port is not None:
                entry["shuffle_service"] = {"port": self.layout.shuffle_service_port,
                                            "pid_alive": _alive(self.pids.get(f"shuffle-{node.index}", -1))}
            nodes.append(entry)
        return {
            "master": {"url": self.layout.master_url, "ui": self.layout.master_webui, "up": master is not None,
                       "apps": [a.get("name") for a in (master or {}).get("activeapps", [])]},
            "nodes": nodes,
            "driver_conf": self.layout.driver_conf(),
            "base_dir": self.layout.base_dir,
        }

    # -- failures and shutdown ---------------------------------------------------------------
    def kill_node(self, index: int) -> None:
        """A machine failure: SIGKILL the node's worker with its executors, its merger and shuffle service."""
        for role in (f"worker-{index}", f"merger-{index}", f"shuffle-{index}"):
            pid = self.pids.get(role)
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def kill_role(self, role: str) -> None:
        """SIGKILL one role's process group and reap it (a crash of that process alone)."""
        pid = self.pids.get(role)
        if pid is None:
            return
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        _stop_group(pid, timeout=5.0)

    def stop_role(self, role: str) -> None:
        pid = self.pids.get(role)
        if pid is not None:
            _stop_group(pid)

    def down(self, progress: Callable[[str], None] = log.info) -> None:
        """Stop everything (workers first, so executors go with them), then forget the pids."""
        order = sorted(self.pids, key=lambda r: (r == "master", r))
        for role in order:
            progress(f"stopping {role}")
            _stop_group(self.pids[role])
        self.pids.clear()
        if Path(self.layout.base_dir).exists():
            self._save()


@contextmanager
def running_cluster(nodes: int = 3, storage: DiskProfile | None = None, **kwargs) -> Iterator[Cluster]:
    """A cluster for the length of a ``with`` block (tests, benchmarks and ``--nodes N`` demos). With ``storage``,
    every node's local dir is a simulated disk of its own, mounted before the cluster starts and unmounted after
    it stops."""
    with ExitStack() as stack:
        report = dict(LOCAL)
        if storage is not None:
            base = Path(kwargs.pop("base_dir", None) or default_base_dir())
            Cluster.claim(base)  # before mounting over a running cluster's dirs
            report = stack.enter_context(node_disks([node_local_dir(base, i) for i in range(1, nodes + 1)], storage))
            kwargs["base_dir"] = base
        cluster = Cluster.up(nodes=nodes, **kwargs)
        cluster.storage = report
        stack.callback(cluster.down, progress=lambda _: None)
        yield cluster


@dataclass
class SparkTarget:
    """Where a demo or benchmark runs: a master URL, the confs a driver needs for it, and the cluster
    (when ``--nodes N`` started one for the run)."""

    master: str
    conf: dict[str, str]
    cluster: Cluster | None = None


@contextmanager
def spark_target(master: str, nodes: int | None = None, progress: Callable[[str], None] = log.info, **cluster_kwargs) -> Iterator[SparkTarget]:
    """``--master M`` as given, or with ``--nodes N`` a fresh N-node cluster for the length of the block."""
    if not nodes:
        yield SparkTarget(master, {})
        return
    os.environ["SPARK_LOCAL_IP"] = MASTER_HOST  # the driver binds and names loopback only
    with running_cluster(nodes, progress=progress, **cluster_kwargs) as cluster:
        conf = cluster.driver_conf(riffle=False)
        yield SparkTarget(conf.pop("spark.master"), conf, cluster)


def wait_executors(sc, count: int, timeout: float = 90.0) -> None:
    """Block until ``count`` executors have registered with ``sc``'s driver (a standalone app's executors
    come up a few seconds after the context; measuring before that would measure fewer nodes)."""
    deadline = time.monotonic() + timeout
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < count:  # the driver's own block manager counts too
        if time.monotonic() > deadline:
            raise ClusterError(f"fewer than {count} executors registered after {timeout:.0f}s")
        time.sleep(0.3)
