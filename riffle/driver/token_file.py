"""The driver's merger token, read again from ``spark.riffle.authTokenFile`` when a merger refuses it: after the
mergers' token is rotated (they restart with the file's new content), a running application uses them again
instead of leaving its outputs unmerged for the rest of its life."""

from __future__ import annotations

import logging
import threading
import time

from riffle.merger.tokens import token_refusal
from sparkshim.safe_read import FileRefused, read_config_text

log = logging.getLogger("riffle.driver")
REREAD_SECONDS = 10.0  # the file is read again at most this often, however many requests are refused
REREAD_TIMEOUT_SECONDS = 1.0  # a token file reads in microseconds; the scheduler's thread may be the one waiting
KEY = "spark.riffle.authTokenFile"


class TokenFile:
    """The token requests carry now; thread-safe (the RPC threads ask when a merger refuses theirs). The file is read
    outside the lock, so a read that hangs keeps no other thread waiting; a hung file is not read again until its
    read returned (:mod:`sparkshim.safe_read`)."""

    def __init__(self, token: str | None, path: str | None):
        self.current = token
        self._path = path
        self._read_at = float("-inf")  # the first refusal reads the file at once
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    def newer_than(self, sent: str | None) -> str | None:
        """The token to send again after a merger refused ``sent``: one that replaced it already, or the file's
        content if it changed (read at most every REREAD_SECONDS); None when there is none to try."""
        with self._lock:
            path = self._path if self.current == sent and time.monotonic() - self._read_at >= REREAD_SECONDS else None
            if path is None:
                return self.current if self.current != sent else None
            self._read_at = time.monotonic()
        token = self._reread(path)
        with self._lock:
            if token is not None and token != self.current:
                self.current = token
                log.info("Riffle: read a new token from %s=%s; requests the old one failed are sent again", KEY, path)
            return self.current if self.current != sent else None

    def _reread(self, path: str) -> str | None:
        """The file's token, or None (warned once per cause) when it cannot be read or used."""
        try:
            token = read_config_text(path, KEY, timeout=REREAD_TIMEOUT_SECONDS)
            if (refusal := token_refusal(token)) is not None:
                raise FileRefused(f"{KEY}={path}: {refusal}")
        except FileRefused as exc:
            with self._lock:
                first = str(exc) not in self._warned
                self._warned.add(str(exc))
            if first:
                log.warning("Riffle: cannot read the token again after a merger refused it: %s", exc)
            return None
        return token
