"""The one reader of files that configuration names (a token, TLS material): a FIFO, a device, a huge file or a
hung file system cannot block or exhaust the process that reads them (a read that does not return in time is given
up, and its path is not read again until its one thread returns: no threads pile up); each refusal is one message
naming the setting (a conf key or a flag), the path and the reason.

Imports nothing but the standard library: the driver, the brain, the merger daemon and the ``riffle`` command
all read through it, a merger-only node included.
"""

from __future__ import annotations

import os
import stat
import threading

MAX_CONFIG_FILE_BYTES = 1 << 20  # a token or a PEM bundle (a system's whole CA bundle is about 200 KB)
READ_TIMEOUT_SECONDS = 10.0  # a local file reads in microseconds; longer is a hung (network) file system
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


# The path of each read whose thread has not returned: at most one thread per path, however often a hung file is asked for
_readers: set[str] = set()
_readers_lock = threading.Lock()


class FileRefused(ValueError):
    """A configured file that cannot be used; the message names the setting, the path and why."""


def read_config_file(path: str, setting: str, *, private: bool = False, limit: int = MAX_CONFIG_FILE_BYTES,
                     timeout: float = READ_TIMEOUT_SECONDS) -> bytes:
    """The bytes of ``path``, the value of ``setting``: a regular file (a symlink to one is fine) of at most
    ``limit`` bytes, read within ``timeout`` seconds; with ``private``, one that neither group nor others can
    read (a secret). Anything else raises :class:`FileRefused`."""
    outcome: list[bytes | str] = []
    with _readers_lock:
        if path in _readers:  # its thread is still blocked in the kernel: another would block beside it
            raise FileRefused(f"{setting}={path}: an earlier read has not returned yet (a hung file system?); "
                              "it is not read again until that one returns")
        reader = threading.Thread(target=_read_into, args=(outcome, path, private, limit), name=f"read {setting}", daemon=True)
        _readers.add(path)
        reader.start()
    reader.join(timeout)
    if not outcome:  # the thread stays blocked in the kernel; it is a daemon thread and closes its descriptor if it returns
        raise FileRefused(f"{setting}={path}: not read within {timeout:g} s (a hung file system?)")
    if isinstance(outcome[0], str):
        raise FileRefused(f"{setting}={path}: {outcome[0]}")
    return outcome[0]


def read_config_text(path: str, setting: str, *, private: bool = False, timeout: float = READ_TIMEOUT_SECONDS) -> str:
    """The stripped UTF-8 text of ``path`` (a token), read by :func:`read_config_file`; empty is refused."""
    try:
        text = read_config_file(path, setting, private=private, timeout=timeout).decode().strip()
    except UnicodeDecodeError:
        raise FileRefused(f"{setting}={path}: not UTF-8 text") from None
    if not text:
        raise FileRefused(f"{setting}={path}: the file is empty")
    return text


def _read_into(outcome: list[bytes | str], path: str, private: bool, limit: int) -> None:
    """A reader thread: :func:`_read`'s answer into ``outcome``; ``path`` may be read again once this returns."""
    try:
        outcome.append(_read(path, private, limit))
    finally:
        with _readers_lock:
            _readers.discard(path)


def _read(path: str, private: bool, limit: int) -> bytes | str:
    """The file's bytes, or why it is refused. Opening without blocking makes a FIFO's open return at once;
    the descriptor, not the path, is then checked, so nothing can be swapped in between."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
            return f"not a regular file but {kind}"
        if private and st.st_mode & 0o077:
            return f"readable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); fix: chmod 600 {path}"
        too_large = f"larger than {limit} bytes ({limit / (1 << 20):g} MiB)"
        if st.st_size > limit:
            return too_large
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # st_size is not trusted: /proc files say 0, and a file may grow while it is read
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return too_large
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)
