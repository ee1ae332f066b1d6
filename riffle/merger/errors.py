"""Why a merge failed, as the service maps it to a gRPC status (``refusals.merge_failure``)."""

from __future__ import annotations

import errno


class MergeCancelled(RuntimeError):
    pass


class DiskFull(OSError):
    pass


class MissingInput(FileNotFoundError):
    pass


SHOWN_CHARS = 200  # how much of a caller's value an error message or log line repeats


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """``value`` for a message, cut to ``limit`` characters: errors and logs never echo unbounded input."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value)} characters)"


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def as_disk_full(exc: OSError, doing: str, path: object) -> OSError:
    """A :class:`DiskFull` naming the file when ``exc`` means no space (or file size limit), else ``exc``."""
    if exc.errno in DISK_FULL_ERRNOS:
        return DiskFull(exc.errno, f"disk full {doing} {path}: {exc.strerror}")
    return exc
