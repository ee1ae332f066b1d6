"""The Kubernetes manifests in k8s/ and spark-conf/kubernetes.properties, checked offline (no cluster runs
them): every manifest against the pinned Kubernetes version's schemas in strict mode (unknown fields are
errors), the merger's command line by the daemon's own parser and exposure rule, every ``spark.kubernetes.*``
key by the strings of pip pyspark's Spark-on-Kubernetes config class, and the paths, port and Secrets that
the manifests and the Spark confs must agree on. The ``spark.riffle.*`` keys are test_spark_conf_templates'.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from riffle.merger.cli import build_parser, check_exposure, check_ranges
from riffle.merger.server import SERVICE_NAME
from sparkshim.build import pyspark_jars
from tests.unit.test_spark_conf_templates import entries

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="the dev extra's kubernetes-validate")
yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((REPO / "k8s").glob("*.yaml"))
KUBERNETES_VERSION = "1.33.0"  # the oldest Kubernetes the manifests claim (docs/deploy.md)
PROPERTIES = REPO / "spark-conf" / "kubernetes.properties"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def by_kind(kind: str) -> dict[str, Any]:
    (found,) = [d for p in MANIFESTS for d in documents(p) if d["kind"] == kind]
    return found


def merger_pod() -> dict[str, Any]:
    return by_kind("DaemonSet")["spec"]["template"]["spec"]


def merger_container() -> dict[str, Any]:
    (c,) = [c for c in merger_pod()["containers"] if c["name"] == "riffle-merger"]
    return c


def serve_args(node_ip: str = "10.0.0.7") -> Any:
    """The merger's command line as the daemon parses it, with the kubelet's ``$(HOST_IP)`` expanded."""
    c = merger_container()
    assert c["command"] == ["riffle-merger", "serve"]
    return build_parser().parse_args(["serve", *(a.replace("$(HOST_IP)", node_ip) for a in c["args"])])


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.name)
def test_every_manifest_is_valid_for_the_pinned_kubernetes_in_strict_mode(manifest):
    docs = documents(manifest)
    assert docs, manifest.name
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_merger_serves_grpc_with_token_and_tls_on_the_node_ip_only():
    args = serve_args()
    check_ranges(args)
    assert args.listen == "10.0.0.7:7338"  # the node IP the kubelet fills in, never 0.0.0.0
    assert args.token_file and args.tls_cert and args.tls_key
    # the daemon's own rule would start this gRPC endpoint without --insecure ...
    check_exposure(args.listen, "token", bool(args.tls_cert), insecure=False)
    # ... which the manifest passes only for the metrics endpoint off loopback
    assert args.insecure and args.metrics_listen == "10.0.0.7:9338"
    env = {e["name"]: e for e in merger_container()["env"]}
    assert env["HOST_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert merger_pod()["hostNetwork"] is True


def test_the_merger_runs_non_root_with_no_capabilities_and_bounded_resources():
    pod, c = merger_pod(), merger_container()
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and {"cpu", "memory"} <= set(c["resources"]["limits"])
    for init in pod["initContainers"]:  # the one root step may only chown what it creates
        assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN", "FOWNER"]}
        assert init["securityContext"]["readOnlyRootFilesystem"] is True


def test_probes_ask_the_grpc_health_service_over_tls():
    c = merger_container()
    for probe in ("readinessProbe", "livenessProbe"):
        script = c[probe]["exec"]["command"][-1]
        assert "grpc_health.v1" in script and "secure_channel" in script and f'service="{SERVICE_NAME}"' in script
        assert ":7338" in script
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert "/etc/riffle/tls" in mounts and "ca.crt" in script


def test_prometheus_scrapes_the_metrics_port_by_annotation():
    meta = by_kind("DaemonSet")["spec"]["template"]["metadata"]["annotations"]
    port = int(serve_args().metrics_listen.rpartition(":")[2])
    assert meta["prometheus.io/scrape"] == "true" and int(meta["prometheus.io/port"]) == port
    assert port in {p["containerPort"] for p in merger_container()["ports"]}


def spark_kubernetes_strings(cls: str = "Config$") -> set[str]:
    """The string constants of a Spark-on-Kubernetes class in pip pyspark's jars (the config class: its conf keys and key parts)."""
    (jar,) = pyspark_jars().glob("spark-kubernetes_*.jar")
    with zipfile.ZipFile(jar) as z:
        data = z.read(f"org/apache/spark/deploy/k8s/{cls}.class")
    return {m.decode() for m in re.findall(rb"[A-Za-z][A-Za-z0-9._-]+", data)}


def spark_key_is_known(key: str, known: set[str]) -> bool:
    """An exact key of Spark's config class, or ``<prefix><volume type>.<name>.<option>`` / ``<prefix><name>`` for its prefixes."""
    if key in known:
        return True
    for prefix in (p for p in known if p.startswith("spark.kubernetes.") and p.endswith(".") and key.startswith(p)):
        rest = key[len(prefix):]
        if prefix.endswith(".volumes."):
            kind, _, tail = rest.partition(".")
            name, _, option = tail.partition(".")
            return kind in known and bool(name) and option in known
        return bool(rest)
    return False


def test_every_spark_kubernetes_key_is_one_spark_reads():
    known = spark_kubernetes_strings()
    assert "spark.kubernetes.executor.podTemplateFile" in known  # the extraction works
    keys = [k for k in entries(PROPERTIES)[0] if k.startswith("spark.kubernetes.")]
    assert keys
    unknown = [k for k in keys if not spark_key_is_known(k, known)]
    assert unknown == []
    assert not spark_key_is_known("spark.kubernetes.executor.volumes.hostPath.spark-local-dir-1.mount.pathh", known)


def test_the_spark_confs_and_the_manifests_agree():
    conf = entries(PROPERTIES)[0]
    volume = "spark.kubernetes.executor.volumes.hostPath.spark-local-dir-1."
    args = serve_args()
    # the executors write their local dirs where the merger's root is, at the same path (the driver sends paths)
    assert args.local_dir == [conf[volume + "mount.path"]]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in merger_pod()["volumes"] if "hostPath" in v}
    mounts = {m["name"]: m["mountPath"] for m in merger_container()["volumeMounts"]}
    assert host_paths["spark-local"] == conf[volume + "options.path"] and mounts["spark-local"] == args.local_dir[0]
    assert args.state_dir not in args.local_dir and not args.state_dir.startswith(args.local_dir[0] + "/")
    assert int(conf["spark.riffle.mergerPort"]) == int(args.listen.rpartition(":")[2])
    # the driver reads the token the mergers use and the CA that signed their certificates where its pod template mounts them
    secrets = {v["secret"]["secretName"] for v in merger_pod()["volumes"] if "secret" in v}
    assert secrets == {"riffle-token", "riffle-merger-tls"}
    driver = documents(REPO / "k8s" / "driver-pod-template.yaml")[0]["spec"]
    assert conf["spark.kubernetes.driver.podTemplateContainerName"] in {c["name"] for c in driver["containers"]}
    assert conf["spark.kubernetes.driver.podTemplateFile"].endswith("/k8s/driver-pod-template.yaml")
    (container,) = driver["containers"]
    (mount,) = container["volumeMounts"]
    (volume,) = [v for v in driver["volumes"] if v["name"] == mount["name"]]
    files = {f"{mount['mountPath']}/{i['path']}": (s["secret"]["name"], i["key"])
             for s in volume["projected"]["sources"] for i in s["secret"]["items"]}
    assert files[conf["spark.riffle.authTokenFile"]] == ("riffle-token", "token")
    assert files[conf["spark.riffle.tlsCa"]] == ("riffle-ca", "ca.crt")
    # the executors share the node's network, so the host they report is the node IP the merger listens on
    template = documents(REPO / "k8s" / "executor-pod-template.yaml")[0]
    assert template["spec"]["hostNetwork"] is True
    assert conf["spark.kubernetes.executor.podTemplateContainerName"] in {c["name"] for c in template["spec"]["containers"]}
    assert conf["spark.kubernetes.executor.podTemplateFile"].endswith("/k8s/executor-pod-template.yaml")
    assert by_kind("DaemonSet")["metadata"]["namespace"] == conf["spark.kubernetes.namespace"] == by_kind("Namespace")["metadata"]["name"]


def test_the_drivers_egress_to_the_mergers_and_the_submitters_role_fit_spark_and_the_confs():
    """Spark 4.2+'s executor NetworkPolicy needs the submitter to manage NetworkPolicies; a namespace that denies egress
    needs the drivers' gRPC to the mergers allowed: on the mergers' port, from the pods Spark labels as drivers."""
    conf = entries(PROPERTIES)[0]
    policy = by_kind("NetworkPolicy")
    assert policy["metadata"]["namespace"] == conf["spark.kubernetes.namespace"] and policy["spec"]["policyTypes"] == ["Egress"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {"spark-role": "driver"}
    assert {"spark-role", "driver"} <= spark_kubernetes_strings("Constants$")  # Spark's driver pod label and its value
    ((rule,),) = [e["ports"] for e in policy["spec"]["egress"]]
    assert rule == {"protocol": "TCP", "port": int(conf["spark.riffle.mergerPort"])}
    role = by_kind("Role")
    assert role["metadata"]["namespace"] == conf["spark.kubernetes.namespace"]
    (grant,) = role["rules"]
    assert grant["apiGroups"] == ["networking.k8s.io"] and grant["resources"] == ["networkpolicies"]
    assert {"get", "create", "patch"} <= set(grant["verbs"])  # what a server-side apply takes
    assert "spark.kubernetes.driver.pod.excludedFeatureSteps" in spark_kubernetes_strings()  # the documented way out
