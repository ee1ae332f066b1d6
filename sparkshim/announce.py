"""Each product's "on" line: said once at attach, in the driver's log, in every kind of driver.

The product's Python loggers reach the driver log too (:mod:`sparkshim.driver_log`), but at their own level,
which Spark's shells hide below WARN. So the line goes to the driver JVM's log4j on its own logger
(``io.slaqriffle.seam.Announce``, logger ``io.slaqriffle.SlaqRiffle``, shown at every driver's default level) and to the product's Python
logger, marked so that neither the forwarding handler nor a brain's output says it a second time.
"""

from __future__ import annotations

import logging
from typing import Any

from sparkshim.bridge import call_static
from sparkshim.driver_log import IN_DRIVER_LOG

log = logging.getLogger("sparkshim.announce")


def announce(sc: Any, logger: logging.Logger, line: str) -> None:
    """Says ``line`` once: in the driver JVM's log (when its shim answers) and on ``logger`` at INFO."""
    try:
        call_static(sc._gateway, "seam.Announce", "line", ["java.lang.String"], line)
        in_driver_log = True
    except Exception as exc:  # no shim in this JVM (it is loaded by now on every path that announces)
        log.debug("cannot log %r in the driver JVM: %s", line, exc)
        in_driver_log = False
    logger.info(line, extra={IN_DRIVER_LOG: in_driver_log})


class NotInDriverLog(logging.Filter):
    """For a handler that copies Python lines into the driver log (the brain's): drops announced lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, IN_DRIVER_LOG, False)


def tab_location(sc: Any, path: str, title: str) -> str:
    """Where the ``title`` tab of ``sc``'s Spark UI is (``path`` like ``/slaq/``), for an "on" line."""
    try:
        url = sc.uiWebUrl
    except Exception:  # a context going away
        url = None
    return f"{title} tab at {url.rstrip('/')}{path}" if url else f"no {title} tab (spark.ui.enabled=false)"
