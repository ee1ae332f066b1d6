"""SLAQ for Optuna studies, the public name: :class:`Pruner`, which predicts a trial's final value with SLAQ's
loss curve. Each running trial is a SLAQ job with no code change, switched on with SLAQ itself (the integration is
:mod:`slaq.integrations.optuna`). Optuna is optional: ``pip install slaq-riffle[optuna]``; importing this module
never imports it, ``slaq.optuna.Pruner`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slaq.integrations.optuna.pruner import Pruner

__all__ = ["Pruner"]


def __getattr__(name: str) -> Any:
    if name != "Pruner":
        raise AttributeError(f"module 'slaq.optuna' has no attribute {name!r}")
    from slaq.integrations.optuna.pruner import Pruner

    return Pruner
