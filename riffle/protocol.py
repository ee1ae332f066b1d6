"""The riffle.v1 protocol modules (``pb`` messages, ``pb_grpc`` stubs).

They are generated from ``proto/`` when the package is built (``setup.py``'s build step, or
``python -m riffle.proto_build`` in a source checkout) and are never generated on import.
"""

from __future__ import annotations

try:
    from riffle.v1 import merger_pb2 as pb
    from riffle.v1 import merger_pb2_grpc as pb_grpc
except ImportError as exc:  # a source checkout whose stubs were never built
    raise ImportError("riffle's gRPC stubs are missing: in a source checkout run `python -m riffle.proto_build` "
                      "(scripts/setup.sh does), or install the built wheel, which ships them") from exc

__all__ = ["pb", "pb_grpc"]
