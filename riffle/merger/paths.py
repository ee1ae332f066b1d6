"""Confines the daemon to its local-dir roots by file descriptor, so swapping a directory for a symlink cannot redirect it.

The roots are opened once at start. A directory a request names is located lexically under a root
(absolute, no ``.``/``..``, no daemon-private ``.riffle*`` names) and then opened component by component
with ``openat(O_DIRECTORY|O_NOFOLLOW)`` from the root's descriptor; every later open, create, link and
unlink is relative to the descriptor so obtained (``dir_fd=``). A symlink at any level is refused
(``ELOOP``/``ENOTDIR``), whenever it appears. Inputs are opened non-blocking and must be regular files
with a single link on the open descriptor, so a FIFO or device can neither block a worker nor be read,
and a hard link cannot bring in a file from outside the roots.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from riffle.merger.errors import shown

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
INPUT_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
PRIVATE_PREFIX = ".riffle"  # the daemon's temp files and state dir; never a component a request may name


def is_plain_name(name: str) -> bool:
    """One directory entry's name: not empty, no ``/`` or NUL, not ``.`` or ``..`` (nothing that walks elsewhere)."""
    return bool(name) and "/" not in name and "\x00" not in name and name not in (".", "..")


OUTSIDE_ROOTS = "is outside the merger's local dirs"  # the refusal a driver turns into advice (riffle.driver.fleet)


class PathRefused(PermissionError):
    """A path outside the daemon's local-dir roots, through a symlink, or not of the expected kind."""


@dataclass(frozen=True)
class Location:
    """A directory as (root index, components below the root): canonical, since no component is a symlink."""

    root: int
    parts: tuple[str, ...]


def _refused_as(exc: OSError, what: str) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return PathRefused(f"{what} is or passes through a symlink or non-directory; the merger follows no symlinks")
    return exc


def open_dir_at(parent_fd: int, name: str, what: str, create: bool = False, mode: int = 0o755) -> int:
    """Open directory ``name`` under ``parent_fd`` without following a symlink; create it first if asked (the
    merger's own state dirs only: it never creates a directory inside an executor's local dir)."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        raise _refused_as(exc, what) from exc
    try:
        os.mkdir(name, mode, dir_fd=parent_fd)
    except FileExistsError:
        pass
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError as exc:  # removed or renamed away between the mkdir and the open: a race, not an I/O fault
        raise FileNotFoundError(errno.ENOENT, f"{what} was removed while the merger was creating it") from exc
    except OSError as exc:
        raise _refused_as(exc, what) from exc


def open_input_at(dir_fd: int, name: str, what: str) -> int:
    """Open a regular file read-only: non-blocking, no symlink, type and link count checked on the descriptor."""
    try:
        fd = os.open(name, INPUT_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            raise PathRefused(f"{what} is not a regular file") from exc
        raise _refused_as(exc, what) from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PathRefused(f"{what} is not a regular file")
    if st.st_nlink != 1:  # Spark writes map outputs once under one name; a second link may bring in a file from elsewhere
        os.close(fd)
        raise PathRefused(f"{what} has {st.st_nlink} hard links; the merger reads only files with a single link")
    return fd


def open_private_file(dir_fd: int, name: str, what: str, create: bool = False) -> int:
    """Open one of the daemon's own files (state dir) read-only with the checks inputs get: no symlink,
    non-blocking, a regular file on the descriptor, so a FIFO or device put there cannot hang a thread."""
    flags = INPUT_FLAGS | (os.O_CREAT if create else 0)
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            raise PathRefused(f"{what} is not a regular file") from exc
        raise _refused_as(exc, what) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(f"{what} is not a regular file")
    return fd


class Roots:
    """The configured local-dir roots, held open for the daemon's lifetime."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]]):
        self.paths: list[str] = []
        self.fds: list[int] = []
        self._prefixes: list[tuple[str, int]] = []  # (spelling, root index): as configured and canonical
        for root in roots:
            text = os.path.abspath(os.fspath(root))
            real = os.path.realpath(text)
            if not os.path.isdir(real):
                self.close()
                raise ValueError(f"local dir {root} does not exist or is not a directory")
            if real in self.paths:
                continue
            self.fds.append(os.open(real, DIR_FLAGS))
            self.paths.append(real)
            for spelling in {text, real}:
                self._prefixes.append((spelling.rstrip("/") or "/", len(self.paths) - 1))
        if not self.fds:
            raise ValueError("the merger needs at least one --local-dir")
        self._prefixes.sort(key=lambda p: -len(p[0]))  # the longest matching spelling wins

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def locate(self, path: str) -> Location:
        """Where ``path`` lies under a root, judged lexically; nothing on disk is consulted yet."""
        if not path or "\x00" in path:
            raise PathRefused(f"invalid path {shown(path)!r}")
        if not os.path.isabs(path):
            raise PathRefused(f"path {shown(path)!r} is not absolute")
        for prefix, index in self._prefixes:
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                parts = tuple(p for p in path[len(prefix):].split("/") if p)
                for part in parts:
                    if part in (".", "..") or part.startswith(PRIVATE_PREFIX):
                        raise PathRefused(f"path {shown(path)} has a '{shown(part)}' component; name the directory plainly")
                return Location(index, parts)
        raise PathRefused(f"path {shown(path)} {OUTSIDE_ROOTS} {self.paths}")

    def display(self, loc: Location, *more: str) -> str:
        return "/".join((self.paths[loc.root].rstrip("/"), *loc.parts, *more))

    def open_dir(self, loc: Location, create: bool = False) -> int:
        """A descriptor of the directory at ``loc``, walked from its root refusing symlinks at every level."""
        fd = os.dup(self.fds[loc.root])
        try:
            for i, part in enumerate(loc.parts):
                if not is_plain_name(part):
                    raise PathRefused(f"{self.display(loc)} has a '{part}' component; the merger walks plain names only")
                nxt = open_dir_at(fd, part, self.display(Location(loc.root, loc.parts[:i + 1])), create)
                os.close(fd)
                fd = nxt
        except FileNotFoundError as exc:
            os.close(fd)
            raise PathRefused(f"{self.display(loc)} is not an existing directory") from exc
        except BaseException:
            os.close(fd)
            raise
        return fd
