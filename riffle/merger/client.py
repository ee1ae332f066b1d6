"""The one client for the merger daemon (driver side, ``riffle status``, benchmarks and tests)."""

from __future__ import annotations

import os

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from riffle.merger.addresses import is_loopback
from riffle.protocol import MESSAGE_LIMITS, pb, pb_grpc
from sparkshim.safe_read import read_config_file

INSECURE_ENV = "RIFFLE_INSECURE"  # "1" lets a client send its token in cleartext off loopback


class CleartextToken(ValueError):
    """A token would cross the network unencrypted."""


def sends_token_in_cleartext(address: str, token: str | None, tls_ca: str | bytes | None, insecure: bool | None = None) -> bool:
    """Whether a client for ``address`` would send ``token`` unencrypted off this machine, which it refuses
    unless ``insecure`` (default: the ``RIFFLE_INSECURE=1`` environment variable)."""
    if insecure is None:
        insecure = os.environ.get(INSECURE_ENV) == "1"
    return bool(token) and not tls_ca and not insecure and not is_loopback(address)


class MergerClient:
    def __init__(self, address: str, token: str | None = None, tls_ca: str | bytes | None = None, timeout: float = 600.0,
                 insecure: bool | None = None):
        """``tls_ca``: the CA's PEM bytes, or a file's path (read by :mod:`sparkshim.safe_read`). Refuses
        (:class:`CleartextToken`) to send a token without TLS to a non-loopback address unless ``insecure``
        (default: the ``RIFFLE_INSECURE=1`` environment variable)."""
        if sends_token_in_cleartext(address, token, tls_ca, insecure):
            raise CleartextToken(f"refusing to send the merger token in cleartext to {address}: configure TLS (a CA file) "
                                 f"or set {INSECURE_ENV}=1 to accept that")
        self.address = address
        self.timeout = timeout
        if tls_ca:
            pem = read_config_file(tls_ca, "TLS CA file") if isinstance(tls_ca, str) else tls_ca
            self.channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(pem), options=MESSAGE_LIMITS)
        else:
            self.channel = grpc.insecure_channel(address, options=MESSAGE_LIMITS)
        self.stub = pb_grpc.MergerStub(self.channel)
        self.health_stub = health_pb2_grpc.HealthStub(self.channel)
        self.token = token

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """What every call sends: the current :attr:`token` (the driver replaces a rotated one)."""
        token = self.token
        return (("authorization", f"Bearer {token}"),) if token else ()

    def merge(self, request_id: str, shuffle_id: int, map_ids: list[int], local_dirs: list[str], num_partitions: int,
              merged_map_id: int, app_id: str = "", executor_id: str = "", sub_dirs: int = 0,
              timeout: float | None = None) -> pb.MergeResponse:
        req = pb.MergeRequest(request_id=request_id, app_id=app_id, executor_id=executor_id, shuffle_id=shuffle_id,
                              map_ids=map_ids, local_dirs=[str(d) for d in local_dirs], num_partitions=num_partitions,
                              merged_map_id=merged_map_id, sub_dirs_per_local_dir=sub_dirs)
        return self.stub.Merge(req, timeout=timeout or self.timeout, metadata=self.metadata)

    def cancel(self, request_id: str) -> bool:
        return self.stub.Cancel(pb.CancelRequest(request_id=request_id), timeout=10, metadata=self.metadata).found

    def status(self, timeout: float = 10) -> pb.StatusResponse:
        return self.stub.Status(pb.StatusRequest(), timeout=timeout, metadata=self.metadata)

    def cleanup(self, local_dirs: list[str], app_id: str, shuffle_id: int | None = None, all_shuffles: bool = False) -> pb.CleanupResponse:
        """Delete the merged files this daemon wrote for ``app_id`` under ``local_dirs``: one shuffle, or all of them
        when ``all_shuffles`` (the daemon refuses neither or both)."""
        req = pb.CleanupRequest(local_dirs=[str(d) for d in local_dirs], app_id=app_id, all_shuffles=all_shuffles)
        if shuffle_id is not None:
            req.shuffle_id = shuffle_id
        return self.stub.Cleanup(req, timeout=60, metadata=self.metadata)

    def keep_alive(self, app_id: str, timeout: float = 5) -> pb.KeepAliveResponse:
        """Renew ``app_id``'s lease (its merged files are deleted if its driver goes silent for longer)."""
        return self.stub.KeepAlive(pb.KeepAliveRequest(app_id=app_id), timeout=timeout, metadata=self.metadata)

    def healthy(self, service: str = "") -> bool:
        try:
            resp = self.health_stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        except grpc.RpcError:
            return False
        return resp.status == health_pb2.HealthCheckResponse.SERVING

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> MergerClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
