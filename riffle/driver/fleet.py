"""The merger daemons as the driver sees them: one client per address, which ones are up or refuse
this driver, which one gets a merge (same host, power of two choices), and where merged files were
written so they can be deleted. Every failure here leaves outputs unmerged; none stops the scheduler,
and one cause is one WARN line (a merger known to refuse or be down is not asked again at cleanup).
Mergers' Status (load, queue, storage) is asked in the background and read as last answered: the
scheduler's thread never waits on a merger's answer to it."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

from riffle.driver.config import RiffleConfig
from riffle.driver.local_dirs import warn_outside_roots
from riffle.driver.merges import Merge, MergeState
from riffle.driver.placement import candidates, two_choices
from riffle.driver.status import DOWN, OTHER, REFUSED, UP, cause_of_code, merger_row
from riffle.driver.status_calls import PENDING, STATUS_DEADLINE_SECONDS, Answer, Pending, StatusCalls
from riffle.driver.token_file import TokenFile
from riffle.driver.warn_once import WarnOnce
from riffle.merger.client import MergerClient
from riffle.merger.paths import OUTSIDE_ROOTS
from riffle.storage_cost import NodeStorage

log = logging.getLogger("riffle.driver")
# merge errors that will repeat for every merge on that merger (wrong token, TLS, version or roots)
SYSTEMIC = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED,
                      grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION})
DOWN_SECONDS = 30.0  # how long an unreachable merger is left out
LOAD_TTL_SECONDS = 0.2  # a merger's reported load is asked again once this old (one status RPC per merger, not per merge)
MAX_RPC_THREADS = 64  # merges in flight at once; each waits on one blocking MergerClient call
MAX_KEEPALIVE_SECONDS = 60.0  # leases are renewed every lease / 3, and at least this often
T = TypeVar("T")


class MergerFleet:
    """The mergers of one ``config`` (read afresh at every choice and request; clients already open for
    an address are kept). A request a merger refuses for its token is sent once more if the token file
    holds a newer token (a rotation)."""

    def __init__(self, config: RiffleConfig, app_id: str):
        self.app_id = app_id
        self.merged_where: dict[int, set[tuple[str, tuple[str, ...]]]] = {}  # shuffle -> {(merger, dirs)} with merged files on disk
        self.warn_once = WarnOnce(log)
        self.refused: dict[str, str] = {}  # merger -> why it refuses this driver (token, TLS, version): it will not change by itself
        self._clients: dict[str, MergerClient] = {}
        self.down_until: dict[str, float] = {}  # merger -> when it is asked again (monotonic seconds) after it went away
        self.config = config
        self.token = TokenFile(config.token, config.token_file)
        self._loads: dict[str, tuple[float, float]] = {}
        self._queues: dict[str, tuple[int, int]] = {}  # merger -> (queued, running) at its last status call
        self._storage: dict[str, NodeStorage] = {}  # merger -> its node's storage, as its last status call reported it
        self._served: dict[str, tuple[str, ...]] = {}  # merger -> the dirs it serves (its --local-dir), as its status reported them
        self._status_failed: dict[str, float] = {}  # merger -> when its last status call failed
        self._status = StatusCalls()
        self.outcomes: dict[str, Counter[str]] = {}  # merger -> its merges by final state (done, failed, cancelled)
        self._rng = random.Random(0)
        self._rpc = ThreadPoolExecutor(MAX_RPC_THREADS, thread_name_prefix="riffle-rpc")
        self._renew_every = MAX_KEEPALIVE_SECONDS  # the shortest lease / 3 a merger reported, at most this
        self._next_renewal = 0.0
        self._renewing: set[str] = set()  # mergers whose lease this driver renews (scheduler thread only)

    # ---------------------------------------------------------------- health and placement
    def reachable(self, host: str) -> list[str]:
        """The mergers that can read files on ``host`` and are not marked down."""
        if self.config.mergers:
            options = candidates(self.config.mergers, host)
        else:
            options = [f"{host}:{self.config.merger_port}"]
        now = time.monotonic()
        return [m for m in options if self.down_until.get(m, 0.0) <= now]

    def choose(self, host: str) -> str | None:
        """The merger for a group of outputs on ``host``, or None (warned once per host) when none is reachable."""
        options = self.reachable(host)
        if not options:
            self.warn_once(f"host-{host}", "Riffle: no reachable merger on host %s; its outputs stay unmerged", host)
            return None
        return two_choices(options, self._load, self._rng)

    def placeable(self, host: str) -> bool:
        """Whether :meth:`choose` can pick among ``host``'s mergers now: one at most, or each one's load answered once
        (those never asked are asked now)."""
        options = self.reachable(host)
        for address in options if len(options) > 1 else []:
            if address not in self._loads:
                self._ask(address)
        return len(options) < 2 or all(a in self._loads for a in options)

    def reported_storage(self, address: str) -> NodeStorage | None | Pending:
        """``address``'s node storage as its latest Status answer reported it; None when that call failed (the conf's
        storage then); PENDING while its first answer (since it was last down) is awaited: asked now, never waited for."""
        if address in self._storage:
            return self._storage[address]
        failed_at = self._status_failed.get(address)
        if failed_at is None or self.down_until.get(address, 0.0) > failed_at or time.monotonic() - failed_at > DOWN_SECONDS:
            # never answered, back since it was down, or its last call failed long enough ago to ask again
            self._ask(address)
            return PENDING if self._status.asking(address) else None
        return None

    def mark_down(self, address: str, why: str) -> None:
        self._storage.pop(address, None)
        if self.down_until.get(address, 0.0) <= time.monotonic():
            log.warning("Riffle: merger %s unavailable (%s); leaving its outputs unmerged for %.0f s", address, why, DOWN_SECONDS)
        self.down_until[address] = time.monotonic() + DOWN_SECONDS

    def refuse(self, address: str, why: str) -> None:
        """``address`` refuses this driver for a reason that repeats for every request: one WARN per reason (a token
        rotated on every merger is one line, not one per merger), and no cleanup is asked of it (it wrote nothing
        for a refused merge)."""
        self.refused[address] = why
        self.warn_once(f"refused-{why}", "Riffle: merger %s refuses this driver (%s); outputs sent to it, or to any other merger "
                       "refusing for this reason, stay unmerged until this is fixed", address, why)

    def _failed(self, address: str, exc: grpc.RpcError, local_dirs: list[str] | None = None) -> str:
        """Records what a failed RPC to ``address`` (about files under ``local_dirs``) says about it; returns
        the failure as text."""
        error = f"{exc.code().name}: {exc.details()}"
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            self.mark_down(address, error)
        elif exc.code() == grpc.StatusCode.PERMISSION_DENIED and OUTSIDE_ROOTS in (exc.details() or "") and local_dirs:
            self.refused[address] = error
            warn_outside_roots(self.warn_once, address, local_dirs, (exc.details() or "").split(OUTSIDE_ROOTS, 1)[1].strip())
        elif exc.code() in SYSTEMIC:  # every request to that merger will fail the same way: say so once, loudly
            self.refuse(address, error)
        return error

    def served_dirs(self, address: str) -> tuple[str, ...] | None:
        """The dirs ``address`` serves, as its latest Status answer said (None before one, or from an older daemon)."""
        return self._served.get(address) or None

    def _client(self, address: str) -> MergerClient:
        c = self._clients.get(address)
        if c is None:
            c = self._clients[address] = MergerClient(address, self.token.current, self.config.tls_ca_pem or self.config.tls_ca,
                                                      self.config.rpc_timeout)
        return c

    def _authenticated(self, client: MergerClient, call: Callable[[], T]) -> T:
        """``call()`` (a request of ``client``), sent once more with a newer token if the merger refuses the one it
        carried; any other failure, or a refusal with no newer token, is raised."""
        sent = client.token
        try:
            return call()
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAUTHENTICATED or (newer := self.token.newer_than(sent)) is None:
                raise
        client.token = newer
        return call()

    def _load(self, address: str) -> float:
        """Its latest reported load (infinite while unknown or after a failed call), asked again when stale."""
        cached = self._loads.get(address)
        if cached is None or time.monotonic() - cached[1] >= LOAD_TTL_SECONDS:
            self._ask(address)
        return cached[0] if cached is not None else float("inf")

    def _ask(self, address: str) -> None:
        """A Status call to ``address`` in the background (:mod:`riffle.driver.status_calls`); the answer is taken in by
        :meth:`collect_status`."""
        if self._status.asking(address):
            return
        try:
            client = self._client(address)
        except Exception as exc:  # the client refuses to talk to it (a token without TLS off loopback)
            self.refuse(address, str(exc))
            self._no_answer(address, time.monotonic())
            return
        self._status.ask(address, functools.partial(self._authenticated, client, functools.partial(client.status, STATUS_DEADLINE_SECONDS)))

    def collect_status(self) -> None:
        """Takes in the Status answers that came back (the scheduler's thread, at every step; never waits)."""
        for address, future in self._status.answers():
            now = time.monotonic()
            try:
                status = future.result()
            except CancelledError:  # the fleet is closing
                continue
            except grpc.RpcError as exc:
                self._failed(address, exc)
                self._no_answer(address, now)
            except Exception as exc:  # the client refuses to send (a token without TLS off loopback)
                self.refuse(address, str(exc))
                self._no_answer(address, now)
            else:
                self._answered(address, status, now)

    def _answered(self, address: str, status: Any, now: float) -> None:
        """Takes in ``address``'s Status reply (:class:`riffle.driver.status_calls.Answer`); a storage figure out of range
        is one WARN per merger (the conf's prices that node)."""
        answer = Answer.of(status)
        self._loads[address] = (answer.load, now)
        self._queues[address], self._storage[address], self._served[address] = answer.queues, answer.storage, answer.served
        if answer.wrong:
            self.warn_once(f"storage-{address}", "Riffle: merger %s reports storage figures out of range: %s; merges on its node "
                           "are priced with spark.riffle.cost.* instead", address, "; ".join(answer.wrong))
        self._status_failed.pop(address, None)

    def _no_answer(self, address: str, now: float) -> None:
        """A Status call that failed (or could not be sent): no load to place by, the conf's storage until asked again."""
        self._status_failed[address] = now
        self._loads[address] = (float("inf"), now)

    # ---------------------------------------------------------------- merges
    def send(self, m: Merge, num_partitions: int) -> None:
        """Starts ``m`` on its merger in the background; if it cannot be sent, ``m`` is failed at once."""
        executor = m.members[0].executor
        try:
            client = self._client(m.merger)
        except Exception as exc:  # the client refuses to talk to it (a token without TLS off loopback)
            m.fail(str(exc), REFUSED)
            self._count(m)
            self.refuse(m.merger, m.error)
            return
        try:
            merge = functools.partial(client.merge, m.request_id, m.shuffle_id, [o.map_id for o in m.members], m.local_dirs,
                                      num_partitions, m.merged_map_id, app_id=self.app_id, executor_id=executor, sub_dirs=self.config.sub_dirs,
                                      timeout=self.config.rpc_timeout)
            m.future = self._rpc.submit(self._authenticated, client, merge)
        except Exception as exc:
            m.fail(str(exc), OTHER)
            self._count(m)
            self.warn_once(f"submit-{m.merger}-{type(exc).__name__}", "Riffle: cannot send merges to %s (%s); their outputs stay unmerged",
                           m.merger, m.error)
            return
        self.merged_where.setdefault(m.shuffle_id, set()).add((m.merger, tuple(m.local_dirs)))

    def poll(self, m: Merge) -> None:
        """Moves a running ``m`` whose RPC returned to done or failed; a failure may mark its merger down."""
        if m.state is not MergeState.RUNNING or m.future is None or not m.future.done():
            return
        try:
            resp = m.future.result()
            m.succeed(resp.partition_lengths)
        except grpc.RpcError as exc:
            m.fail(self._failed(m.merger, exc, m.local_dirs), cause_of_code(exc.code()))
            log.info("Riffle: merge %s of shuffle %d failed (%s); its %d outputs stay unmerged", m.request_id, m.shuffle_id, m.error, len(m.members))
        except Exception as exc:  # a cancelled future, or the client refusing to send (e.g. a token without TLS)
            m.fail(repr(exc), OTHER)
            if not m.future.cancelled():
                self.warn_once(f"error-{m.merger}-{type(exc).__name__}", "Riffle: merges on %s fail (%s); their outputs stay unmerged",
                               m.merger, m.error)
        self._count(m)

    def health(self, address: str) -> str:
        """``refused`` (it will not change by itself), ``down`` (left out for now) or ``up``."""
        if address in self.refused:
            return REFUSED
        return DOWN if self.down_until.get(address, 0.0) > time.monotonic() else UP

    def merger_rows(self) -> list[Any]:
        """Every merger configured or contacted, as ``riffle_merger`` messages (the Riffle tab's mergers table)."""
        addresses = dict.fromkeys([*self.config.mergers, *self._clients, *self.down_until, *self.refused, *self.outcomes])
        return [merger_row(a, self.health(a), *self._queues.get(a, (0, 0)), self.outcomes.get(a, Counter())) for a in addresses]

    def _count(self, m: Merge) -> None:
        self.outcomes.setdefault(m.merger, Counter())[m.state] += 1

    def cancel(self, m: Merge) -> None:
        """Stops waiting for ``m`` and asks its merger to drop it; fire and forget: a hung merger must not stall the scheduler."""
        self._count(m)
        if m.future is not None:
            m.future.cancel()
        try:
            self._rpc.submit(self._client(m.merger).cancel, m.request_id)
        except Exception:
            log.debug("riffle: cancel of %s not sent", m.request_id, exc_info=True)

    # ---------------------------------------------------------------- leases
    def keep_alive(self) -> None:
        """Renews this application's lease on every merger that holds or makes merged files for it (in the
        background): on a merger new to it at once (which also learns the merger's lease), then every lease / 3.
        A merger deletes the files of an application it has not heard from for its lease."""
        self._ask_again_after_rotation()
        now = time.monotonic()
        holders = {address for places in self.merged_where.values() for address, _ in places} - set(self.refused)
        due = holders if now >= self._next_renewal else holders - self._renewing
        if now >= self._next_renewal:
            self._next_renewal = now + self._renew_every
        for address in sorted(due):
            self._renewing.add(address)
            try:
                self._rpc.submit(self._renew, self._client(address))
            except Exception:  # shutting down, or the client refuses to talk to it
                log.debug("riffle: lease renewal for %s not sent", address, exc_info=True)

    def _ask_again_after_rotation(self) -> None:
        """Mergers that refused this driver's token are asked again once the token file holds a newer one (the
        mergers' token may change before the driver's file does)."""
        stale = [a for a, why in self.refused.items() if why.startswith(grpc.StatusCode.UNAUTHENTICATED.name) and a in self._clients]
        if not stale or self.token.newer_than(self._clients[stale[0]].token) is None:
            return
        for address in stale:
            self.warn_once.forget(f"refused-{self.refused.pop(address)}")
            self._status_failed.pop(address, None)  # its storage is asked for again with the new token
            self._clients[address].token = self.token.current

    def _renew(self, client: MergerClient) -> None:
        try:
            lease = self._authenticated(client, functools.partial(client.keep_alive, self.app_id)).lease_seconds
        except Exception:  # a down merger is already handled where merges fail; its lease runs on
            log.debug("riffle: lease renewal on %s failed", client.address, exc_info=True)
            return
        if lease > 0 and lease / 3 < self._renew_every:
            self._renew_every = lease / 3
            self._next_renewal = min(self._next_renewal, time.monotonic() + self._renew_every)

    # ---------------------------------------------------------------- cleanup
    def cleanup(self, sid: int) -> None:
        """Deletes shuffle ``sid``'s merged files on every merger that wrote some. A merger that refuses
        this driver wrote none; one that is down would fail again (its cause was logged): both are skipped."""
        now = time.monotonic()
        for address, dirs in self.merged_where.pop(sid, set()):
            known = self.refused.get(address) or ("down" if self.down_until.get(address, 0.0) > now else None)
            if known is not None:
                log.debug("Riffle: merged files of shuffle %d on %s not deleted: %s", sid, address, known)
                continue
            try:
                client = self._client(address)
                self._authenticated(client, functools.partial(client.cleanup, list(dirs), app_id=self.app_id, shuffle_id=sid))
            except grpc.RpcError as exc:
                error = self._failed(address, exc)
                if address not in self.refused and self.down_until.get(address, 0.0) <= now:
                    self.warn_once(f"cleanup-{address}-{exc.code().name}", "Riffle: could not delete merged files of shuffle %d "
                                   "on %s: %s", sid, address, error)
            except Exception as exc:
                self.refuse(address, str(exc))

    def cleanup_all(self) -> None:
        for sid in list(self.merged_where):
            self.cleanup(sid)

    def close(self) -> None:
        """Drops merges and Status calls not yet sent and closes every client."""
        self._status.close()
        self._rpc.shutdown(wait=False, cancel_futures=True)
        for c in self._clients.values():
            c.close()
