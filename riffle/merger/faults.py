"""Fault injection for the crash and cancel tests: the daemon exits abruptly, or stalls, at a named step of the
publish protocol.

Off unless whoever builds the daemon asks for it: ``riffle-merger serve`` reads :data:`CRASH_ENV`,
:data:`PAUSE_ENV` and :data:`FAIL_ENV` once at start-up, a test builds a :class:`Faults` directly.
Nothing reads the environment at import time.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from riffle.merger.publish import PUBLISH_STEPS

log = logging.getLogger("riffle.merger")
CRASH_ENV = "RIFFLE_MERGER_CRASH_AT"
PAUSE_ENV = "RIFFLE_MERGER_PAUSE_AT"  # STEP:SECONDS
CRASH_EXIT_CODE = 86  # what the crash tests expect from the killed daemon


@dataclass(frozen=True)
class Faults:
    crash_at: str | None = None  # one of PUBLISH_STEPS, or None for no fault
    pause_at: str | None = None  # one of PUBLISH_STEPS: the merge sleeps there for pause_seconds
    pause_seconds: float = 0.0

    def __post_init__(self) -> None:
        for step, env in ((self.crash_at, CRASH_ENV), (self.pause_at, PAUSE_ENV)):
            if step is not None and step not in PUBLISH_STEPS:
                raise ValueError(f"cannot stop at {step!r} ({env}): the publish steps are {', '.join(PUBLISH_STEPS)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Faults:
        pause_at, _, seconds = (environ.get(PAUSE_ENV) or "").partition(":")
        try:
            pause_seconds = float(seconds or 0)
        except ValueError:
            raise ValueError(f"{PAUSE_ENV} wants STEP:SECONDS, got {environ.get(PAUSE_ENV)!r}") from None
        return cls(environ.get(CRASH_ENV) or None, pause_at or None, pause_seconds)

    def reached(self, step: str) -> None:
        """Called as the publish protocol passes ``step``: exits at once (no cleanup, like a crash) or stalls if it is the chosen one."""
        if step == self.crash_at:
            os._exit(CRASH_EXIT_CODE)
        if step == self.pause_at:
            log.warning("fault injected: pausing %.1fs at publish step %s", self.pause_seconds, step)
            time.sleep(self.pause_seconds)


NO_FAULTS = Faults()
