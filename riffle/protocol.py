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

# a request on the wire: the daemon receives, clients send, no more. The largest request the daemon accepts is
# 294 KiB (64 local dirs of 4096 bytes, 4096 map ids, the longest ids); gRPC holds what it has received before
# the daemon's admission sees it, so the cap is what one request can cost there
MAX_REQUEST_BYTES = 512 << 10
MAX_REPLY_BYTES = 256 << 20   # a reply: the partition lengths of the most partitions a merge may have fit
# the one set of channel and server options, so every client (plaintext or TLS) and the daemon agree on the limits
MESSAGE_LIMITS = [("grpc.max_send_message_length", MAX_REQUEST_BYTES), ("grpc.max_receive_message_length", MAX_REPLY_BYTES)]
SERVER_MESSAGE_LIMITS = [("grpc.max_receive_message_length", MAX_REQUEST_BYTES), ("grpc.max_send_message_length", MAX_REPLY_BYTES)]

__all__ = ["MAX_REPLY_BYTES", "MAX_REQUEST_BYTES", "MESSAGE_LIMITS", "SERVER_MESSAGE_LIMITS", "pb", "pb_grpc"]
