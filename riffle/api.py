"""The v1 protocol modules, generated on first use if the install step has not built them yet."""

from __future__ import annotations

from riffle import proto_build

if not proto_build.stubs_present():
    proto_build.build()

from riffle.v1 import merger_pb2 as pb  # noqa: E402
from riffle.v1 import merger_pb2_grpc as pb_grpc  # noqa: E402

__all__ = ["pb", "pb_grpc"]
