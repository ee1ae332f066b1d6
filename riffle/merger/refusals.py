"""How the merger says no: every domain error becomes a :class:`Refused` carrying its gRPC status, and each
RPC handler has one path that logs it and aborts the call (:func:`answers_refusals`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import grpc

from riffle.merger.errors import DISK_FULL_ERRNOS, DiskFull, MergeCancelled, shown
from riffle.merger.paths import PathRefused
from riffle.shuffle.layout import CorruptShuffleFile

log = logging.getLogger("riffle.merger")
MAX_MESSAGE = 1024  # characters of an error message sent back or logged
Code = grpc.StatusCode


class Refused(Exception):
    """A call answered with a gRPC status instead of a reply."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@contextmanager
def invalid_as(prefix: str = "") -> Iterator[None]:
    """A request the daemon will not act on: a path outside its roots is PERMISSION_DENIED, any other bad value INVALID_ARGUMENT."""
    try:
        yield
    except PathRefused as exc:
        raise Refused(Code.PERMISSION_DENIED, str(exc)) from exc
    except ValueError as exc:
        raise Refused(Code.INVALID_ARGUMENT, prefix + str(exc)) from exc


def merge_failure(exc: BaseException) -> Refused | None:
    """What a merge that raised ``exc`` answers; None for a failure nobody foresaw (a bug)."""
    if isinstance(exc, MergeCancelled):
        return Refused(Code.CANCELLED, str(exc))
    if isinstance(exc, PathRefused):
        return Refused(Code.PERMISSION_DENIED, str(exc))
    if isinstance(exc, FileNotFoundError):  # a missing input, or a directory removed while the merge ran
        return Refused(Code.NOT_FOUND, str(exc))
    if isinstance(exc, CorruptShuffleFile):
        return Refused(Code.DATA_LOSS, f"corrupt map output: {exc}")
    if isinstance(exc, DiskFull):
        return Refused(Code.RESOURCE_EXHAUSTED, str(exc.strerror or exc))
    if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:  # any other step the disk filled at
        return Refused(Code.RESOURCE_EXHAUSTED, f"disk full: {exc}")
    if isinstance(exc, FileExistsError):
        return Refused(Code.ALREADY_EXISTS, str(exc))
    if isinstance(exc, OSError):
        return Refused(Code.INTERNAL, f"I/O error: {exc}")
    return None


S = TypeVar("S")
Q = TypeVar("Q")
R = TypeVar("R")


def answers_refusals(handler: Callable[[S, Q, grpc.aio.ServicerContext], Awaitable[R]]
                     ) -> Callable[[S, Q, grpc.aio.ServicerContext], Awaitable[R]]:
    """The handler's one abort path: a :class:`Refused` it raises is logged and ends the call with its status."""

    @functools.wraps(handler)
    async def answering(self: S, request: Q, context: grpc.aio.ServicerContext) -> R:
        try:
            return await handler(self, request, context)
        except Refused as refused:
            message = shown(refused.message, MAX_MESSAGE)
            log.warning("request refused: %s: %s", refused.code.name, message)
            await context.abort(refused.code, message)
            raise  # not reached: abort raises

    return answering
