"""The Kubernetes DaemonSet's merger command line and health probe, run for real on loopback: the daemon
starts from the manifest's arguments (node IP, paths and ports mapped onto this machine), and the probe
script the kubelet would exec reports it SERVING over TLS, and fails when nothing serves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srsupport.daemons import free_port
from tests.unit.test_k8s_manifests import merger_container


@pytest.fixture
def node(tmp_path):
    """The node's files: a self-signed certificate for 127.0.0.1 (the "node IP", its own CA), the key and the token private."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
                    "-subj", "/CN=riffle-merger", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    key.chmod(0o600)
    token = tmp_path / "token"
    token.write_text("k8s-token")
    token.chmod(0o600)
    for d in ("spark-local", "state"):
        (tmp_path / d).mkdir(mode=0o700)
    return tmp_path


def on_this_machine(text: str, node: Path, grpc_port: int, metrics_port: int) -> str:
    """A manifest string with the node's paths and ports mapped onto ``node`` and free ports."""
    for path, local in (("/var/lib/spark-local", "spark-local"), ("/var/lib/riffle-merger", "state"), ("/run/riffle/token", "token"),
                        ("/run/riffle/tls.key", "tls.key"), ("/etc/riffle/tls/tls.crt", "tls.crt"),
                        ("/etc/riffle/tls/ca.crt", "tls.crt")):
        text = text.replace(path, str(node / local))
    return text.replace(":7338", f":{grpc_port}").replace(":9338", f":{metrics_port}").replace("$(HOST_IP)", "127.0.0.1")


def probe(script: str, timeout: float = 30) -> int:
    return subprocess.run([sys.executable, "-c", script], env={**os.environ, "HOST_IP": "127.0.0.1"}, capture_output=True,
                          timeout=timeout).returncode


def test_the_manifest_command_line_serves_and_its_probe_sees_it(node):
    c = merger_container()
    grpc_port, metrics_port = free_port(), free_port()
    args = [on_this_machine(a, node, grpc_port, metrics_port) for a in c["args"]]
    script = on_this_machine(c["readinessProbe"]["exec"]["command"][-1], node, grpc_port, metrics_port)
    assert c["readinessProbe"]["exec"]["command"][:2] == ["python", "-c"]
    assert probe(script) != 0  # nothing serves yet
    proc = subprocess.Popen([sys.executable, "-m", "riffle.merger.cli", *c["command"][1:], *args, "--no-fsync"],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while probe(script) != 0:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the probe never saw the merger serving"
            time.sleep(0.2)
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            assert b"riffle_merges_total" in r.read()
    finally:
        proc.terminate()
        proc.wait(30)
