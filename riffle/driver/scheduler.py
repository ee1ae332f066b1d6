"""The driver-side merge scheduler (thesis §4.2-4.3) on stock Spark.

A thread drains the shim's events every few milliseconds. Finished map outputs feed the shuffle's
merge policy; full groups go to a merger at once (merging overlaps the map stage). The shim holds
the shuffle's reducers from the moment its map stage is submitted; once the map stage is done and
enough merges finished (all, the best-effort fraction, or the timeout), the finished merges are
committed atomically, the rest are cancelled, and the reducers are released. Any failure leaves
outputs unmerged; nothing here can lose a row. Talking to the mergers is the fleet's job
(:mod:`riffle.driver.fleet`), whether a shuffle is held the gate's (:mod:`riffle.driver.gate`), what the
Riffle tab lists :mod:`riffle.driver.tab_rows`'s; this module submits merges and settles shuffles.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from riffle import messages
from riffle.driver import cost
from riffle.driver import status as causes
from riffle.driver.config import RiffleConfig
from riffle.driver.fleet import MergerFleet
from riffle.driver.gate import CostGate, HoldGate, shim_hold_seconds
from riffle.driver.local_dirs import LocalDirs
from riffle.driver.merges import Merge, MergeState, ShuffleState, merge_group, settle_reason
from riffle.driver.observer import SchedulerObserver
from riffle.driver.policy import MapOutput, has_data, make_merge_policy
from riffle.driver.settled import SettledShuffle, log_settled, settle
from riffle.driver.status import cause_of_release, policy_label, riffle_status
from riffle.driver.tab_rows import MAX_FINISHED, TabRows, live_row
from riffle.driver.warn_once import WarnOnce
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE, id_beside_inputs
from sparkshim.announce import announce

log = logging.getLogger("riffle.driver")
POLL_SECONDS = 0.01
MAX_SETTLED_SHUFFLES = MAX_FINISHED  # settled shuffles' states kept when Spark does not clean them up; finished rows the Riffle tab lists
PUBLISH_SECONDS = 1.0  # the Riffle tab's model is pushed at least this often (merger health), and at once when a shuffle settles

class MergeScheduler:
    def __init__(self, sc: Any, tracker: Any, config: RiffleConfig):
        self.sc = sc
        self.tracker = tracker
        self.app_id = str(tracker.applicationId())
        self.fleet = MergerFleet(config, self.app_id)
        self.holds = HoldGate(CostGate(self.fleet, sc), tracker, self._decline)
        # Every map is pruned when Spark cleans a shuffle; settled shuffles are also capped at MAX_SETTLED_SHUFFLES for apps
        # whose shuffles are never cleaned. What a finished shuffle ended as is its record in the tab's rows.
        self._shuffles: dict[int, ShuffleState] = {}
        self.tab = TabRows()
        self.local_dirs = LocalDirs(tracker)
        self._said_not_worth_it = False
        self.warn_once = WarnOnce(log)
        self.observers: list[SchedulerObserver] = []  # told of every event and every settled shuffle
        self._ids = itertools.count(SYNTHETIC_MAP_ID_BASE)  # merged map ids, each named once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="riffle-merge-scheduler", daemon=True)
        self.errors = 0
        self._published = float("-inf")
        self._changed = False
        self._started = time.monotonic()
        self.merging = False  # what the driver JVM was told last (configure_shim)

    @property
    def config(self) -> RiffleConfig:
        """The fleet's: one configuration for where merges go and how shuffles are grouped and held."""
        return self.fleet.config

    @property
    def shuffles(self) -> Mapping[int, ShuffleState]:
        """The shuffles tracked now (merging, and the latest settled ones until Spark cleans them up), read-only."""
        return MappingProxyType(self._shuffles)

    @property
    def settled(self) -> dict[int, SettledShuffle]:
        """What each listed mergeable shuffle that finished ended as, in the order seen (a copy)."""
        return self.tab.settled()

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self.configure_shim(True)
        self._thread.start()

    def configure_shim(self, merging: bool) -> None:
        """Tells the driver JVM whether new shuffles may be merged, its own hold timeout (a backstop should this
        scheduler stop deciding), and whether it holds every mergeable shuffle from its map stage's submission (the cost
        model off: every group is merged, so no map stage may outrun the decision) or only those asked for."""
        self.merging = merging
        self.tracker.configure(merging, shim_hold_seconds(self.config) if merging else self.config.hold_timeout,
                               merging and not self.config.cost.enabled)

    def stop(self, cleanup: bool = True) -> None:
        """Stops scheduling: releases every held shuffle unmerged and (by default) deletes merged files."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(10)
        try:
            self.configure_shim(False)
            for s in list(self._shuffles.values()):
                if not s.finalized:
                    self._abandon(s, "Riffle stopped")
            self.publish()
        except Exception:  # the JVM may already be gone at interpreter exit
            log.debug("riffle: could not release shuffles on stop", exc_info=True)
        if cleanup:
            self.fleet.cleanup_all()
        self.fleet.close()

    # ---------------------------------------------------------------- the loop
    def _run(self) -> None:
        log.debug("Riffle: merge scheduler thread started")  # what is on was said once, at attach
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:
                self.errors += 1
                log.exception("Riffle: scheduler step failed; releasing held shuffles unmerged")
                self._release_all("scheduler error")
            self._stop.wait(POLL_SECONDS)

    def _release_all(self, reason: str) -> None:
        """Settles every shuffle not settled yet unmerged (one that cannot be released does not keep the others held)."""
        for s in list(self._shuffles.values()):
            if not s.finalized:
                try:
                    self._abandon(s, reason)
                except Exception:
                    log.exception("Riffle: could not release shuffle %d", s.shuffle_id)

    def step(self) -> None:
        self.fleet.collect_status()
        for event in messages.decode(str(self.tracker.drain())):
            for observer in tuple(self.observers):
                observer.on_event(event)
            self._event(event)
        now = time.monotonic()
        for s in list(self._shuffles.values()):
            if not s.finalized and s.held:
                self._progress(s, now)
            elif not s.finalized and not s.priced_at_submission:
                self.holds.price_at_submission(s)
            elif not s.finalized and s.undecided:
                self._group(s, self.holds.decide(s), decided=True)
        self.fleet.keep_alive()
        if self._changed or now - self._published >= PUBLISH_SECONDS:
            try:
                self.publish()
            except Exception as exc:  # the tab shows stale numbers; merging must not stop for it
                self.warn_once("publish", "Riffle: cannot update the Riffle tab and metrics: %s", exc)

    def status(self) -> messages.RiffleStatus:
        """The ``riffle_status`` message of now: the listed shuffles in the order seen, the summaries of those never held,
        mergers, totals (any thread may ask)."""
        rows = self.tab.rows(lambda sid: None if (s := self._shuffles.get(sid)) is None else live_row(s, self._policy_label()))
        return riffle_status(time.monotonic() - self._started, rows, self.fleet.merger_rows(), self.tab.totals, self.tab.unmerged())

    def _policy_label(self) -> str:
        return policy_label(self.config.policy, self.config.nway, self.config.target_block_bytes)

    def publish(self) -> None:
        """Pushes :meth:`status` to the driver JVM (the Riffle tab, its JSON, metrics, summary at application end)."""
        self._changed = False
        self._published = time.monotonic()
        self.tracker.publishStatus(messages.encode(self.status()))

    def _event(self, e: messages.Message) -> None:
        if isinstance(e, messages.MapStageSubmitted):
            self._map_stage_submitted(e)
        elif isinstance(e, messages.MapOutput):
            self._map_output(e)
        elif isinstance(e, messages.MapStageDone):
            self._map_stage_done(e)
        elif isinstance(e, messages.HoldExpired):
            s = self._shuffles.get(e.shuffle)
            if s is not None and not s.finalized:
                self._finalize(s, commit=False, reason="the shim's hold timed out")
        elif isinstance(e, messages.ShuffleCleaned):
            self._forget(e.shuffle)
        elif isinstance(e, messages.ExecutorDirs):
            self.local_dirs.learn(e.executor, e.dirs)
        elif isinstance(e, messages.ExecutorRemoved):
            self.local_dirs.forget(e.executor)
            self.warn_once.forget(f"dirs-{e.executor}")
        elif isinstance(e, messages.ApplicationEnd):
            self.fleet.cleanup_all()

    def _map_stage_submitted(self, e: messages.MapStageSubmitted) -> None:
        if e.shuffle in self._shuffles or e.shuffle in self.tab:
            old = self._shuffles.get(e.shuffle)
            if old is not None and not old.finalized:
                self._abandon(old, "map stage retried", causes.RETRIED)
            return
        policy = make_merge_policy(self.config.policy, self.config.nway, self.config.target_block_bytes, e.partitions) if e.mergeable else None
        s = self._shuffles[e.shuffle] = ShuffleState(e.shuffle, e.stage, e.tasks, e.partitions, False, policy, name=e.name,
                                                     cost=cost.for_shuffle(self.config.cost, e.sql, e.adaptive))
        self.tab.seen(e.shuffle, e.mergeable, e.not_held)
        self._changed = True
        if e.mergeable:
            self.holds.submitted(s)
            return
        log.info("Riffle: shuffle %d is left unmerged: %s", e.shuffle, e.why)
        s.finalized = s.settled = True  # nothing to merge or release: it only counts its outputs
        self.tab.finished(settle(s, e.why, time.monotonic(), ""), e.not_held)
        self._prune_settled()

    def _map_stage_done(self, e: messages.MapStageDone) -> None:
        s = self._shuffles.get(e.shuffle)
        if s is None or s.finalized or e.stage != s.stage_id:
            return
        if not e.succeeded:
            self._abandon(s, "map stage failed", causes.RETRIED)
        elif not s.held and not s.undecided:  # the cost model saw no output with data: nothing to merge
            self._finalize(s, commit=False, reason="no map output had data", cause=causes.NOT_WORTH_IT)
        else:  # held, or its outputs wait for the cost model: the last groups go once it decided
            s.map_done_at = time.monotonic()
            self._flush(s)

    def _flush(self, s: ShuffleState) -> None:
        if s.held and s.map_done_at is not None and s.policy is not None:
            for group in s.policy.flush():
                self._submit(s, group)

    def _map_output(self, e: messages.MapOutput) -> None:
        self.local_dirs.check(e.executor, e.host, self.fleet)
        s = self._shuffles.get(e.shuffle)
        if s is None or s.finalized or e.attempt > 0:
            return
        out = MapOutput(e.shuffle, e.map_index, e.map_id, e.executor, e.host, e.bytes)
        s.map_bytes += max(out.bytes, 0)
        if out.map_index in s.outputs:  # a speculative or repeated attempt: merge neither copy
            return
        s.outputs[out.map_index] = out
        if s.policy is not None and has_data(out):
            held = s.held
            self._group(s, self.holds.admit(s, out), decided=not held)

    def _group(self, s: ShuffleState, outputs: list[MapOutput], decided: bool) -> None:
        """Puts ``outputs`` (held) into the shuffle's merge groups, full ones sent at once; outputs that waited for the
        cost model's decision (``decided``) past the map stage's end are followed by its last groups."""
        for out in outputs:
            for group in s.policy.add(out) if s.policy is not None else []:
                self._submit(s, group)
        if decided and outputs and s.map_done_at is not None:
            self._flush(s)

    def _decline(self, s: ShuffleState, reason: str, cause: str) -> None:
        """Leaves ``s`` unmerged for ``cause``; the first shuffle the cost model declines is said in the driver's log, with why."""
        if cause == causes.NOT_WORTH_IT and not self._said_not_worth_it:
            self._said_not_worth_it = True
            announce(self.sc, log, f"Riffle: shuffle {s.shuffle_id} is {reason}. Its reducers' reads cost less than merging on this "
                                   "storage (as on one fast local disk: merging pays where each read is costly, on seek-bound disks "
                                   "or with many reducers), so it runs as plain Spark, as will any such shuffle; the Riffle tab and "
                                   "the summary at application end count them (said once; spark.riffle.cost.* prices the storage)")
        self._abandon(s, reason, cause)

    def _forget(self, sid: int) -> None:
        """Spark cleaned the shuffle up: settle it if it had not, mark its row cleaned (what happened to it stays listed),
        delete its merged files and everything else kept about it (its state last: whoever sees it gone sees the row marked)."""
        s = self._shuffles.get(sid)
        if s is not None and not s.finalized:
            self._abandon(s, "Spark cleaned the shuffle up before it settled")
        if self.tab.clean(sid):
            self._changed = True
        self.fleet.cleanup(sid)
        self._shuffles.pop(sid, None)

    def _prune_settled(self) -> None:
        settled = [sid for sid, s in self._shuffles.items() if s.settled]
        for sid in settled[:max(len(settled) - MAX_SETTLED_SHUFFLES, 0)]:
            del self._shuffles[sid]

    # ---------------------------------------------------------------- merging
    def _submit(self, s: ShuffleState, group: list[MapOutput]) -> None:
        if not self.holds.costs.known(s, group[0].host):  # sent at a later step, once its mergers answered Status
            s.parked.append(group)
            return
        if not self.holds.costs.worth_it(s, group):
            return
        executor, host = group[0].executor, group[0].host
        dirs = self.local_dirs.of(executor)
        if not dirs:
            self.warn_once(f"dirs-{executor}", "Riffle: local dirs of executor %s unknown; its outputs stay unmerged", executor)
            s.unsend(group, causes.OTHER)
            return
        address = self.fleet.choose(host)
        if address is None:
            s.unsend(group, causes.MERGER_DOWN)
            return
        merged_id = id_beside_inputs(s.shuffle_id, [(o.map_id, o.bytes > 0) for o in group], len(dirs), self._ids, self.config.sub_dirs)
        if merged_id is None:  # a narrow merge over many local dirs: too few sub dirs are known to exist
            s.unsend(group, causes.OTHER)
            return
        m = Merge(f"{self.app_id}-{s.shuffle_id}-{uuid.uuid4().hex[:12]}", s.shuffle_id, list(group), merged_id, address, dirs)
        self.fleet.send(m, s.num_partitions)
        s.merges.append(m)

    def _progress(self, s: ShuffleState, now: float) -> None:
        parked, s.parked = s.parked, []
        for group in parked:
            self._submit(s, group)
        for m in s.merges:
            self.fleet.poll(m)
        states = [m.state for m in s.merges] + [MergeState.RUNNING] * len(s.parked)  # a parked group counts as a running merge
        reason = settle_reason(s.map_done_at, states, now, self.config.best_effort, self.config.hold_timeout)
        if reason is not None:
            self._finalize(s, commit=True, reason=reason)

    def _abandon(self, s: ShuffleState, reason: str, cause: str = causes.MERGING_OFF) -> None:
        self._finalize(s, commit=False, reason=reason, cause=cause)

    def _finalize(self, s: ShuffleState, commit: bool, reason: str, cause: str = causes.MERGING_OFF) -> None:
        """Settles a mergeable shuffle: commits what finished (if held and ``commit``), cancels the rest and lets its readers
        go. ``cause``: why a shuffle that was never held stays unmerged (one of ``messages.NOT_HELD_CAUSES``)."""
        s.finalized = True
        for group in s.parked:  # never sent: cancelled as a running merge would be
            s.unsend(group, cause_of_release(reason))
        s.parked = []
        for m in s.merges:
            if m.state is MergeState.RUNNING:
                m.cancel(cause_of_release(reason))
                self.fleet.cancel(m)
        done = [m for m in s.merges if m.state is MergeState.DONE]
        committed = 0
        if commit and done:
            commit_message = messages.Commit(s.shuffle_id, [merge_group(m) for m in done])
            committed = int(self.tracker.commit(messages.encode(commit_message)))
            if committed < 0:
                reason += "; commit refused (the reducers were already running)"
                committed = 0
        self.tracker.release(s.shuffle_id)  # held or not: the shim forgets the shuffle
        s.committed = committed
        record = settle(s, reason, time.monotonic(), self._policy_label())
        self.tab.finished(record, cause)
        self._changed = True
        log_settled(log, record, s.decisions, s.reduce_tasks)
        s.settled = True
        self._prune_settled()
        for observer in tuple(self.observers):
            observer.on_settled(s)


__all__ = ["MergeScheduler"]
