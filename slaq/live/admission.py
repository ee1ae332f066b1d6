"""Storage-aware admission: start no more caching spark.ml fits at once than storage memory holds.

Each fit of an estimator that caches its training data (:func:`slaq.estimators.training_caches`)
persists its own copy while it runs (``MEMORY_AND_DISK``). When SLAQ gives cores to more such fits
than the executors' storage memory holds copies of, Spark moves blocks to disk and every later
iteration of every fit reads them back (docs/mllib.md, "Memory"). So a caching fit starts only once
its copy fits next to the copies of the fits already running; until then it waits with no cores. A
fit's copy is estimated from its input's size before the copy exists, then measured from Spark's
storage status once the copy is complete. Nothing is preempted: a started fit keeps running (its copy
exists or is being built), so admission never deadlocks a fit.

Which waiting fit starts next is decided by predicted gain per byte of storage (:func:`gain_per_byte`):
the set-up queue's valuation (slaq.predict.setup: the quality a fit's set-up unlocks per second of
set-up, aged by the time it waited) over its cache's bytes. The best-ranked waiting fit is always the
next to start (no fit ranked below it overtakes it because it would fit), and its rank grows while
it waits, so none waits for ever. Without set-up predictions waiting fits start in arrival order.

:func:`admit` is the pure decision; :class:`StorageAdmission` keeps its state between decisions and
wakes the waiting fits' threads. Reading the storage is :mod:`slaq.live.storage`'s job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from slaq.predict.setup import DEFAULT_SETUP, response_ratio

log = logging.getLogger("slaq.admission")
MB = 1024 * 1024
HEADROOM = 0.9  # share of storage memory training caches may fill: tasks borrow some of the unified region for execution
STUCK_SECONDS = 60.0  # one WARN when the first waiting fit waited this long (a started fit that never ends)


@dataclass(frozen=True)
class Demand:
    """One caching fit: its training cache's bytes (measured when known, else estimated) and whether it
    started (was admitted before: its cache exists or is being built)."""

    job: str
    size: float
    started: bool = False
    rank: float = 0.0  # a waiting fit's :func:`gain_per_byte` (higher starts first; equal ranks: arrival order)


def gain_per_byte(setup_seconds: float, waited: float, size: float) -> float:
    """A waiting fit's rank (pure): the quality its set-up unlocks (one normalized unit) per second of its
    predicted set-up ``s`` (seconds on the whole cluster, slaq.predict.setup), aged by its response ratio
    ``(waited + s) / s``, per byte of its training cache (at least 1 MB). Short set-ups and small caches
    go first, and the rank grows while the fit waits, so every waiting fit eventually ranks first."""
    s = max(setup_seconds, 1e-9)
    return response_ratio(s, waited, 1.0) / s / max(size, MB)


def admit(demands: Sequence[Demand], capacity: float) -> set[str]:
    """The fits that may run, for ``demands`` in arrival order and ``capacity`` bytes of storage for
    training caches (pure). Started fits stay admitted; the waiting ones start best rank first (equal
    ranks in arrival order) while their caches fit next to those already admitted, and the first that
    does not fit stops the rest (no fit ranked below it overtakes it). When no fit runs, the best-ranked
    waiting one starts whatever its size, so a fit bigger than storage memory still runs (alone)."""
    admitted = {d.job for d in demands if d.started}
    used = sum(max(d.size, 0.0) for d in demands if d.started)
    waiting = sorted((d for d in demands if not d.started), key=lambda d: -d.rank)  # stable: arrival order within a rank
    for d in waiting:
        if admitted and used + max(d.size, 0.0) > capacity:
            break
        admitted.add(d.job)
        used += max(d.size, 0.0)
    return admitted


@dataclass(frozen=True)
class CachedRdd:
    """One persisted RDD as Spark's storage status reports it."""

    name: str
    size: float  # bytes in memory plus on disk
    complete: bool  # every partition is cached
    rdd_id: int = -1  # Spark's RDD id (ids grow as RDDs are created)


@dataclass(frozen=True)
class StorageReading:
    """The executors' storage memory (bytes, summed over executors) and the persisted RDDs."""

    capacity: float
    rdds: tuple[CachedRdd, ...] = ()


@dataclass(frozen=True)
class Tracked:
    """A caching fit as attribution sees it: its cache's RDD name prefix ("" when spark.ml leaves the
    RDD unnamed, as the multilayer perceptron's stacked data), its estimate, whether it started, and
    the largest RDD id cached when it arrived (an unnamed cache is a later one)."""

    job: str
    prefix: str
    estimate: float
    started: bool = False
    seen_id: int = -1


def attribute(rdds: Sequence[CachedRdd], fits: Sequence[Tracked]) -> tuple[dict[str, tuple[float, bool]], float]:
    """Each fit's training cache ``(bytes, measured)`` and the bytes of the other persisted data (pure).

    A fit's cache is the RDDs named ``prefix...`` (spark.ml names them after the estimator's uid; a tuner's
    parallel fits of one estimator share it, hence the mean of the complete ones). A started fit whose
    cache has no name gets the first unclaimed RDD cached after it arrived, in arrival order. A cache
    not complete yet counts at no less than its estimate. What no fit claims is other data (the input
    DataFrame's cache, ...)."""
    claimed: set[int] = set()
    out: dict[str, tuple[float, bool]] = {}
    for f in fits:
        mine = [i for i, r in enumerate(rdds) if f.prefix and r.name.startswith(f.prefix)]
        claimed.update(mine)
        complete = [rdds[i].size for i in mine if rdds[i].complete]
        if complete:
            out[f.job] = (sum(complete) / len(complete), True)
        elif mine:
            out[f.job] = (max(max(rdds[i].size for i in mine), f.estimate), False)
    for f in fits:
        if f.job in out or not f.started:
            continue
        later = [i for i, r in enumerate(rdds) if i not in claimed and r.rdd_id > f.seen_id
                 and not any(g.prefix and r.name.startswith(g.prefix) for g in fits)]
        if later:
            first = min(later, key=lambda i: rdds[i].rdd_id)
            claimed.add(first)
            r = rdds[first]
            out[f.job] = (r.size, True) if r.complete else (max(r.size, f.estimate), False)
    for f in fits:
        out.setdefault(f.job, (f.estimate, False))
    other = sum(r.size for i, r in enumerate(rdds) if i not in claimed)
    return out, other


@dataclass
class _Fit:
    job: str
    prefix: str  # its training cache's RDD name prefix ("": unnamed)
    estimate: float
    arrived: float
    seen_id: int = -1  # the largest RDD id cached when it arrived
    size: float = 0.0
    measured: bool = False
    started: bool = False
    announced: bool = False  # its "waits for storage memory" line was logged
    admitted: threading.Event = field(default_factory=threading.Event)


class StorageAdmission:
    """The caching fits SLAQ tracks, in arrival order, and which of them may run. Decides on every
    arrival, end and :meth:`refresh` (the epoch loop's, each epoch); logs one INFO line per change."""

    def __init__(self, read: Callable[[], StorageReading], on_change: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, headroom: float = HEADROOM,
                 setup: Callable[[list[str]], Mapping[str, float]] | None = None):
        """``setup``: the waiting fits' predicted set-ups, seconds on the whole cluster (a fit left out:
        not known, taken as :data:`~slaq.predict.setup.DEFAULT_SETUP`), which rank them
        (:func:`gain_per_byte`); without ``setup`` waiting fits start in arrival order."""
        self._read = read
        self._on_change = on_change
        self._setup = setup
        self._clock = clock
        self._headroom = headroom
        self._fits: dict[str, _Fit] = {}  # insertion order is arrival order
        self._reading: StorageReading | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self.stuck_warned = False

    def arrive(self, job: str, prefix: str, estimate: float | None) -> None:
        """A caching fit is about to start; ``prefix``: how its cache RDD's name starts ("": unnamed);
        ``estimate``: its cache's bytes (None: unknown, then the largest cache of the other fits)."""
        self._try_read()
        with self._lock:
            if estimate is None:
                estimate = max((f.size for f in self._fits.values()), default=0.0)
            seen = max((r.rdd_id for r in self._reading.rdds), default=-1) if self._reading is not None else -1
            self._fits[job] = _Fit(job, prefix, float(estimate), self._clock(), seen, size=float(estimate))
            if self._stopped:
                self._fits[job].started = True
                self._fits[job].admitted.set()
                return
        self._decide()

    def wait(self, job: str) -> float:
        """Block the calling thread (the fit's) until ``job`` may start; returns the seconds waited."""
        with self._lock:
            fit = self._fits.get(job)
        if fit is None:
            return 0.0
        fit.admitted.wait()
        return self._clock() - fit.arrived if fit.started else 0.0

    def end(self, job: str) -> None:
        with self._lock:
            fit = self._fits.pop(job, None)
        if fit is not None:
            fit.admitted.set()  # a fit that ends while waiting (its thread was interrupted) must not stay blocked
            self._decide()

    def refresh(self) -> None:
        """Read the storage again and decide (the epoch loop's call); never raises."""
        with self._lock:
            if not self._fits:
                return
        self._try_read()
        self._decide()

    def waiting(self) -> set[str]:
        with self._lock:
            return {f.job for f in self._fits.values() if not f.started}

    def start(self) -> None:
        """SLAQ (re)attaches: fits wait for storage memory again."""
        with self._lock:
            self._stopped = False

    def stop(self) -> None:
        """SLAQ detaches: every waiting fit starts now, and later ones do not wait."""
        with self._lock:
            self._stopped = True
            fits = list(self._fits.values())
        for f in fits:
            f.started = True
            f.admitted.set()

    def _try_read(self) -> None:
        try:
            reading = self._read()
        except Exception as exc:  # a failed read keeps the previous reading; admission never fails a fit
            log.debug("SLAQ: could not read the executors' storage: %s", exc)
            return
        with self._lock:
            self._reading = reading

    def _predicted_setups(self) -> dict[str, float]:
        """The waiting fits' predicted set-ups (:data:`~slaq.predict.setup.DEFAULT_SETUP` where unknown), read
        outside the lock (the prediction takes others' locks); empty without ``setup``."""
        with self._lock:
            waiting = [f.job for f in self._fits.values() if not f.started]
        if self._setup is None or not waiting:
            return {}
        try:
            predicted = self._setup(waiting)
        except Exception as exc:  # a failed prediction ranks the fits as unknown; admission never fails a fit
            log.debug("SLAQ: no set-up predictions for the fits waiting for storage memory: %s", exc)
            predicted = {}
        return {job: predicted.get(job, DEFAULT_SETUP) for job in waiting}

    def _decide(self) -> None:
        started: list[_Fit] = []
        setups = self._predicted_setups()
        with self._lock:
            fits = list(self._fits.values())
            reading = self._reading
            if reading is not None:
                caches, other = attribute(reading.rdds, [Tracked(f.job, f.prefix, f.estimate, f.started, f.seen_id) for f in fits])
                for f in fits:
                    f.size, f.measured = caches[f.job]
                room = max(self._headroom * reading.capacity - other, 0.0)
            else:
                room = float("inf")  # nothing known about storage: no reason to hold a fit back
            now = self._clock()
            chosen = admit([Demand(f.job, f.size, f.started, gain_per_byte(setups[f.job], now - f.arrived, f.size) if f.job in setups else 0.0)
                            for f in fits], room)
            log.debug("SLAQ: storage admission: room %.0f MB; %s", room / MB,
                      ", ".join(f"{f.job} {f.size / MB:.0f} MB{' measured' if f.measured else ''}{'' if f.started else ' waiting'}"
                                for f in fits))
            for f in fits:
                if f.job in chosen and not f.started:
                    f.started = True
                    started.append(f)
                    waited = now - f.arrived
                    if waited > 0.05:
                        log.info("SLAQ: job %s starts after %.1f s waiting for storage memory (its training cache ~%.0f MB)",
                                 f.job, waited, f.size / MB)
            waiting = [f for f in fits if not f.started]
            used = sum(f.size for f in fits if f.started)
            for f in waiting:
                if not f.announced:
                    f.announced = True
                    log.info("SLAQ: job %s waits for storage memory: its training cache (~%.0f MB) and those of the %d running "
                             "fits (%.0f MB) exceed the %.0f MB storage memory holds for them; it starts when running "
                             "fits end, the waiting fit with the most predicted gain per byte first",
                             f.job, f.size / MB, len(fits) - len(waiting), used / MB, room / MB)
            if waiting and not self.stuck_warned and now - waiting[0].arrived > STUCK_SECONDS:
                self.stuck_warned = True
                log.warning("SLAQ: job %s has waited %.0f s for storage memory for its training cache; give the executors more "
                            "memory or set spark.slaq.storageAdmission=false (docs/mllib.md, 'Memory')",
                            waiting[0].job, now - waiting[0].arrived)
        for f in started:
            f.admitted.set()
        if started and self._on_change is not None:
            self._on_change()
