"""What a request asks for, checked: every limit a caller's values must keep, and where its executor's dirs lie.

Each function turns one RPC's message into the domain's terms or raises :class:`Refused`
(INVALID_ARGUMENT, or PERMISSION_DENIED for a path outside the daemon's roots).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from riffle.merger.engine import MergeSpec
from riffle.merger.errors import shown
from riffle.merger.paths import Location, PathRefused, Roots
from riffle.merger.refusals import Code, Refused, invalid_as
from riffle.protocol import pb
from riffle.shuffle.layout import DEFAULT_SUB_DIRS, INT64_MAX, MAX_SUB_DIRS, SYNTHETIC_MAP_ID_BASE

MAX_PARTITIONS = 1 << 24
MAX_LOCAL_DIRS = 64
MAX_ID = 256               # characters of a request id or application id
MAX_PATH = 4096            # characters of a local dir (PATH_MAX)
MAX_NAME = 255             # characters of one of its components (NAME_MAX)
EXECUTOR_ID = re.compile(r"[A-Za-z0-9._:-]{0,128}")  # Spark's executor ids: "driver", "0", "17"

QUEUED_BASE_BYTES = 16 << 10  # gRPC's and the handler's own state per waiting call
QUEUED_BYTES_PER_BYTE = 5     # a waiting request's decoded message, its paths as strings and located, per byte it took on the wire


def queued_cost(request: pb.MergeRequest) -> int:
    """Memory a request holds while it waits for admission (measured: about 4 bytes of RSS per byte of message)."""
    return QUEUED_BASE_BYTES + QUEUED_BYTES_PER_BYTE * request.ByteSize()


def check_id(field: str, value: str) -> None:
    """A request or application id: 1 to MAX_ID printable characters (it is logged and recorded)."""
    if not 0 < len(value) <= MAX_ID or not value.isprintable():
        raise ValueError(f"{field} must be 1 to {MAX_ID} printable characters, got {shown(value)!r}")


def check_local_dir(path: str) -> None:
    if len(path) > MAX_PATH or any(len(part) > MAX_NAME for part in path.split("/")):
        raise ValueError(f"local dir {shown(path)!r} is longer than {MAX_PATH} characters or has a component longer than {MAX_NAME}")


def locate(roots: Roots, local_dirs: Sequence[str]) -> list[Location]:
    """The executor's local dirs under the daemon's roots (``ValueError`` or :class:`PathRefused` if not)."""
    if len(local_dirs) > MAX_LOCAL_DIRS:
        raise ValueError(f"at most {MAX_LOCAL_DIRS} local dirs per executor, got {len(local_dirs)}")
    for d in local_dirs:
        check_local_dir(d)
    locs = [roots.locate(d) for d in local_dirs]
    if not locs:
        raise PathRefused("the request names no executor local dirs")
    return locs


def merge_request(req: pb.MergeRequest, roots: Roots, max_fan_in: int) -> tuple[MergeSpec, list[Location]]:
    with invalid_as():
        check_id("request_id", req.request_id)
        check_id("app_id", req.app_id)
        if not EXECUTOR_ID.fullmatch(req.executor_id):
            raise ValueError(f"executor_id must be up to 128 letters, digits and ._:- characters, got {shown(req.executor_id)!r}")
        if req.shuffle_id < 0:
            raise ValueError(f"shuffle_id must be >= 0, got {req.shuffle_id}")
        if not 0 < req.num_partitions <= MAX_PARTITIONS:
            raise ValueError(f"num_partitions must be in 1..{MAX_PARTITIONS}, got {req.num_partitions}")
        if not 0 < len(req.map_ids) <= max_fan_in:
            raise ValueError(f"between 1 and {max_fan_in} map_ids are merged at once (open-file limit), got {len(req.map_ids)}")
        if any(m < 0 or m >= SYNTHETIC_MAP_ID_BASE for m in req.map_ids):
            raise ValueError("map_ids must be task attempt ids in [0, 2^62)")
        if len(set(req.map_ids)) != len(req.map_ids):
            raise ValueError("map_ids contains duplicates")
        if not SYNTHETIC_MAP_ID_BASE <= req.merged_map_id <= INT64_MAX:
            raise ValueError(f"merged_map_id must be in [2^62, 2^63), got {req.merged_map_id}")
        sub_dirs = req.sub_dirs_per_local_dir or DEFAULT_SUB_DIRS
        if not 0 < sub_dirs <= MAX_SUB_DIRS:
            raise ValueError(f"sub_dirs_per_local_dir out of range: {sub_dirs}")
        locs = locate(roots, req.local_dirs)
    return MergeSpec(req.app_id, req.shuffle_id, tuple(req.map_ids), req.merged_map_id, req.num_partitions, sub_dirs), locs


@dataclass(frozen=True)
class CleanupScope:
    """The merged files a Cleanup deletes: an application's, of one shuffle or all, in an executor's dirs."""

    app_id: str
    shuffle_id: int | None  # None: all shuffles
    locs: list[Location]

    @property
    def what(self) -> str:
        return "all shuffles" if self.shuffle_id is None else f"shuffle {self.shuffle_id}"


def cleanup_request(req: pb.CleanupRequest, roots: Roots) -> CleanupScope:
    with invalid_as(prefix="cleanup needs the app_id whose merged files are deleted: "):
        check_id("app_id", req.app_id)
    has_shuffle = req.HasField("shuffle_id")
    if not has_shuffle and not req.all_shuffles:
        raise Refused(Code.INVALID_ARGUMENT, "cleanup needs a shuffle_id, or all_shuffles set explicitly")
    if has_shuffle and req.all_shuffles:
        raise Refused(Code.INVALID_ARGUMENT, "cleanup takes a shuffle_id or all_shuffles, not both")
    if has_shuffle and req.shuffle_id < 0:
        raise Refused(Code.INVALID_ARGUMENT, f"shuffle_id must be >= 0, got {req.shuffle_id}")
    with invalid_as():
        locs = locate(roots, req.local_dirs)
    return CleanupScope(req.app_id, req.shuffle_id if has_shuffle else None, locs)


def keep_alive_request(req: pb.KeepAliveRequest) -> str:
    """The application whose lease a KeepAlive renews."""
    with invalid_as():
        check_id("app_id", req.app_id)
    return req.app_id
