"""What a job name may be and how a log line shows it: its bound in bytes, checked where a name enters (``slaq.job``),
and the name made inert for log lines (the JVM holds its model to the same bound and shows names the same way:
``SlaqBounds``, ``seam.Html.plain``)."""

from __future__ import annotations

import re

MAX_NAME_BYTES = 1024  # a job name's UTF-8 bytes at most (SlaqBounds.MAX_NAME_BYTES; generated spark.ml names stay well within)
# control characters (C0, DEL, C1 such as NEL), line and paragraph separators, bidirectional formatting characters
_NOT_SHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(name: str) -> str:
    """``name`` made inert for a log line: each control, separator or bidirectional formatting character as a
    backslash, 'u' and four hex digits, so a name cannot forge log lines, send terminal escapes or reorder what follows."""
    return _NOT_SHOWN.sub(lambda m: f"\\u{ord(m.group()):04X}", name)


def check_name_size(name: str) -> str:
    """``name`` if it fits :data:`MAX_NAME_BYTES` in UTF-8, else ``ValueError``: every view of a job (the tab, its
    JSON, the event log, the History Server) holds its name, so its size is bounded where it enters."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise ValueError(f"a SLAQ job name may be at most {MAX_NAME_BYTES} bytes in UTF-8, got {size} bytes "
                         f"starting {shown(name[:40])!r}")
    return name
