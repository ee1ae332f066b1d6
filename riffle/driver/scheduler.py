"""The driver-side merge scheduler (thesis §4.2-4.3) on stock Spark.

A thread drains the shim's events every few milliseconds. Finished map outputs feed the shuffle's
merge policy; full groups go to a merger at once (merging overlaps the map stage). The shim holds
the shuffle's reducers from the moment its map stage is submitted; once the map stage is done and
enough merges finished (all, the best-effort fraction, or the timeout), the finished merges are
committed atomically, the rest are cancelled, and the reducers are released. Any failure leaves
outputs unmerged; nothing here can lose a row.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
import uuid
from collections import Counter, OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import grpc

from riffle.driver.config import RiffleConfig
from riffle.driver.placement import candidates, two_choices
from riffle.driver.policy import MapOutput, MergePolicy, make_merge_policy
from riffle.merger.client import MergerClient
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from sparkshim import messages

log = logging.getLogger("riffle.driver")
POLL_SECONDS = 0.01
# merge errors that will repeat for every merge on that merger (wrong token, TLS, version or roots)
SYSTEMIC = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED,
                      grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION})
DOWN_SECONDS = 30.0  # how long an unreachable merger is left out
MAX_SETTLED_SHUFFLES = 256  # settled shuffles (and their stats) kept when Spark does not clean them up
MAX_RPC_THREADS = 64  # merges in flight at once; each waits on one blocking MergerClient call


@dataclass
class Merge:
    request_id: str
    shuffle_id: int
    members: list[MapOutput]
    merged_map_id: int
    merger: str
    local_dirs: list[str]
    future: Future | None = None
    state: str = "running"  # running, done, failed, cancelled
    lengths: list[int] = field(default_factory=list)
    error: str = ""


@dataclass
class ShuffleState:
    shuffle_id: int
    stage_id: int
    num_maps: int
    num_partitions: int
    held: bool
    policy: MergePolicy | None
    outputs: dict[int, MapOutput] = field(default_factory=dict)
    merges: list[Merge] = field(default_factory=list)
    map_done_at: float | None = None
    finalized: bool = False  # no more merges or commits for this shuffle
    settled: bool = False  # finalized, reducers released and stats recorded
    committed: int = 0
    map_bytes: int = 0


class MergeScheduler:
    def __init__(self, sc: Any, tracker: Any, config: RiffleConfig):
        self.sc = sc
        self.tracker = tracker
        self.config = config
        self.app_id = str(tracker.applicationId())
        # Every map is pruned when Spark cleans a shuffle; settled shuffles, their stats and unsafe
        # reasons are also capped at MAX_SETTLED_SHUFFLES for apps whose shuffles are never cleaned.
        self.shuffles: dict[int, ShuffleState] = {}
        self.merged_where: dict[int, set[tuple[str, tuple[str, ...]]]] = {}  # shuffle -> {(merger, dirs)} with merged files on disk
        self.stats: OrderedDict[int, dict] = OrderedDict()
        self.unsafe: OrderedDict[int, str] = OrderedDict()  # shuffles never merged, and why
        self._clients: dict[str, MergerClient] = {}
        self._down: dict[str, float] = {}
        self._loads: dict[str, tuple[float, float]] = {}
        self._dirs: dict[str, list[str]] = {}
        self._warned: set[str] = set()
        self._ids = itertools.count()
        self._rng = random.Random(0)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="riffle-merge-scheduler", daemon=True)
        self._rpc = ThreadPoolExecutor(MAX_RPC_THREADS, thread_name_prefix="riffle-rpc")
        self.errors = 0

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self.tracker.configure(True, self.config.hold_timeout + 5.0)
        self._thread.start()

    def stop(self, cleanup: bool = True) -> None:
        """Stops scheduling: releases every held shuffle unmerged and (by default) deletes merged files."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(10)
        try:
            self.tracker.configure(False, self.config.hold_timeout)
            for s in list(self.shuffles.values()):
                if not s.finalized:
                    self._abandon(s, "Riffle stopped")
        except Exception:  # the JVM may already be gone at interpreter exit
            log.debug("riffle: could not release shuffles on stop", exc_info=True)
        if cleanup:
            for sid in list(self.merged_where):
                self._cleanup_shuffle(sid)
        self._rpc.shutdown(wait=False, cancel_futures=True)
        for c in self._clients.values():
            c.close()

    def set_merging(self, on: bool) -> None:
        """Turn merging of new shuffles on or off (benchmarks compare with vanilla in one session)."""
        self.tracker.configure(bool(on), self.config.hold_timeout + 5.0)

    # ---------------------------------------------------------------- the loop
    def _run(self) -> None:
        log.info("Riffle: merge scheduler started (policy %s, mergers %s)", self.config.policy,
                 ",".join(self.config.mergers) or f"one per executor host at port {self.config.merger_port}")
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
            self._event(event)
        now = time.monotonic()
        for s in list(self.shuffles.values()):
            if not s.finalized and s.held:
                self._progress(s, now)

    def _event(self, e: Any) -> None:
        if isinstance(e, messages.MapStageSubmitted):
            self._map_stage_submitted(e)
        elif isinstance(e, messages.MapOutput):
            self._map_output(e)
        elif isinstance(e, messages.MapStageDone):
            s = self.shuffles.get(e.shuffle)
            if s is not None and not s.finalized and e.stage == s.stage_id:
                if e.succeeded:
                    s.map_done_at = time.monotonic()
                    if s.policy is not None:
                        for group in s.policy.flush():
                            self._submit(s, group)
                else:
                    self._abandon(s, "map stage failed")
        elif isinstance(e, messages.HoldExpired):
            s = self.shuffles.get(e.shuffle)
            if s is not None and not s.finalized:
                self._finalize(s, commit=False, reason="the shim's hold timed out")
        elif isinstance(e, messages.ShuffleCleaned):
            self._forget(e.shuffle)
        elif isinstance(e, messages.ExecutorRemoved):
            self._dirs.pop(e.executor, None)  # a new executor with this id would have new dirs
            self._warned.discard(f"dirs-{e.executor}")
        elif isinstance(e, messages.ApplicationEnd):
            for sid in list(self.merged_where):
                self._cleanup_shuffle(sid)

    def _map_stage_submitted(self, e: Any) -> None:
        if e.unsafe and e.shuffle not in self.unsafe:
            self.unsafe[e.shuffle] = e.unsafe
            _cap(self.unsafe)
            log.info("Riffle: shuffle %d is left unmerged: %s", e.shuffle, e.unsafe)
        if e.attempt > 0 or e.shuffle in self.shuffles:
            old = self.shuffles.get(e.shuffle)
            if old is not None and not old.finalized:
                self._abandon(old, "map stage retried")
            return
        policy = make_merge_policy(self.config.policy, self.config.nway, self.config.target_block_bytes, e.partitions) if e.held else None
        self.shuffles[e.shuffle] = ShuffleState(e.shuffle, e.stage, e.tasks, e.partitions, e.held, policy)
        if not e.held:
            s = self.shuffles[e.shuffle]
            s.finalized = s.settled = True  # nothing to merge or release: it only counts its outputs
            self._prune_settled()

    def _map_output(self, e: Any) -> None:
        s = self.shuffles.get(e.shuffle)
        if s is None or s.finalized or e.attempt > 0:
            return
        out = MapOutput(e.shuffle, e.map_index, e.map_id, e.executor, e.host, e.bytes)
        s.map_bytes += max(out.bytes, 0)
        if out.map_index in s.outputs:  # a speculative or repeated attempt: merge neither copy
            return
        s.outputs[out.map_index] = out
        if s.policy is not None:
            for group in s.policy.add(out):
                self._submit(s, group)

    def _forget(self, sid: int) -> None:
        """Spark cleaned the shuffle up: delete its merged files and everything kept about it."""
        self.shuffles.pop(sid, None)
        self.stats.pop(sid, None)
        self.unsafe.pop(sid, None)
        self._cleanup_shuffle(sid)

    def _prune_settled(self) -> None:
        settled = [sid for sid, s in self.shuffles.items() if s.settled]
        for sid in settled[:max(len(settled) - MAX_SETTLED_SHUFFLES, 0)]:
            del self.shuffles[sid]

    def state_sizes(self) -> dict[str, int]:
        """Entries in each per-shuffle or per-executor map (the bounded-state test reads this)."""
        return {"shuffles": len(self.shuffles), "stats": len(self.stats), "unsafe": len(self.unsafe),
                "merged_where": len(self.merged_where), "local_dirs": len(self._dirs), "warned": len(self._warned)}

    # ---------------------------------------------------------------- merging
    def _mergers_for(self, host: str) -> list[str]:
        if self.config.mergers:
            options = candidates(self.config.mergers, host)
        else:
            options = [f"{host}:{self.config.merger_port}"]
        now = time.monotonic()
        return [m for m in options if self._down.get(m, 0.0) <= now]

    def _client(self, address: str) -> MergerClient:
        c = self._clients.get(address)
        if c is None:
            c = self._clients[address] = MergerClient(address, self.config.token, self.config.tls_ca, self.config.rpc_timeout)
        return c

    def _load(self, address: str) -> float:
        cached = self._loads.get(address)
        now = time.monotonic()
        if cached and now - cached[1] < 0.2:
            return cached[0]
        try:
            load = float(self._client(address).status().load)
        except grpc.RpcError:
            self._mark_down(address, "status failed")
            load = float("inf")
        self._loads[address] = (load, now)
        return load

    def _mark_down(self, address: str, why: str) -> None:
        if self._down.get(address, 0.0) <= time.monotonic():
            log.warning("Riffle: merger %s unavailable (%s); leaving its outputs unmerged for %.0f s", address, why, DOWN_SECONDS)
        self._down[address] = time.monotonic() + DOWN_SECONDS

    def _local_dirs(self, executor: str) -> list[str]:
        dirs = self._dirs.get(executor)
        if not dirs:
            try:
                dirs = [str(d) for d in self.tracker.localDirs(executor) if d]
            except Exception as exc:  # reflection into Spark internals failed: merge nothing for it
                log.warning("Riffle: cannot read the local dirs of executor %s: %s", executor, exc)
                dirs = []
            if dirs:
                self._dirs[executor] = dirs
        return dirs or []

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    def _submit(self, s: ShuffleState, group: list[MapOutput]) -> None:
        executor, host = group[0].executor, group[0].host
        dirs = self._local_dirs(executor)
        if not dirs:
            self._warn_once(f"dirs-{executor}", "Riffle: local dirs of executor %s unknown; its outputs stay unmerged", executor)
            return
        options = self._mergers_for(host)
        if not options:
            self._warn_once(f"host-{host}", "Riffle: no reachable merger on host %s; its outputs stay unmerged", host)
            return
        address = two_choices(options, self._load, self._rng)
        merged_id = SYNTHETIC_MAP_ID_BASE + next(self._ids)
        m = Merge(f"{self.app_id}-{s.shuffle_id}-{uuid.uuid4().hex[:12]}", s.shuffle_id, list(group), merged_id, address, dirs)
        client = self._client(address)
        try:
            m.future = self._rpc.submit(client.merge, m.request_id, s.shuffle_id, [o.map_id for o in m.members], m.local_dirs,
                                        s.num_partitions, m.merged_map_id, app_id=self.app_id, executor_id=executor,
                                        timeout=self.config.rpc_timeout)
        except Exception as exc:
            m.state, m.error = "failed", str(exc)
            self._warn_once(f"submit-{address}-{type(exc).__name__}", "Riffle: cannot send merges to %s (%s); their outputs stay unmerged",
                            address, m.error)
            s.merges.append(m)
            return
        s.merges.append(m)
        self.merged_where.setdefault(s.shuffle_id, set()).add((address, tuple(dirs)))

    def _poll(self, m: Merge) -> None:
        if m.state != "running" or m.future is None or not m.future.done():
            return
        try:
            resp = m.future.result()
            m.lengths = list(resp.partition_lengths)
            m.state = "done"
        except grpc.RpcError as exc:
            m.state, m.error = "failed", f"{exc.code().name}: {exc.details()}"
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                self._mark_down(m.merger, m.error)
            elif exc.code() in SYSTEMIC:  # every merge on that merger will fail the same way: say so once, loudly
                self._warn_once(f"rpc-{m.merger}-{exc.code().name}", "Riffle: merges on %s are refused (%s); their outputs stay "
                                "unmerged until this is fixed", m.merger, m.error)
            log.info("Riffle: merge %s of shuffle %d failed (%s); its %d outputs stay unmerged", m.request_id, m.shuffle_id, m.error, len(m.members))
        except Exception as exc:  # a cancelled future, or the client refusing to send (e.g. a token without TLS)
            m.state, m.error = "failed", repr(exc)
            if not m.future.cancelled():
                self._warn_once(f"error-{m.merger}-{type(exc).__name__}", "Riffle: merges on %s fail (%s); their outputs stay unmerged",
                                m.merger, m.error)

    def _progress(self, s: ShuffleState, now: float) -> None:
        for m in s.merges:
            self._poll(m)
        if s.map_done_at is None:
            return
        total = len(s.merges)
        done = sum(1 for m in s.merges if m.state == "done")
        running = sum(1 for m in s.merges if m.state == "running")
        if running == 0:
            self._finalize(s, commit=True, reason="all merges finished")
        elif total and done / total >= self.config.best_effort:
            self._finalize(s, commit=True, reason=f"best effort: {done}/{total} merges finished")
        elif now - s.map_done_at >= self.config.hold_timeout:
            self._finalize(s, commit=True, reason=f"timeout after {self.config.hold_timeout:.3g} s: {done}/{total} merges finished")

    def _abandon(self, s: ShuffleState, reason: str) -> None:
        self._finalize(s, commit=False, reason=reason)

    def _finalize(self, s: ShuffleState, commit: bool, reason: str) -> None:
        s.finalized = True
        for m in s.merges:
            if m.state == "running":
                m.state = "cancelled"
                if m.future is not None:
                    m.future.cancel()
                try:  # fire and forget: a hung merger must not stall the scheduler
                    self._rpc.submit(self._client(m.merger).cancel, m.request_id)
                except Exception:
                    log.debug("riffle: cancel of %s not sent", m.request_id, exc_info=True)
        done = [m for m in s.merges if m.state == "done"]
        committed = 0
        if commit and done:
            commit_message = messages.Commit(s.shuffle_id, [merge_group(m) for m in done])
            committed = int(self.tracker.commit(messages.encode(commit_message)))
            if committed < 0:
                reason += "; commit refused (the reducers were already running)"
                committed = 0
        if s.held:
            self.tracker.release(s.shuffle_id)
        s.committed = committed
        self._record(s, reason, len(done))
        s.settled = True
        self._prune_settled()

    def _record(self, s: ShuffleState, reason: str, done: int) -> None:
        states = Counter(m.state for m in s.merges)
        members = [len(m.members) for m in s.merges if m.state == "done"]
        # the shim reports how many groups it committed, not which: average when it skipped some
        merged_outputs = round(s.committed * (sum(members) / len(members))) if members else 0
        files_after = len(s.outputs) - merged_outputs + s.committed
        stats = {
            "shuffle_id": s.shuffle_id, "stage_id": s.stage_id, "map_outputs": len(s.outputs), "partitions": s.num_partitions,
            "merges_requested": len(s.merges), "merges_committed": s.committed, "merges_cancelled": states["cancelled"],
            "merges_failed": states["failed"], "blocks_before": len(s.outputs) * s.num_partitions,
            "blocks_after": files_after * s.num_partitions, "bytes": s.map_bytes,
            "hold_seconds": round(time.monotonic() - s.map_done_at, 4) if s.map_done_at else None, "reason": reason,
        }
        self.stats[s.shuffle_id] = stats
        _cap(self.stats)
        if s.held:
            log.info("Riffle: shuffle %d: %d merges requested, %d committed, %d cancelled, %d failed; map files %d -> %d "
                     "(blocks %d -> %d, %d bytes); reducers held %.3f s after the map stage (%s)",
                     s.shuffle_id, len(s.merges), s.committed, states["cancelled"], states["failed"], len(s.outputs), files_after,
                     stats["blocks_before"], stats["blocks_after"], s.map_bytes, stats["hold_seconds"] or 0.0, reason)

    # ---------------------------------------------------------------- cleanup
    def _cleanup_shuffle(self, sid: int) -> None:
        for address, dirs in self.merged_where.pop(sid, set()):
            try:
                self._client(address).cleanup(list(dirs), app_id=self.app_id, shuffle_id=sid)
            except grpc.RpcError as exc:
                log.warning("Riffle: could not delete merged files of shuffle %d on %s: %s", sid, address, exc.details())

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """True once every tracked shuffle is finalized (benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(s.settled or not s.held for s in list(self.shuffles.values())):
                return True
            time.sleep(0.02)
        return False


def _cap(d: OrderedDict) -> None:
    while len(d) > MAX_SETTLED_SHUFFLES:
        d.popitem(last=False)


def merge_group(m: Merge) -> Any:
    """A finished merge as the shim's ``merge_group`` message: the owner is the group's lowest map index."""
    return messages.MergeGroup(owner=min(o.map_index for o in m.members), merged_map_id=m.merged_map_id, executor=m.members[0].executor,
                               map_indexes=[o.map_index for o in m.members], map_ids=[o.map_id for o in m.members], lengths=list(m.lengths))


__all__ = ["MergeScheduler"]
