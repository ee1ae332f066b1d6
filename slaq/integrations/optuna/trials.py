"""Optuna trials as SLAQ jobs, with no code change: installed at attach like the spark.ml hook.

While SLAQ is attached, ``Study.optimize`` runs each trial of its objective in a *trial scope* on the
trial's own thread (``n_jobs > 1`` runs trials on a thread pool: one scope per thread at a time). The
trial's SLAQ job opens when its work starts, at its first ``trial.report`` or its first spark.ml fit,
whichever comes first, because only then are its parameters known to name it
(:func:`slaq.names.trial_job_name`). Its history is what it reports, ``trial.report(value, step)``
as a falling loss (:func:`slaq.integrations.optuna.rule.as_loss`). Its Spark work, spark.ml fits included, runs in
its pool, so SLAQ's cores follow the trial; but the fits' captured L-BFGS iterations are kept out of
its history: a fit's training objective and the trial's validation value are two curves, and SLAQ
predicts one curve per job. (The block's thread keeps the job's pool but not the JVM's ``slaq.job``
property, which is what routes captured iterations; threads a trial starts inherit the pool alone, so
a ``CrossValidator`` inside a trial makes fits of their own.) The job closes when the trial ends, and its final
row says how: ``complete``, ``pruned`` (it raised ``TrialPruned``) or ``failed``. A pruner's verdict
(``trial.should_prune()``) closes nothing: the objective decides whether to stop, and a trial that goes on keeps its
job and its reports. SLAQ never makes a trial fail that completes without it: a job that cannot open (a running job
has its name, or anything else) leaves the trial to run as plain Spark work, with one WARN saying why.

Optuna is never imported here: the hook patches ``optuna`` when it is already imported at attach, else
right after its first import (a finder on ``sys.meta_path``, gone once it fired or SLAQ detaches).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

from slaq.enforce.pools import JOB_PROPERTY
from slaq.integrations.optuna.rule import as_loss
from slaq.jobs import Job
from slaq.live.status import COMPLETE, PRUNED
from slaq.names import one_line, shown, trial_job_name

log = logging.getLogger("slaq.optuna")

_lock = threading.RLock()
_originals: dict[tuple[type, str], Any] = {}  # (optuna class, attribute) -> what it was before the patch
_finder: _AfterImport | None = None
_installed = False
_local = threading.local()  # .scope: the trial scope of this thread


@dataclass(eq=False)
class TrialScope:
    """One running trial on its thread, and its SLAQ job once opened."""

    study: Any
    trial: Any
    thread: int = field(default_factory=threading.get_ident)
    job: Job | None = None  # from its first report or fit on
    refused: bool = False  # its job could not open: the trial runs as plain Spark work
    steps: set[int] = field(default_factory=set)

    @property
    def maximize(self) -> bool:
        directions = self.study.directions
        return len(directions) == 1 and directions[0].name == "MAXIMIZE"

    def open(self) -> Job | None:
        """The trial's job, opened now if this is the trial's thread and SLAQ is still attached."""
        if self.job is not None or self.refused or threading.get_ident() != self.thread or not _installed:
            return self.job
        try:
            job = Job(trial_job_name(self.study.study_name, self.trial.number, self.trial.params))
            job.__enter__()
            self.job = job
            runtime = job.runtime
            if runtime is not None and runtime.enabled and runtime.spark_alive():
                runtime.sc.setLocalProperty(JOB_PROPERTY, None)  # the pool stays; captured iterations stay out (module docstring)
        except Exception as exc:  # whatever it is, the trial must not fail over its job: it runs without one
            self.refused = True
            if self.job is not None:
                job, self.job = self.job, None
                with contextlib.suppress(Exception):
                    job.__exit__(None, None, None)
            log.warning("SLAQ: Optuna trial %d of %s runs as plain Spark work, not as a SLAQ job: %s: %s", self.trial.number,
                        shown(self.study.study_name), type(exc).__name__, one_line(str(exc), 300))
        return self.job

    def report(self, value: float, step: int) -> None:
        """One ``trial.report`` Optuna accepted: the job's next loss (a repeated step Optuna ignored is ignored here too)."""
        if step in self.steps:
            return
        self.steps.add(step)
        job = self.open()
        if job is not None and not job.done:
            job.report(as_loss(value, self.maximize))

    def close(self, exc: BaseException | None = None) -> None:
        """Ends the trial's job as the trial ended (on its thread): ``complete``, ``pruned`` when it raised ``TrialPruned``
        (a normal end, not a failure), else ``failed`` with ``exc``."""
        job, self.job = self.job, None
        if job is None:
            return
        if exc is not None and type(exc).__name__ == "TrialPruned":
            log.info("SLAQ: Optuna trial %d of %s pruned; its job %s closed", self.trial.number, shown(self.study.study_name), shown(job.name))
            job.ending, exc = PRUNED, None
        elif exc is None:
            job.ending = COMPLETE
        job.__exit__(None if exc is None else type(exc), exc, None if exc is None else exc.__traceback__)


def open_trial_job() -> None:
    """Open the job of the Optuna trial running on this thread, if any (called before each spark.ml fit,
    so the fit runs in the trial's job instead of one of its own)."""
    scope: TrialScope | None = getattr(_local, "scope", None)
    if scope is not None:
        scope.open()


def run_trial(study: Any, trial: Any, objective: Callable[[Any], Any]) -> Any:
    """``objective(trial)`` in the trial's scope (see the module docstring)."""
    scope = TrialScope(study, trial)
    outer = getattr(_local, "scope", None)
    _local.scope = scope
    try:
        result = objective(trial)
    except BaseException as exc:
        scope.close(exc)
        raise
    else:
        scope.close()
        return result
    finally:
        _local.scope = outer


def _optimize(original: Any) -> Any:
    @functools.wraps(original)
    def optimize(self: Any, func: Callable[[Any], Any], *args: Any, **kwargs: Any) -> Any:
        @functools.wraps(func)
        def objective(trial: Any) -> Any:
            return run_trial(self, trial, func)

        return original(self, objective, *args, **kwargs)

    return optimize


def _report(original: Any) -> Any:
    @functools.wraps(original)
    def report(self: Any, value: float, step: int) -> None:
        original(self, value, step)  # validates, stores (or ignores a repeated step)
        scope: TrialScope | None = getattr(_local, "scope", None)
        if scope is not None and scope.trial is self:
            scope.report(float(value), int(step))

    return report


def _patch(optuna: ModuleType) -> None:
    """Route ``optuna``'s ``Study.optimize`` and ``Trial.report`` through this module (idempotent)."""
    with _lock:
        if not _installed:
            return
        for cls, name, wrap in ((optuna.study.Study, "optimize", _optimize), (optuna.trial.Trial, "report", _report)):
            if (cls, name) not in _originals:
                original = _originals[(cls, name)] = cls.__dict__[name]
                setattr(cls, name, wrap(original))


class _PatchAfterExec:
    """``optuna``'s own loader, which patches the module once it has run."""

    def __init__(self, loader: Any):
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _remove_finder()
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # resources, source, is_package: the real loader's
        return getattr(self._loader, name)


class _AfterImport:
    """A ``sys.meta_path`` finder for the top-level ``optuna`` package only; it finds it where Python
    would (``PathFinder``) and wraps the loader."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != "optuna":
            return None
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchAfterExec(spec.loader)  # type: ignore[assignment]
        return spec


def _remove_finder() -> None:
    global _finder
    with _lock:
        if _finder is not None and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        _finder = None


def install() -> None:
    """Make Optuna trials SLAQ jobs: now if ``optuna`` is imported, else right after its import (idempotent)."""
    global _installed, _finder
    with _lock:
        _installed = True
        module = sys.modules.get("optuna")
        if module is not None and hasattr(module, "trial") and hasattr(module, "study"):
            _patch(module)
        elif module is None and _finder is None:
            _finder = _AfterImport()
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Give Optuna its own methods back; a running trial's job closes when the trial ends."""
    global _installed
    with _lock:
        _installed = False
        _remove_finder()
        for (cls, name), original in _originals.items():
            setattr(cls, name, original)
        _originals.clear()


def installed() -> bool:
    """Whether ``optuna`` is patched now (not only waiting for its import)."""
    return bool(_originals)


__all__ = ["TrialScope", "install", "installed", "open_trial_job", "run_trial", "uninstall"]
