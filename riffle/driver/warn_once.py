"""One warning per cause, not per merge: a broken merger or executor would otherwise flood the log."""

from __future__ import annotations

import logging


class WarnOnce:
    """Logs each key's warning once; a key forgotten (its cause fixed or gone) warns again."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self.keys: set[str] = set()

    def __call__(self, key: str, message: str, *args: object) -> None:
        if key not in self.keys:
            self.keys.add(key)
            self.logger.warning(message, *args)

    def forget(self, key: str) -> None:
        self.keys.discard(key)


__all__ = ["WarnOnce"]
