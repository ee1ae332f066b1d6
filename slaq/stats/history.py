"""Per-job iteration history and SLAQ's loss normalization (paper §4.1).

Loss values of different algorithms live on incomparable scales, so SLAQ compares jobs by the
*change* of loss per iteration divided by the largest change seen so far for that job. Everything
here is pure data: no Spark, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


class InvalidReport(ValueError):
    """A loss or cost report that would corrupt a job's history; the history is left unchanged."""


def real_number(value: object, what: str) -> float:
    """``value`` as a float (NaN and infinities included); raises :class:`InvalidReport` for anything but a real number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidReport(f"{what} must be a real number, got {type(value).__name__}: {value!r}")
    return float(value)


def finite_number(value: object, what: str) -> float:
    number = real_number(value, what)
    if not math.isfinite(number):
        raise InvalidReport(f"{what} must be finite, got {number}")
    return number


def positive_number(value: object, what: str) -> float:
    """A finite number > 0: a job's weight, whether ``slaq.job`` or a recorded trace gives it."""
    number = finite_number(value, what)
    if number <= 0:
        raise InvalidReport(f"{what} must be > 0, got {number}")
    return number


def normalized_reductions(losses: np.ndarray | list[float]) -> np.ndarray:
    """Each iteration's loss reduction divided by the largest reduction seen up to that iteration.

    Element ``i`` belongs to the step ``losses[i] -> losses[i+1]``. Steps before any positive
    reduction (flat or rising starts) normalize to 0; noisy increases give negative values.
    """
    values = np.asarray(losses, dtype=float)
    if values.size < 2:
        return np.zeros(0)
    deltas = values[:-1] - values[1:]
    running_max = np.maximum.accumulate(deltas)
    out = np.zeros_like(deltas)
    positive = running_max > 0
    out[positive] = deltas[positive] / running_max[positive]
    return out


MIN_SPAN = 1e-300  # a job whose first loss is already at its floor: no division by zero


def loss_span(first: np.ndarray | float, floor: np.ndarray | float) -> np.ndarray:
    """The distance from a job's first loss to its floor: the unit of its normalized loss."""
    return np.maximum(np.asarray(first, dtype=float) - floor, MIN_SPAN)


def normalized_loss(loss: np.ndarray | list[float] | float, first: np.ndarray | float, floor: np.ndarray | float) -> np.ndarray:
    """Loss on its job's own scale (§4.1): 1 at the job's ``first`` loss, 0 at its ``floor`` (the loss
    it converges to). The one definition the forecasts, the policies, the UI status and the targets use;
    arguments broadcast, so a policy normalizes many jobs and allocations at once."""
    return (np.asarray(loss, dtype=float) - floor) / loss_span(first, floor)


@dataclass
class JobHistory:
    """Validated loss and cost history of one training job.

    ``losses[k]`` is the loss after iteration ``k`` (``losses[0]`` may be the loss of the initial
    model). ``core_seconds[i]``/``wall_seconds[i]``/``cores[i]`` describe the iteration that produced
    ``losses[i+1]`` when known. ``times[i]`` is when ``losses[i]`` was reported, for reporters that
    pass ``at`` with every loss (the live SLAQ jobs do; the simulator has no clock).
    """

    losses: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each loss was reported (``time.monotonic()``), when the reporter says
    core_seconds: list[float] = field(default_factory=list)
    wall_seconds: list[float] = field(default_factory=list)
    cores: list[float] = field(default_factory=list)
    max_reduction: float = 0.0

    def report(
        self,
        loss: object,
        core_seconds: object | None = None,
        wall_seconds: object | None = None,
        cores: object | None = None,
        at: float | None = None,
    ) -> None:
        """Append one iteration (``at``: when it was reported); raises :class:`InvalidReport` and
        changes nothing on bad input."""
        value = finite_number(loss, "loss")
        cost = None if core_seconds is None else finite_number(core_seconds, "core_seconds")
        wall = None if wall_seconds is None else finite_number(wall_seconds, "wall_seconds")
        ncores = None if cores is None else finite_number(cores, "cores")
        if cost is not None and cost < 0:
            raise InvalidReport(f"core_seconds must be >= 0, got {cost}")
        if wall is not None and wall < 0:
            raise InvalidReport(f"wall_seconds must be >= 0, got {wall}")
        if ncores is not None and ncores <= 0:
            raise InvalidReport(f"cores must be > 0, got {ncores}")
        if self.losses:
            self.max_reduction = max(self.max_reduction, self.losses[-1] - value)
        self.losses.append(value)
        if at is not None:
            self.times.append(float(at))
        if cost is not None:
            self.core_seconds.append(cost)
            if wall is not None:
                self.wall_seconds.append(wall)
                self.cores.append(ncores if ncores is not None else float("nan"))

    @property
    def iterations(self) -> int:
        """Number of loss reports so far."""
        return len(self.losses)

    def normalized_reductions(self) -> np.ndarray:
        return normalized_reductions(self.losses)

    def scale(self) -> float:
        """The normalizer of §4.1: the largest single-iteration reduction seen (1.0 before any)."""
        return self.max_reduction if self.max_reduction > 0 else 1.0
