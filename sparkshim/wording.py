"""How numbers and counts read in SLAQ's and Riffle's messages: a whole number in full (``1048576``, never
``1.04858e+06``), and the noun after a count in the singular for exactly one (``1 core``, ``0.66 cores``).

Imports nothing: the merger daemon's range checks use it too.
"""

from __future__ import annotations


def number_text(value: float) -> str:
    """``value`` as a reader writes it: a whole number in full, any other to 15 significant digits (so float noise
    such as ``7.000000000000001`` reads ``7``)."""
    v = float(value)
    return str(int(v)) if v.is_integer() else f"{v:.15g}"


def counted(value: float, noun: str, shown: str | None = None, plural: str | None = None) -> str:
    """``value`` (written as ``shown``, default :func:`number_text`) and ``noun``, in the plural (default ``noun`` +
    ``s``) unless the written number is ``1``."""
    text = number_text(value) if shown is None else shown
    return f"{text} {noun if text == '1' else plural or noun + 's'}"
