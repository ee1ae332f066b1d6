"""What a job name may be, how SLAQ makes one and how a log line shows it: the one home of a job name's rules.

A name is checked where it enters (``slaq.job``): a non-empty string without tabs or newlines, encodable as UTF-8
(py4j carries it to the JVM as UTF-8, so a lone surrogate cannot cross), at most :data:`MAX_NAME_BYTES` in UTF-8.
The names SLAQ generates (a spark.ml fit's) are one line, hold what cannot cross py4j escaped (:func:`crossable`)
and are cut before the suffix that keeps them unique (a fit's ``#N``), never through it. A log line shows a name
made inert (:func:`shown`). The JVM holds its model to the same bound and shows names the same way (``SlaqBounds``, ``seam.Html.plain``), and
builds a Spark Connect fit's name as :func:`fit_job_name` does (``ConnectFits``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

MAX_NAME_BYTES = 1024  # a job name's UTF-8 bytes at most (SlaqBounds.MAX_NAME_BYTES; generated names stay well within)
MAX_NAME = 160  # characters of a generated name: a spark.ml fit's params (before its "#N" suffix)
_FORBIDDEN = set("\t\n\r")
# control characters (C0, DEL, C1 such as NEL), line and paragraph separators, bidirectional formatting characters
_NOT_SHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(name: str) -> str:
    """``name`` made inert for a log line: each control, separator or bidirectional formatting character as a
    backslash, 'u' and four hex digits, so a name cannot forge log lines, send terminal escapes or reorder what follows."""
    return _NOT_SHOWN.sub(lambda m: f"\\u{ord(m.group()):04X}", name)


def check_job_name(name: object) -> str:
    """``name`` if it is a non-empty string without tabs or newlines (the shim's messages and log lines are
    line-based), else ``ValueError``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a SLAQ job name must be a non-empty string, got {name!r}")
    if _FORBIDDEN & set(name):
        raise ValueError(f"a SLAQ job name may not contain tabs or newlines: {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:  # refused here: py4j would fail on it mid-call, on a JVM thread not the caller's any more
        raise ValueError(f"a SLAQ job name must be encodable as UTF-8 to reach the JVM; {name!r} holds "
                         f"{name[exc.start]!r} (a lone surrogate, as os.listdir gives for undecodable bytes) at {exc.start}") from None
    return name


def crossable(text: str) -> str:
    """``text`` with every character UTF-8 cannot encode (a lone surrogate) written as its ``\\udcff`` escape: a
    generated name must cross py4j, and SLAQ never makes a user's fit or trial fail over the name it gives it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_name_size(name: str) -> str:
    """``name`` if it fits :data:`MAX_NAME_BYTES` in UTF-8, else ``ValueError``: every view of a job (the tab, its
    JSON, the event log, the History Server) holds its name, so its size is bounded where it enters."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise ValueError(f"a SLAQ job name may be at most {MAX_NAME_BYTES} bytes in UTF-8, got {size} bytes "
                         f"starting {shown(name[:40])!r}")
    return name


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace, newlines and tabs included, become one space), at most
    ``limit`` characters, the last an ellipsis when cut: job names may not hold tabs or newlines, and a
    Py4JJavaError's text carries the whole Java stack."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_format_value(v) for v in value) + "]"
    return type(value).__name__  # vectors, matrices, nested estimators: their type is enough to read


def fit_job_name(estimator: str, params: Mapping[str, object], seq: int) -> str:
    """``LogisticRegression[elasticNetParam=0,regParam=0.1]#3``: the estimator, its hyperparameters
    (sorted, tabs and newlines removed, cut to :data:`MAX_NAME`) and a sequence number that keeps the name unique
    while it runs (never cut)."""
    body = one_line(crossable(",".join(f"{k}={_format_value(v)}" for k, v in sorted(params.items()))), MAX_NAME)
    return f"{crossable(estimator)}[{body}]#{seq}"


__all__ = ["MAX_NAME", "MAX_NAME_BYTES", "check_job_name", "check_name_size", "crossable", "fit_job_name", "one_line", "shown"]
