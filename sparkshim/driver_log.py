"""SLAQ's, Riffle's and the floor's Python log lines in the driver log, where Spark's own lines are.

A pyspark driver's Python logging is not the driver log: unconfigured, it drops INFO and prints a WARN bare (no
time, no level) on stderr, which ``spark-submit`` copies into the application's stdout. So one handler on the
loggers :data:`LOGGERS` (and their children: ``slaq.loop``, ``riffle.driver``, ...) forwards each record over
py4j to the log4j logger of the same name in the driver JVM (``io.slaqriffle.seam.PythonLog``), at its level
mapped to log4j's: the line gets the driver log's time, level and layout, and the user's log4j2 configuration
decides what is shown. It forwards once a product attaches to a SparkContext (:func:`attach`); the Python
loggers then follow log4j's levels (lowered to what log4j lets through, never raised over a level the user set),
and a user's own handlers above them still get only what the user's levels let through. Before that, when the
JVM is gone, and in a command-line tool (:func:`keep_local`), a WARN or worse goes to stderr with its time and
level, and only where Python's own last resort would have printed it (no handler of the user's on the way to the
root): a line is never printed twice by SLAQ or Riffle.

Imports only the standard library (a merger-only node imports :mod:`sparkshim` too).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

LOGGERS = ("slaq", "riffle", "sparkshim")
IN_DRIVER_LOG = "sparkshim_in_driver_log"  # a LogRecord attribute: the line is already in the driver JVM's log
FALLBACK_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class DriverLogHandler(logging.Handler):
    """Forwards records to the driver JVM's log4j once it has a sink there; else the stderr fallback."""

    def __init__(self) -> None:
        super().__init__()
        self.sink: tuple[Any, Any] | None = None  # (py4j gateway, io.slaqriffle.seam.PythonLog)
        self.forwarding = True
        self._local = threading.local()  # per thread: inside a forward (busy), or records held while attaching
        self._message = logging.Formatter("%(message)s")  # log4j's layout adds time, level and logger
        self._fallback = logging.Formatter(FALLBACK_FORMAT)
        self._attach_lock = threading.Lock()
        self._levels_set: dict[str, int] = {}  # the levels this module gave the Python loggers
        self._unpropagated: set[str] = set()  # lowered loggers whose propagation is this handler's (_pass_on)

    def handle(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        """No handler lock: py4j is thread-safe, and a lock held across a JVM round trip would queue every
        logging thread behind one slow call."""
        self._pass_on(record)
        return self._forward(record)

    def _forward(self, record: logging.LogRecord) -> bool:
        if getattr(record, IN_DRIVER_LOG, False) or not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        held = getattr(self._local, "held", None)
        if held is not None:  # logged on this thread while the sink is being made (the jar loading): said once it is
            held.append(record)
            return
        sink = self.sink
        if sink is not None and not getattr(self._local, "busy", False):  # never re-entered: a py4j failure is not logged here
            self._local.busy = True
            bare_root = not logging.root.handlers
            try:
                sink[1].log(record.name, record.levelno, self._message.format(record))
                setattr(record, IN_DRIVER_LOG, True)
                return
            except Exception as exc:
                if bare_root:  # py4j says a failed call with the root-level logging.info, which configures the root
                    del logging.root.handlers[:]  # logger (basicConfig) once; that handler would print every later line
                if _gone(exc) and self.sink is sink:
                    self.sink = None  # the JVM is gone: later records fall back at once
            finally:
                self._local.busy = False
        self._fall_back(record)

    def _pass_on(self, record: logging.LogRecord) -> None:
        """Propagation from a logger this module lowered, as Python does it, but only for a record the user's own
        levels let through (read at each record: a level set later counts): a line created for log4j alone never
        reaches a user's handler set at WARNING."""
        top = record.name.partition(".")[0]
        if top not in self._unpropagated or record.levelno < self._users_level(record.name):
            return
        # once each: not to a handler Python already gave it on the way up to ours (pytest puts its capture handler on
        # every logger that does not propagate)
        below = logging.getLogger(record.name)
        called = set(below.handlers)
        while below.name != top and below.parent is not None:
            below = below.parent
            called.update(below.handlers)
        logger = below.parent
        while logger is not None:
            for handler in logger.handlers:
                if record.levelno >= handler.level and handler not in called:
                    handler.handle(record)
            logger = logger.parent if logger.propagate else None

    def _users_level(self, name: str) -> int:
        """The effective level of logger ``name`` without the levels this module set."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            if logger.level and logger.level != self._levels_set.get(logger.name):
                return logger.level
            logger = logger.parent
        return logging.NOTSET

    def _other_handlers(self, name: str) -> bool:
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return True
            logger = logger.parent if logger.propagate or logger.name in self._unpropagated else None
        return False

    def _fall_back(self, record: logging.LogRecord) -> None:
        """What Python's last resort does (a WARN or worse, when no other handler is on the record's way to the
        root), with the time and level; never stdout."""
        if record.levelno < logging.WARNING or self._other_handlers(record.name) or sys.stderr is None:
            return
        try:
            sys.stderr.write(self._fallback.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # a closed stderr at exit: nowhere left to say it
            pass

    def attach(self, gateway: Any) -> None:
        """Forward to ``gateway``'s JVM from now on (once per gateway), and follow its log4j levels."""
        if not self.forwarding:
            return
        with self._attach_lock:
            if self.sink is not None and self.sink[0] is gateway:
                return
            from sparkshim.bridge import new_instance

            self._local.held = []
            failure = None
            try:
                sink = new_instance(gateway, "seam.PythonLog")
                self.sink = (gateway, sink)
                self._follow_levels(sink)
            except Exception as exc:  # no shim in this JVM, or the JVM is going away: the fallback stays
                failure = exc
            finally:
                held, self._local.held = self._local.held, None
        for record in held:
            self._forward(record)  # handed on to the user's handlers when it was logged
        if failure is not None:
            logging.getLogger("sparkshim.driver_log").debug("cannot forward log lines to the driver JVM: %s", failure)

    def _follow_levels(self, sink: Any) -> None:
        """Each of :data:`LOGGERS` creates the records log4j lets through at or below it: its level is lowered to
        that, unless the user set one (a level this module did not set) or its level already lets them through. The
        level set is one below log4j's (it lets the same records through), so that one the user sets later, even
        log4j's own, is told apart from it; a lowered logger's propagation is :meth:`_pass_on`'s."""
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if logger.level not in (logging.NOTSET, self._levels_set.get(name)):
                continue
            logger.setLevel(logging.NOTSET)
            self._levels_set.pop(name, None)
            if name in self._unpropagated:
                self._unpropagated.discard(name)
                logger.propagate = True
            wanted = max(int(sink.threshold(name)), 2) - 1
            if wanted < logger.getEffectiveLevel() - 1:
                logger.setLevel(wanted)
                self._levels_set[name] = wanted
                if logger.propagate:
                    logger.propagate = False
                    self._unpropagated.add(name)


def _gone(exc: Exception) -> bool:
    """Whether ``exc`` says the JVM's gateway is gone (not one record that could not be sent)."""
    try:
        from py4j.protocol import Py4JNetworkError
    except ImportError:
        return True
    return isinstance(exc, (Py4JNetworkError, OSError))


HANDLER = DriverLogHandler()


def install() -> None:
    """Puts :data:`HANDLER` on each of :data:`LOGGERS`, once per process (at ``import sparkshim``)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if HANDLER not in logger.handlers:
            logger.addHandler(HANDLER)


def attach(sc: Any) -> None:
    """Forward the Python lines to the driver JVM of ``sc`` (a pyspark SparkContext) from now on."""
    gateway = getattr(sc, "_gateway", None)
    if gateway is not None:
        HANDLER.attach(gateway)


def keep_local() -> None:
    """For a command-line tool whose own handler shows its lines on stderr: never forward them to a JVM (a
    Spark session it starts would print each line a second time)."""
    HANDLER.forwarding = False
