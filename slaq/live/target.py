"""A job's declared target (``target_loss`` / ``target_reduction``) and whether its history reached it.

The reduction is read on the same scale the policies and the UI use: the job's normalized loss
(:func:`~slaq.stats.history.normalized_loss`, 0 at the forecast's floor), from the curve the job's
:class:`~slaq.predict.forecast.CurveCache` holds, so checking after every loss fits the curve at most
once per history length, shared with the epoch loop. Pure: no Spark, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from slaq.predict.forecast import CurveCache, predicted_floor
from slaq.predict.loss_curves import MIN_FIT_POINTS
from slaq.stats.history import JobHistory, finite_number, normalized_loss


@dataclass(frozen=True)
class Target:
    """``loss``: stop once a loss is at most this; ``reduction`` (in (0, 1]): stop once the job made
    this fraction of its predicted reduction (from its first loss to its fitted floor)."""

    loss: float | None = None
    reduction: float | None = None

    @classmethod
    def checked(cls, loss: object = None, reduction: object = None) -> Target:
        """A target from user input; raises ``InvalidReport``/``ValueError`` naming the bad argument."""
        target_loss = None if loss is None else finite_number(loss, "target_loss")
        target_reduction = None if reduction is None else finite_number(reduction, "target_reduction")
        if target_reduction is not None and not 0 < target_reduction <= 1:
            raise ValueError(f"target_reduction must be in (0, 1], e.g. 0.95; got {reduction!r}")
        return cls(target_loss, target_reduction)

    def describe(self) -> str:
        """The target as a user reads it ("" without one), e.g. ``loss <= 0.45``."""
        parts = [] if self.loss is None else [f"loss <= {self.loss:g}"]
        if self.reduction is not None:
            parts.append(f"{self.reduction:.0%} of its predicted loss reduction")
        return " or ".join(parts)

    def reached(self, history: JobHistory, curves: CurveCache) -> bool:
        """Whether ``history`` reached this target. The reduction needs :data:`MIN_FIT_POINTS` losses
        (a curve through fewer says little about the floor) and a first loss above the floor."""
        losses = list(history.losses)  # a snapshot: the loop may append meanwhile
        if not losses:
            return False
        if self.loss is not None and losses[-1] <= self.loss:
            return True
        if self.reduction is None or len(losses) < MIN_FIT_POINTS:
            return False
        curve = curves.current(losses)
        if curve is None:
            return False
        floor = predicted_floor(curve, losses, history.scale())
        if losses[0] - floor <= 0:
            return False
        return bool(1.0 - normalized_loss(losses[-1], losses[0], floor) >= self.reduction)
