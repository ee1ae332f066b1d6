"""What the tests and the lab watch and switch on Riffle's running merge scheduler, through its observers
and its public state: waiting until every held shuffle settled, the fault matrix's event hooks, merging
on and off, another configuration, and how big the driver's per-shuffle state (Python and JVM) is."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from riffle.driver.config import RiffleConfig
from riffle.driver.fleet import MergerFleet
from riffle.driver.merges import ShuffleState
from riffle.driver.observer import SchedulerObserver
from riffle.driver.scheduler import MergeScheduler
from riffle.driver.token_file import TokenFile
from sparkshim.bridge import shim_class


@contextmanager
def watching(scheduler: MergeScheduler, observer: SchedulerObserver) -> Iterator[None]:
    """``observer`` is told of the scheduler's events and settled shuffles while in the block."""
    scheduler.observers.append(observer)
    try:
        yield
    finally:
        scheduler.observers.remove(observer)


class _EventHook(SchedulerObserver):
    def __init__(self, hook: Callable[[Any], None]):
        self.hook = hook

    def on_event(self, event: Any) -> None:
        self.hook(event)


def on_events(scheduler: MergeScheduler, hook: Callable[[Any], None]) -> AbstractContextManager[None]:
    """While in the block, ``hook(event)`` runs in the scheduler thread just before the scheduler handles each event."""
    return watching(scheduler, _EventHook(hook))


class _Settled(SchedulerObserver):
    def __init__(self) -> None:
        self.changed = threading.Condition()

    def on_settled(self, shuffle: ShuffleState) -> None:
        with self.changed:
            self.changed.notify_all()


RECHECK_SECONDS = 0.02  # how often wait_idle looks again without a settle event (the old poll's period)

def idle(scheduler: MergeScheduler) -> bool:
    """Every shuffle the scheduler tracks has settled (merging ones: held, or waiting for the cost model to decide)."""
    return all(s.settled for s in list(scheduler.shuffles.values()))


def wait_idle(scheduler: MergeScheduler, timeout: float = 60.0) -> bool:
    """True once every shuffle settled (woken by each settling, a held shuffle Spark cleans up first included, and
    looked at every RECHECK_SECONDS as well), False if ``timeout`` seconds pass first. With a live driver JVM, first
    every event Spark posted so far reaches the shim, and then the scheduler has settled every shuffle the shim found
    mergeable: a shuffle that is not held does not keep its job waiting, so the job can end before the scheduler saw it."""
    deadline = time.monotonic() + timeout
    if scheduler.sc is not None:
        scheduler.sc._jsc.sc().listenerBus().waitUntilEmpty(int(timeout * 1000))
    settled = _Settled()
    with watching(scheduler, settled):
        with settled.changed:
            while not idle(scheduler) or _undecided_in_jvm(scheduler):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                settled.changed.wait(min(left, RECHECK_SECONDS))
    return True


def _undecided_in_jvm(scheduler: MergeScheduler) -> int:
    """Shuffles the shim found mergeable that the scheduler has not settled and released yet (0 without a live JVM)."""
    if scheduler.sc is None:
        return 0
    return int(scheduler.tracker.trackedShuffles())


def wait_cleaned(scheduler: MergeScheduler, shuffle: int, timeout: float = 60.0) -> bool:
    """True once Spark's ContextCleaner cleaned ``shuffle`` up and the scheduler handled it (its state is gone), False if
    ``timeout`` seconds pass first. Spark cleans a shuffle once its dependency is garbage: Python's RDD proxies are collected
    first (py4j then drops their JVM references), then the JVM's garbage, again until it happened (one JVM GC alone can run
    before py4j let go)."""
    deadline = time.monotonic() + timeout
    while shuffle in scheduler.shuffles:
        if time.monotonic() > deadline:
            return False
        gc.collect()
        scheduler.sc._jvm.System.gc()
        time.sleep(0.2)
    return True


def set_merging(scheduler: MergeScheduler, on: bool) -> None:
    """Merge new shuffles or leave them to plain Spark (benchmarks compare both in one session), as the
    scheduler's start tells the driver JVM."""
    scheduler.configure_shim(bool(on))


def use_config(scheduler: MergeScheduler, config: RiffleConfig) -> None:
    """Switch the running scheduler to ``config`` (other mergers, policy or timeouts). Mergers refusing the
    old token or CA are asked again, and warned about again should they still refuse."""
    fleet = scheduler.fleet
    if (config.token, config.token_file, config.tls_ca) != (fleet.config.token, fleet.config.token_file, fleet.config.tls_ca):
        forget_refusals(fleet)
        fleet.token = TokenFile(config.token, config.token_file)  # for the clients it opens from now on
    fleet.config = config
    scheduler.configure_shim(scheduler.merging)  # the shim holds every mergeable shuffle at submission iff the cost model is off


def mark_all_up(fleet: MergerFleet) -> None:
    """Ask every merger again, down or not (the mergers were just switched or restarted)."""
    fleet.down_until.clear()


def forget_refusals(fleet: MergerFleet) -> None:
    """Ask refusing mergers again (their token or TLS was fixed), and warn again if they still refuse."""
    fleet.refused.clear()
    for key in [k for k in fleet.warn_once.keys if k.startswith("refused-")]:
        fleet.warn_once.forget(key)


def state_sizes(scheduler: MergeScheduler) -> dict[str, int]:
    """Entries in each per-shuffle or per-executor map of the scheduler and its fleet."""
    return {"shuffles": len(scheduler.shuffles), "settled": len(scheduler.settled), "rows": len(scheduler.status().shuffles),
            "merged_where": len(scheduler.fleet.merged_where), "local_dirs": len(scheduler.local_dirs.known),
            "warned": len(scheduler.warn_once.keys) + len(scheduler.fleet.warn_once.keys)}


# ---------------------------------------------------------------- the driver JVM, through the tracker's public state
def jvm_state_sizes(scheduler: MergeScheduler) -> dict[str, int]:
    """Entries in each driver-side map the JVM's ``RiffleTracker`` keeps (its stage graph, held shuffles and
    partitions, events not yet drained): what its ``driver.*`` gauges of the ``riffle`` metric source say."""
    tracker = scheduler.tracker
    return {"stage_graph": int(tracker.trackedStages()), "held_shuffles": int(tracker.heldShuffles()),
            "held_partitions": int(tracker.trackedShuffles()), "pending_events": int(tracker.pendingEvents())}


def _internals(gateway: Any, method: str, *args: Any) -> Any:
    """``seam.SparkMapOutput.<method>(args)``, the shim's public static accessor of Spark's map statuses."""
    for m in shim_class(gateway, "seam.SparkMapOutput").getMethods():
        if m.getName() == method and len(m.getParameterTypes()) == len(args):
            jargs = gateway.new_array(gateway.jvm.java.lang.Object, len(args))
            for i, a in enumerate(args):
                jargs[i] = a
            return m.invoke(None, jargs)
    raise LookupError(f"SparkMapOutput.{method} with {len(args)} arguments")


def _checksum_mismatches(status: Any) -> int:
    """``ShuffleStatus.checksumMismatchIndices().size()``, or -1 on a Spark that keeps no such record (before 4.1)."""
    try:
        return int(status.checksumMismatchIndices().size())
    except Exception:  # py4j: no such method on this Spark
        return -1


def checksum_report(scheduler: MergeScheduler, shuffle: int) -> dict[str, int]:
    """The shuffle's map statuses' order-independent row checksums: ``statuses`` registered,
    ``nonzero_checksums`` among them (zero: the checksum is off) and ``mismatched_indexes`` (Spark's record of
    re-registered outputs whose checksum changed; -1 when this Spark keeps none). Empty when Spark has no such
    shuffle or the tracker found Spark's internals changed."""
    gw = scheduler.sc._gateway
    status = _internals(gw, "shuffleStatus", shuffle) if scheduler.tracker.unavailableReason() is None else None
    if status is None:
        return {}
    statuses = [s for s in _internals(gw, "mapStatuses", status) if s is not None]
    return {"mismatched_indexes": _checksum_mismatches(status),
            "nonzero_checksums": sum(1 for s in statuses if int(_internals(gw, "checksum", s)) != 0), "statuses": len(statuses)}
