"""Allocation policies: one module each behind :class:`~slaq.policy.base.Policy`."""

from __future__ import annotations

from slaq.policy.base import Policy
from slaq.policy.fair import Fair
from slaq.policy.fifo import Fifo
from slaq.policy.harmony import Harmony
from slaq.policy.las import LeastAttainedService
from slaq.policy.mlfs import Mlfs
from slaq.policy.oasis import Oasis
from slaq.policy.optimus import Optimus
from slaq.policy.slaq_maxmin import SlaqMaxMin
from slaq.policy.slaq_total import SlaqTotal

POLICIES: dict[str, type[Policy]] = {p.name: p for p in (SlaqTotal, SlaqMaxMin, Fair, Fifo, LeastAttainedService, Optimus, Oasis, Mlfs, Harmony)}


def make_policy(name: str) -> Policy:
    """The policy called ``name``; raises ValueError listing the known names."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(sorted(POLICIES))}") from None


__all__ = ["POLICIES", "Policy", "make_policy"]
