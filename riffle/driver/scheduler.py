"""The driver-side merge scheduler (thesis §4.2-4.3) on stock Spark.

A thread drains the shim's events every few milliseconds. Finished map outputs feed the shuffle's
merge policy; full groups go to a merger at once (merging overlaps the map stage). The shim holds
the shuffle's reducers from the moment its map stage is submitted; once the map stage is done and
enough merges finished (all, the best-effort fraction, or the timeout), the finished merges are
committed atomically, the rest are cancelled, and the reducers are released. Any failure leaves
outputs unmerged; nothing here can lose a row. Talking to the mergers is the fleet's job
(:mod:`riffle.driver.fleet`); this module is the per-shuffle state machine.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from riffle import messages
from riffle.driver import cost
from riffle.driver import status as causes
from riffle.driver.config import RiffleConfig
from riffle.driver.fleet import MergerFleet, WarnOnce
from riffle.driver.merges import Merge, MergeState, ShuffleState, map_files_after, merge_group, settle_reason, shuffle_stats
from riffle.driver.observer import SchedulerObserver
from riffle.driver.policy import MapOutput, full_group, has_data, make_merge_policy
from riffle.driver.status import add_to_totals, cause_of_release, cleaned, never_held, no_totals, policy_label, riffle_status, seen, shuffle_row
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE

log = logging.getLogger("riffle.driver")
POLL_SECONDS = 0.01
MAX_SETTLED_SHUFFLES = 256  # settled shuffles (and their stats) kept when Spark does not clean them up; finished rows the Riffle tab lists
PUBLISH_SECONDS = 1.0  # the Riffle tab's model is pushed at least this often (merger health), and at once when a shuffle settles
HOLD_MARGIN_SECONDS = 5.0  # the shim holds reducers this much longer than the scheduler would: the scheduler decides first


def shim_hold_seconds(config: RiffleConfig) -> float:
    """The shim's own hold timeout while merging: a backstop should the scheduler stop deciding."""
    return config.hold_timeout + HOLD_MARGIN_SECONDS


class MergeScheduler:
    def __init__(self, sc: Any, tracker: Any, config: RiffleConfig):
        self.sc = sc
        self.tracker = tracker
        self.app_id = str(tracker.applicationId())
        self.fleet = MergerFleet(config, self.app_id)
        # Every map is pruned when Spark cleans a shuffle; settled shuffles and their stats are also
        # capped at MAX_SETTLED_SHUFFLES for apps whose shuffles are never cleaned.
        self.shuffles: dict[int, ShuffleState] = {}
        self.stats: OrderedDict[int, dict] = OrderedDict()
        # The Riffle tab's rows in the order the shuffles were seen: every merging one (None: built from its state when
        # published) and the latest MAX_SETTLED_SHUFFLES finished ones (settled or unmerged), kept after Spark cleans them.
        self.rows: OrderedDict[int, Any] = OrderedDict()
        self.executor_dirs: dict[str, list[str]] = {}  # executor -> its blockmgr dirs, as the driver JVM reported them
        self.warn_once = WarnOnce(log)
        self.observers: list[SchedulerObserver] = []  # told of every event and every settled shuffle
        self._ids = itertools.count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="riffle-merge-scheduler", daemon=True)
        self.errors = 0
        self.totals = no_totals()  # every shuffle seen counted, every settled one summed (the Riffle tab, metrics, summary at the end)
        self._published = float("-inf")
        self._changed = False
        self._started = time.monotonic()
        self.merging = False  # what the driver JVM was told last (configure_shim)

    @property
    def config(self) -> RiffleConfig:
        """The fleet's: one configuration for where merges go and how shuffles are grouped and held."""
        return self.fleet.config

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
            for s in list(self.shuffles.values()):
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
                for s in list(self.shuffles.values()):
                    if not s.finalized:
                        try:
                            self._abandon(s, "scheduler error")
                        except Exception:
                            log.exception("Riffle: could not release shuffle %d", s.shuffle_id)
            self._stop.wait(POLL_SECONDS)

    def step(self) -> None:
        for event in messages.decode(str(self.tracker.drain())):
            for observer in tuple(self.observers):
                observer.on_event(event)
            self._event(event)
        now = time.monotonic()
        for s in list(self.shuffles.values()):
            if not s.finalized and s.held:
                self._progress(s, now)
        self.fleet.keep_alive()
        if self._changed or now - self._published >= PUBLISH_SECONDS:
            try:
                self.publish()
            except Exception as exc:  # the tab shows stale numbers; merging must not stop for it
                self.warn_once("publish", "Riffle: cannot update the Riffle tab and metrics: %s", exc)

    def status(self) -> Any:
        """The ``riffle_status`` message of now: the listed shuffles in the order seen, mergers, totals."""
        rows = []
        for sid, row in list(self.rows.items()):  # any thread may ask
            s = self.shuffles.get(sid)
            if row is None and s is not None:
                row = shuffle_row(s, None, self._policy_label())
            if row is not None:
                rows.append(row)
        return riffle_status(time.monotonic() - self._started, rows, self.fleet.merger_rows(), self.totals)

    def _policy_label(self) -> str:
        return policy_label(self.config.policy, self.config.nway, self.config.target_block_bytes)

    def publish(self) -> None:
        """Pushes :meth:`status` to the driver JVM (the Riffle tab, its JSON, metrics, summary at application end)."""
        self._changed = False
        self._published = time.monotonic()
        self.tracker.publishStatus(messages.encode(self.status()))

    def _event(self, e: Any) -> None:
        if isinstance(e, messages.MapStageSubmitted):
            self._map_stage_submitted(e)
        elif isinstance(e, messages.MapOutput):
            self._map_output(e)
        elif isinstance(e, messages.MapStageDone):
            s = self.shuffles.get(e.shuffle)
            if s is not None and not s.finalized and e.stage == s.stage_id:
                if not e.succeeded:
                    self._abandon(s, "map stage failed", causes.RETRIED)
                elif not s.held:  # the cost model saw no output with data: nothing to merge
                    self._finalize(s, commit=False, reason="no map output had data", cause=causes.NOT_WORTH_IT)
                else:
                    s.map_done_at = time.monotonic()
                    if s.policy is not None:
                        for group in s.policy.flush():
                            self._submit(s, group)
        elif isinstance(e, messages.HoldExpired):
            s = self.shuffles.get(e.shuffle)
            if s is not None and not s.finalized:
                self._finalize(s, commit=False, reason="the shim's hold timed out")
        elif isinstance(e, messages.ShuffleCleaned):
            self._forget(e.shuffle)
        elif isinstance(e, messages.ExecutorRemoved):
            self.executor_dirs.pop(e.executor, None)  # a new executor with this id would have new dirs
            self.warn_once.forget(f"dirs-{e.executor}")
        elif isinstance(e, messages.ApplicationEnd):
            self.fleet.cleanup_all()

    def _map_stage_submitted(self, e: Any) -> None:
        if e.shuffle in self.shuffles or e.shuffle in self.rows:
            old = self.shuffles.get(e.shuffle)
            if old is not None and not old.finalized:
                self._abandon(old, "map stage retried", causes.RETRIED)
            return
        policy = make_merge_policy(self.config.policy, self.config.nway, self.config.target_block_bytes, e.partitions) if e.mergeable else None
        s = self.shuffles[e.shuffle] = ShuffleState(e.shuffle, e.stage, e.tasks, e.partitions, False, policy, name=e.name,
                                                    cost=cost.for_shuffle(self.config.cost, e.sql, e.adaptive))
        self.totals = seen(self.totals, "" if e.mergeable else e.not_held)
        self._changed = True
        if e.mergeable:
            self.rows[e.shuffle] = None  # merging: its row is built from its state until it settles
            if not s.cost.enabled:
                self._hold(s)  # every group is merged: the shim held it at its map stage's submission already
            elif (storage := self.fleet.priciest_storage()) is not None:
                self._can_pay(s, None, max(s.num_partitions, 1), storage, "at the map stage's submission, whatever its bytes and node")
            return
        log.info("Riffle: shuffle %d is left unmerged: %s", e.shuffle, e.why)
        s.finalized = s.settled = True  # nothing to merge or release: it only counts its outputs
        self._list(shuffle_row(s, None, "", e.why))
        self._prune_settled()

    def _hold(self, s: ShuffleState) -> bool:
        """Asks the shim to hold the shuffle's reducers; if a reader already runs, the shuffle is left unmerged."""
        s.held = bool(self.tracker.hold(s.shuffle_id))
        if not s.held:
            self._finalize(s, commit=False, reason="a stage reading the shuffle was already running", cause=causes.READER_RUNNING)
        return s.held

    def _can_pay(self, s: ShuffleState, first: MapOutput | None, readers: int, storage: cost.StorageCost, when: str) -> bool:
        """Whether a full group of outputs of ``first``'s size (unknown: empty) read by ``readers`` reduce tasks could pay on
        ``storage``. If not, the shuffle is never held (or no longer) and nothing of it is merged."""
        c = self.config
        fan_in = full_group(c.policy, c.nway, c.target_block_bytes, s.num_maps, s.num_partitions, None if first is None else first.bytes)
        best = cost.decide([0 if first is None else first.bytes] * fan_in, readers, storage)
        if not best.merge:
            s.decisions.append(best)
            self._finalize(s, commit=False, reason=f"not worth merging ({when}): a group of {fan_in} would save {best.saved_seconds * 1e3:.1f} "
                                                   f"ms, cost {best.cost_seconds * 1e3:.1f} ms", cause=causes.NOT_WORTH_IT)
        return best.merge

    def _map_output(self, e: Any) -> None:
        s = self.shuffles.get(e.shuffle)
        if s is None or s.finalized or e.attempt > 0:
            return
        out = MapOutput(e.shuffle, e.map_index, e.map_id, e.executor, e.host, e.bytes)
        s.map_bytes += max(out.bytes, 0)
        if out.map_index in s.outputs:  # a speculative or repeated attempt: merge neither copy
            return
        s.outputs[out.map_index] = out
        if s.policy is not None and has_data(out):
            if not self._shuffle_pays(s, out):
                return
            for group in s.policy.add(out):
                self._submit(s, group)

    def _forget(self, sid: int) -> None:
        """Spark cleaned the shuffle up: settle it if it had not, mark its row cleaned (what happened to it stays listed),
        delete its merged files and everything else kept about it (its state last: whoever sees it gone sees the row marked)."""
        s = self.shuffles.get(sid)
        if s is not None and not s.finalized:
            self._abandon(s, "Spark cleaned the shuffle up before it settled")
        row = self.rows.get(sid)
        if row is not None:
            self.rows[sid] = cleaned(row)
            self._changed = True
        self.stats.pop(sid, None)
        self.fleet.cleanup(sid)
        self.shuffles.pop(sid, None)

    def _list(self, row: Any) -> None:
        """The finished shuffle's row replaces its merging one (or comes last); only the latest MAX_SETTLED_SHUFFLES stay."""
        self.rows[row.shuffle] = row
        finished = [sid for sid, r in self.rows.items() if r is not None]
        for sid in finished[:max(len(finished) - MAX_SETTLED_SHUFFLES, 0)]:
            del self.rows[sid]

    def _prune_settled(self) -> None:
        settled = [sid for sid, s in self.shuffles.items() if s.settled]
        for sid in settled[:max(len(settled) - MAX_SETTLED_SHUFFLES, 0)]:
            del self.shuffles[sid]

    # ---------------------------------------------------------------- merging
    def _local_dirs(self, executor: str) -> list[str]:
        dirs = self.executor_dirs.get(executor)
        if not dirs:
            try:
                dirs = [str(d) for d in self.tracker.localDirs(executor) if d]
            except Exception as exc:  # reflection into Spark internals failed: merge nothing for it
                log.warning("Riffle: cannot read the local dirs of executor %s: %s", executor, exc)
                dirs = []
            if dirs:
                self.executor_dirs[executor] = dirs
        return dirs or []

    def _estimate_reduce_tasks(self, s: ShuffleState) -> int:
        """The shuffle's bytes, estimated from its outputs so far, decide the coalesced reducers (once per shuffle)."""
        if s.reduce_tasks is None:
            sizes = [o.bytes for o in s.outputs.values() if o.bytes > 0]
            estimate = (sum(sizes) / len(sizes)) * max(s.num_maps, len(s.outputs)) if sizes else 0.0
            s.reduce_tasks = cost.reduce_tasks(s.num_partitions, estimate, s.cost, self._parallelism())
        return s.reduce_tasks

    def _shuffle_pays(self, s: ShuffleState, first: MapOutput) -> bool:
        """Whether ``first`` (an output with data) may go into a merge group. A shuffle not held yet is undecided, so this is
        its first output with data (an earlier one would have held or settled it): whether a full group of outputs that
        size could pay at all, priced with the storage of the output's node. If so its reducers are held from now on; if
        not, nothing of it is merged and nothing waits for it."""
        if s.held:
            return True
        pays = self._can_pay(s, first, self._estimate_reduce_tasks(s), self.fleet.storage_cost(first.host), "at its first output")
        return pays and self._hold(s)

    def _worth_it(self, s: ShuffleState, group: list[MapOutput]) -> bool:
        """The cost model's decision on ``group`` (always yes when it is off), kept on ``s`` and counted by reason."""
        model = s.cost
        if not model.enabled:
            return True
        decision = cost.decide([o.bytes for o in group], self._estimate_reduce_tasks(s), self.fleet.storage_cost(group[0].host))
        s.decisions.append(decision)
        if not decision.merge:
            s.unsent[decision.reason] += 1
        return decision.merge

    def _parallelism(self) -> int:
        try:
            return int(self.sc.defaultParallelism)
        except Exception:  # the context is stopping: any estimate will do
            return 1

    def _submit(self, s: ShuffleState, group: list[MapOutput]) -> None:
        if not self._worth_it(s, group):
            return
        executor, host = group[0].executor, group[0].host
        dirs = self._local_dirs(executor)
        if not dirs:
            self.warn_once(f"dirs-{executor}", "Riffle: local dirs of executor %s unknown; its outputs stay unmerged", executor)
            s.unsent[causes.OTHER] += 1
            return
        address = self.fleet.choose(host)
        if address is None:
            s.unsent[causes.MERGER_DOWN] += 1
            return
        merged_id = SYNTHETIC_MAP_ID_BASE + next(self._ids)
        m = Merge(f"{self.app_id}-{s.shuffle_id}-{uuid.uuid4().hex[:12]}", s.shuffle_id, list(group), merged_id, address, dirs)
        self.fleet.send(m, s.num_partitions)
        s.merges.append(m)

    def _progress(self, s: ShuffleState, now: float) -> None:
        for m in s.merges:
            self.fleet.poll(m)
        reason = settle_reason(s.map_done_at, [m.state for m in s.merges], now, self.config.best_effort, self.config.hold_timeout)
        if reason is not None:
            self._finalize(s, commit=True, reason=reason)

    def _abandon(self, s: ShuffleState, reason: str, cause: str = causes.MERGING_OFF) -> None:
        self._finalize(s, commit=False, reason=reason, cause=cause)

    def _finalize(self, s: ShuffleState, commit: bool, reason: str, cause: str = causes.MERGING_OFF) -> None:
        """Settles a mergeable shuffle: commits what finished (if held and ``commit``), cancels the rest and lets its readers
        go. ``cause``: why a shuffle that was never held stays unmerged (one of ``messages.NOT_HELD_CAUSES``)."""
        s.finalized = True
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
        self._record(s, reason, cause)
        s.settled = True
        self._prune_settled()
        for observer in tuple(self.observers):
            observer.on_settled(s)

    def _record(self, s: ShuffleState, reason: str, cause: str) -> None:
        stats = self.stats[s.shuffle_id] = shuffle_stats(s, reason, time.monotonic())
        _cap(self.stats)
        if s.held:
            row = shuffle_row(s, stats, self._policy_label())
            self.totals = add_to_totals(self.totals, row)
        else:
            row = shuffle_row(s, None, "", reason)
            self.totals = never_held(self.totals, cause)
            log.info("Riffle: shuffle %d is left unmerged: %s", s.shuffle_id, reason)
        self._list(row)
        self._changed = True
        if s.held:
            log.info("Riffle: shuffle %d: %d merges requested, %d committed, %d cancelled, %d failed; map files %d -> %d "
                     "(blocks %d -> %d, %d bytes); reducers held %.3f s after the map stage (%s)",
                     s.shuffle_id, len(s.merges), s.committed, stats["merges_cancelled"], stats["merges_failed"], len(s.outputs),
                     map_files_after(s), stats["blocks_before"], stats["blocks_after"], s.map_bytes, stats["hold_seconds"] or 0.0, reason)
            if s.decisions:
                log.info("Riffle: shuffle %d cost model (about %d reduce tasks): %s", s.shuffle_id, s.reduce_tasks or 0,
                         cost.summary(s.decisions))


def _cap(d: OrderedDict) -> None:
    while len(d) > MAX_SETTLED_SHUFFLES:
        d.popitem(last=False)


__all__ = ["MergeScheduler"]
