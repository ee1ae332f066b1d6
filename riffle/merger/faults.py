"""Fault injection for the crash tests: the daemon exits abruptly at a named step of the publish protocol.

Off unless whoever builds the daemon asks for it: ``riffle-merger serve`` reads :data:`CRASH_ENV` once at
start-up, a test builds a :class:`Faults` directly. Nothing reads the environment at import time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from riffle.merger.publish import PUBLISH_STEPS

CRASH_ENV = "RIFFLE_MERGER_CRASH_AT"
CRASH_EXIT_CODE = 86  # what the crash tests expect from the killed daemon


@dataclass(frozen=True)
class Faults:
    crash_at: str | None = None  # one of PUBLISH_STEPS, or None for no fault

    def __post_init__(self) -> None:
        if self.crash_at is not None and self.crash_at not in PUBLISH_STEPS:
            raise ValueError(f"cannot crash at {self.crash_at!r} ({CRASH_ENV}): the publish steps are {', '.join(PUBLISH_STEPS)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Faults:
        return cls(environ.get(CRASH_ENV) or None)

    def reached(self, step: str) -> None:
        """Called as the publish protocol passes ``step``: exits at once (no cleanup, like a crash) if it is the chosen one."""
        if step == self.crash_at:
            os._exit(CRASH_EXIT_CODE)


NO_FAULTS = Faults()
