"""Secrets the daemon reads at start-up (the token, the TLS key): refused when group or others can read them."""

from __future__ import annotations

import os
import stat


class NotPrivate(ValueError):
    """A secret file that is unreadable, not a regular file, or readable by group or others (the message names the fix)."""


def read_private_file(path: str, what: str) -> bytes:
    """The bytes of ``path``, checked on the open descriptor: a regular file (non-blocking open, so a FIFO cannot
    hang start-up) that neither group nor others can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise NotPrivate(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotPrivate(f"{what} {path} is not a regular file")
        if st.st_mode & 0o077:
            raise NotPrivate(f"{what} {path} is readable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); fix: chmod 600 {path}")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
