"""SLAQ for Optuna studies: each running trial a SLAQ job (:mod:`slaq.optuna.trials`, switched on with
SLAQ itself, no code change) and :class:`Pruner`, which predicts a trial's final value with SLAQ's loss
curve (:mod:`slaq.optuna.rule`). Optuna is optional: ``pip install slaq-riffle[optuna]``; importing
this package never imports it, ``slaq.optuna.Pruner`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slaq.optuna.pruner import Pruner

__all__ = ["Pruner"]


def __getattr__(name: str) -> Any:
    if name != "Pruner":
        raise AttributeError(f"module 'slaq.optuna' has no attribute {name!r}")
    from slaq.optuna.pruner import Pruner

    return Pruner
