"""Fault injection for the crash, cancel and disk-full tests: the daemon exits abruptly, or stalls, at a named
step of the publish protocol, or a file-system step of a merge fails with a chosen errno (ENOSPC, EDQUOT).

Off unless whoever builds the daemon asks for it: ``riffle-merger serve`` reads :data:`CRASH_ENV`,
:data:`PAUSE_ENV` and :data:`FAIL_ENV` once at start-up, a test builds a :class:`Faults` directly.
Nothing reads the environment at import time.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger("riffle.merger")
# the steps of publishing a merged pair (riffle.merger.publish), where a crash or a stall may be injected
PUBLISH_STEPS = ("temps-written", "recorded", "data-linked", "index-linked", "temps-removed", "committed")
CRASH_ENV = "RIFFLE_MERGER_CRASH_AT"
PAUSE_ENV = "RIFFLE_MERGER_PAUSE_AT"  # STEP:SECONDS
FAIL_ENV = "RIFFLE_MERGER_FAIL_AT"    # STEP:ERRNO-NAME, e.g. journal-write:EDQUOT
# the file-system steps of a merge that create or grow something, in order
FAIL_STEPS = ("output-dir", "temp-create", "data-write", "journal-write", "app-dir")
CRASH_EXIT_CODE = 86  # what the crash tests expect from the killed daemon


@dataclass(frozen=True)
class Faults:
    crash_at: str | None = None  # one of PUBLISH_STEPS, or None for no fault
    pause_at: str | None = None  # one of PUBLISH_STEPS: the merge sleeps there for pause_seconds
    pause_seconds: float = 0.0
    fail_at: str | None = None   # one of FAIL_STEPS: it raises OSError(fail_errno) every time
    fail_errno: int = errno.ENOSPC

    def __post_init__(self) -> None:
        for step, env in ((self.crash_at, CRASH_ENV), (self.pause_at, PAUSE_ENV)):
            if step is not None and step not in PUBLISH_STEPS:
                raise ValueError(f"cannot stop at {step!r} ({env}): the publish steps are {', '.join(PUBLISH_STEPS)}")
        if self.fail_at is not None and self.fail_at not in FAIL_STEPS:
            raise ValueError(f"cannot fail at {self.fail_at!r} ({FAIL_ENV}): the steps are {', '.join(FAIL_STEPS)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Faults:
        pause_at, _, seconds = (environ.get(PAUSE_ENV) or "").partition(":")
        try:
            pause_seconds = float(seconds or 0)
        except ValueError:
            raise ValueError(f"{PAUSE_ENV} wants STEP:SECONDS, got {environ.get(PAUSE_ENV)!r}") from None
        fail_at, _, name = (environ.get(FAIL_ENV) or "").partition(":")
        code = getattr(errno, name or "ENOSPC", None)
        if not isinstance(code, int):
            raise ValueError(f"{FAIL_ENV} wants STEP:ERRNO-NAME, got {environ.get(FAIL_ENV)!r}")
        return cls(environ.get(CRASH_ENV) or None, pause_at or None, pause_seconds, fail_at or None, code)

    def reached(self, step: str) -> None:
        """Called as the publish protocol passes ``step``: exits at once (no cleanup, like a crash) or stalls if it is the chosen one."""
        if step == self.crash_at:
            os._exit(CRASH_EXIT_CODE)
        if step == self.pause_at:
            log.warning("fault injected: pausing %.1fs at publish step %s", self.pause_seconds, step)
            time.sleep(self.pause_seconds)

    def fail(self, step: str, path: object) -> None:
        """Called just before the merge performs ``step`` on ``path``: raises the chosen error if it is the chosen step."""
        if step == self.fail_at:
            raise OSError(self.fail_errno, f"{os.strerror(self.fail_errno)} (fault injected)", str(path))


NO_FAULTS = Faults()
