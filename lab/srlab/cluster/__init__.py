"""A Spark standalone cluster on one machine: a master and N worker "nodes" on their own loopback
addresses (127.0.0.2, 127.0.0.3, ...), each with its own local dirs, Riffle merger and optionally an
external shuffle service. For demos (``--nodes N``), benchmarks and multi-node tests."""

from srlab.cluster.harness import Cluster, ClusterError, SparkTarget, running_cluster, spark_target, wait_executors
from srlab.cluster.layout import ClusterLayout, node_address

__all__ = ["Cluster", "ClusterError", "ClusterLayout", "SparkTarget", "node_address", "running_cluster", "spark_target", "wait_executors"]
