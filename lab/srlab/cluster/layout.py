"""Where everything of a one-machine Spark standalone cluster lives: addresses, ports, dirs, commands.

Pure data and functions (no processes, no I/O beyond path arithmetic), so the plan of a cluster can
be tested and printed before anything starts. Node ``i`` (1-based) is the host ``127.0.0.{i+1}``: its
own loopback address, its own ``SPARK_LOCAL_DIRS`` and worker dir, its own merger on that address. The
master and the driver stay on 127.0.0.1. Nothing binds outside 127.0.0.0/8.
"""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

MASTER_HOST = "127.0.0.1"
MAX_NODES = 250  # 127.0.0.2 .. 127.0.0.251


def node_address(index: int) -> str:
    """The loopback address of node ``index`` (1-based)."""
    if not 1 <= index <= MAX_NODES:
        raise ValueError(f"node index must be in 1..{MAX_NODES}, got {index}")
    return f"127.0.0.{index + 1}"


def node_local_dir(base_dir: str | Path, index: int) -> Path:
    """Node ``index``'s local dir under a cluster's base dir (known before the cluster is planned: a storage
    profile mounts a disk there first)."""
    return Path(base_dir).resolve() / f"node-{index}" / "local"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class NodeLayout:
    index: int
    host: str
    local_dir: str  # the node's SPARK_LOCAL_DIRS and its merger's --local-dir root
    work_dir: str  # the worker's --work-dir (executor stdout/stderr, app jars)
    worker_webui_port: int

    @property
    def name(self) -> str:
        return f"node-{self.index}"


@dataclass(frozen=True)
class ClusterLayout:
    """One cluster's plan; saved as ``cluster.json`` in its base dir so ``status``/``down`` find it."""

    base_dir: str
    master_port: int
    master_webui_port: int
    merger_port: int
    nodes: tuple[NodeLayout, ...]
    cores_per_node: int = 1
    memory_per_node: str = "1g"
    tls: bool = False
    shuffle_service_port: int | None = None  # set: every node runs an external shuffle service on it
    python: str = field(default_factory=lambda: sys.executable)

    # -- derived paths -----------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return f"spark://{MASTER_HOST}:{self.master_port}"

    @property
    def master_webui(self) -> str:
        return f"http://{MASTER_HOST}:{self.master_webui_port}"

    @property
    def token_file(self) -> str:
        return str(Path(self.base_dir) / "secrets" / "merger-token")

    @property
    def tls_cert(self) -> str:
        return str(Path(self.base_dir) / "secrets" / "merger-cert.pem")

    @property
    def tls_key(self) -> str:
        return str(Path(self.base_dir) / "secrets" / "merger-key.pem")

    @property
    def state_file(self) -> str:
        return str(Path(self.base_dir) / "cluster.json")

    def log_file(self, name: str) -> str:
        return str(Path(self.base_dir) / "logs" / f"{name}.log")

    def merger_address(self, node: NodeLayout) -> str:
        return f"{node.host}:{self.merger_port}"

    # -- what a driver needs ----------------------------------------------------------------
    def driver_conf(self, riffle: bool = True) -> dict[str, str]:
        """The Spark confs that point a driver on 127.0.0.1 at this cluster (and its mergers)."""
        conf = {
            "spark.master": self.master_url,
            "spark.driver.host": MASTER_HOST,
            "spark.driver.bindAddress": MASTER_HOST,
            "spark.executor.memory": "512m",
            "spark.executor.cores": str(self.cores_per_node),
            "spark.pyspark.python": self.python,
        }
        if riffle:
            conf |= {
                "spark.riffle.mergers": ",".join(self.merger_address(n) for n in self.nodes),
                "spark.riffle.authTokenFile": self.token_file,
            }
            if self.tls:
                conf["spark.riffle.tlsCa"] = self.tls_cert
        if self.shuffle_service_port is not None:
            conf |= {"spark.shuffle.service.enabled": "true", "spark.shuffle.service.port": str(self.shuffle_service_port)}
        return conf

    # -- commands ----------------------------------------------------------------------------
    def master_command(self, spark_class: str) -> list[str]:
        return [spark_class, "org.apache.spark.deploy.master.Master", "--host", MASTER_HOST, "--port", str(self.master_port),
                "--webui-port", str(self.master_webui_port)]

    def worker_command(self, spark_class: str, node: NodeLayout) -> list[str]:
        return [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", node.host, "--cores", str(self.cores_per_node),
                "--memory", self.memory_per_node, "--webui-port", str(node.worker_webui_port), "--work-dir", node.work_dir,
                self.master_url]

    def worker_env(self, node: NodeLayout) -> dict[str, str]:
        """A worker's environment; its executors inherit it (their address, local dirs and Python)."""
        return {
            "SPARK_LOCAL_IP": node.host,
            "SPARK_LOCAL_HOSTNAME": node.host,
            "SPARK_LOCAL_DIRS": node.local_dir,
            "SPARK_WORKER_DIR": node.work_dir,
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": self.python,
        }

    def master_env(self) -> dict[str, str]:
        return {"SPARK_LOCAL_IP": MASTER_HOST, "SPARK_LOCAL_HOSTNAME": MASTER_HOST, "SPARK_DAEMON_MEMORY": "256m",
                # the REST submission server would bind 6066 on every run: not needed here
                "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}

    def merger_command(self, node: NodeLayout, *extra: str) -> list[str]:
        cmd = [self.python, "-m", "riffle.merger.cli", "serve", "--listen", self.merger_address(node), "--local-dir", node.local_dir,
               "--token-file", self.token_file, *extra]
        if self.tls:
            cmd += ["--tls-cert", self.tls_cert, "--tls-key", self.tls_key]
        return cmd

    def shuffle_service_command(self, java: str, classpath: str, node: NodeLayout) -> list[str]:
        assert self.shuffle_service_port is not None
        return [java, "-Xmx256m", "-cp", classpath, "io.slaqriffle.lab.NodeShuffleService", node.host, str(self.shuffle_service_port)]

    # -- persistence -------------------------------------------------------------------------
    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ClusterLayout:
        nodes = tuple(NodeLayout(**n) for n in data.pop("nodes"))
        return cls(nodes=nodes, **data)


def plan(base_dir: str | Path, nodes: int, ports: list[int], cores_per_node: int = 1, memory_per_node: str = "1g", tls: bool = False,
         shuffle_service: bool = False) -> ClusterLayout:
    """A layout for ``nodes`` nodes under ``base_dir``; ``ports`` supplies the ports it needs, in order
    (master, master UI, merger, shuffle service if any, one worker UI per node)."""
    if not 1 <= nodes <= MAX_NODES:
        raise ValueError(f"--nodes must be in 1..{MAX_NODES}, got {nodes}")
    need = 3 + int(shuffle_service) + nodes
    if len(ports) < need:
        raise ValueError(f"need {need} ports, got {len(ports)}")
    it = iter(ports)
    master, webui, merger = next(it), next(it), next(it)
    ess = next(it) if shuffle_service else None
    base = Path(base_dir).resolve()
    node_list = tuple(
        NodeLayout(index=i, host=node_address(i), local_dir=str(node_local_dir(base, i)), work_dir=str(base / f"node-{i}" / "work"),
                   worker_webui_port=next(it))
        for i in range(1, nodes + 1))
    return ClusterLayout(base_dir=str(base), master_port=master, master_webui_port=webui, merger_port=merger, nodes=node_list,
                         cores_per_node=cores_per_node, memory_per_node=memory_per_node, tls=tls, shuffle_service_port=ess)
