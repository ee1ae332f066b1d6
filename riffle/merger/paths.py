"""Confines the daemon to the local-dir roots it was started with.

Every directory a request names and every file the daemon opens is canonicalized (symlinks and
``..`` resolved) and must lie inside one of the roots; anything else is refused with
:class:`PathRefused`. Files are opened without following a final symlink.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path


class PathRefused(PermissionError):
    """A path outside the daemon's local-dir roots, or not of the expected kind."""


class PathGuard:
    def __init__(self, roots: Iterable[str | Path]):
        resolved = []
        for root in roots:
            path = Path(root)
            if not path.is_dir():
                raise ValueError(f"local dir {root} does not exist or is not a directory")
            resolved.append(Path(os.path.realpath(path)))
        if not resolved:
            raise ValueError("the merger needs at least one --local-dir")
        self.roots = tuple(resolved)

    def inside(self, path: str | Path) -> Path:
        """The canonical form of ``path`` if it lies inside a root; raises :class:`PathRefused` otherwise."""
        text = str(path)
        if not text or "\x00" in text:
            raise PathRefused(f"invalid path {text!r}")
        if not os.path.isabs(text):
            raise PathRefused(f"path {text!r} is not absolute")
        real = Path(os.path.realpath(text))
        for root in self.roots:
            if real == root or root in real.parents:
                return real
        raise PathRefused(f"path {text} resolves to {real}, outside the merger's local dirs {[str(r) for r in self.roots]}")

    def executor_dirs(self, local_dirs: Iterable[str]) -> list[Path]:
        """Validate an executor's block-manager dirs: existing directories inside a root."""
        out = []
        for d in local_dirs:
            real = self.inside(d)
            if not real.is_dir():
                raise PathRefused(f"executor local dir {d} is not an existing directory")
            out.append(real)
        if not out:
            raise PathRefused("the request names no executor local dirs")
        return out

    def open_input(self, path: Path) -> int:
        """Open an input file read-only; refuses symlinks and anything outside the roots."""
        self.inside(path.parent)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == 40:  # ELOOP: the file itself is a symlink
                raise PathRefused(f"{path} is a symlink; the merger only reads regular files") from exc
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PathRefused(f"{path} is not a regular file")
        return fd
