"""The state of one pruned CrossValidator's fits, and what to do next with it (pure).

A fit is one (fold, candidate) pair. Instead of pyspark's barrier between folds (every candidate's
fold ``f`` ends before any fold ``f + 1`` starts), a slot that frees starts the next fit in fold
order as soon as its candidate's previous fold is scored, so the pool's slots do not idle while the
slowest fit of a fold finishes. Every decision uses the evidence there is at that moment:

* a candidate is judged by :func:`slaq.prune.hopeless` against its *peers*, the candidates still
  alive that finished at least as many folds as it did, over those folds (paired, as between folds;
  with the barrier the peers are every alive candidate, so the rule is the same);
* a hopeless candidate's next fit is not started, and a fit of it already running is stopped
  (:meth:`FoldGrid.stop`): the evidence that condemns it came in while it ran;
* a candidate's fit of fold ``f >= 1`` starts only once another alive candidate scored ``f`` folds
  too (it has been compared with someone), and only while no fit of fold ``f - 2`` or earlier runs,
  so at most two folds' datasets are cached at once.

A candidate's first fit is never judged (no evidence of its own), and the best candidate among
its peers is never pruned, so the chosen model is always one that ran every fold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from slaq.prune import Pruned, hopeless, worst

Fit = tuple[int, int]  # (fold, candidate)


@dataclass
class FoldGrid:
    """``folds`` x ``candidates`` fits: their metrics once scored, which run, which candidates are pruned."""

    folds: int
    candidates: int
    larger_better: bool
    metrics: dict[Fit, float] = field(default_factory=dict)
    running: set[Fit] = field(default_factory=set)
    pruned: dict[int, Pruned] = field(default_factory=dict)

    def scored(self, j: int) -> int:
        """How many folds candidate ``j`` has finished, from fold 0 on."""
        n = 0
        while (n, j) in self.metrics:
            n += 1
        return n

    def alive(self) -> list[int]:
        return [j for j in range(self.candidates) if j not in self.pruned]

    def verdict(self, j: int) -> Pruned | None:
        """Whether alive candidate ``j`` is hopeless against its peers, on the evidence there is now."""
        n = self.scored(j)
        if j in self.pruned or n == 0 or n >= self.folds:
            return None
        peers = [k for k in self.alive() if self.scored(k) >= n]
        table = [[self.metrics.get((f, k), math.nan) for k in range(self.candidates)] for f in range(n)]
        return next((p for p in hopeless(table, peers, self.folds, self.larger_better) if p.candidate == j), None)

    def stop(self) -> list[Pruned]:
        """Prune every alive candidate that is hopeless now (its running fit, if any, is to be stopped)."""
        out = [p for j in self.alive() if (p := self.verdict(j)) is not None]
        self.pruned.update((p.candidate, p) for p in out)
        return out

    def next_fit(self) -> Fit | None:
        """The fit to start in a free slot, among alive candidates not running whose previous folds are
        scored: the lowest fold, then the candidate standing best over its scored folds (a fold started
        early is most likely not wasted on it), then the lowest index; None when none may start now."""
        oldest = min((f for f, _ in self.running), default=self.folds)
        busy = {j for _, j in self.running}
        alive = self.alive()
        ready = [(f, -self._standing(j), j) for j in alive
                 if j not in busy and (f := self.scored(j)) < self.folds and f <= oldest + 1 and self._judged(j, f, alive)]
        if not ready:
            return None
        f, _, j = min(ready)
        return f, j

    def _judged(self, j: int, fold: int, alive: list[int]) -> bool:
        """Whether candidate ``j`` has been compared with another before its fit of ``fold``: some other
        alive candidate scored as many folds (or none is left to compare with)."""
        return fold == 0 or alive == [j] or any(k != j and self.scored(k) >= fold for k in alive)

    def _standing(self, j: int) -> float:
        """Candidate ``j``'s mean metric over its scored folds, oriented larger-is-better (0 before any)."""
        n = self.scored(j)
        return (1.0 if self.larger_better else -1.0) * sum(self.metrics[(f, j)] for f in range(n)) / n if n else 0.0

    def start(self, fit: Fit) -> None:
        self.running.add(fit)

    def finish(self, fit: Fit, metric: float | None) -> None:
        """``fit`` returned: its metric, or None when it was stopped (or scored after its candidate was pruned)."""
        self.running.discard(fit)
        if metric is not None and fit[1] not in self.pruned:
            self.metrics[fit] = metric

    def fold_done(self, fold: int) -> bool:
        """No fit of ``fold`` runs or will start: its cached datasets can be released."""
        return not any(f == fold for f, _ in self.running) and all(self.scored(j) > fold for j in self.alive())

    def done(self) -> bool:
        return not self.running and all(self.scored(j) >= self.folds for j in self.alive())

    def averages(self) -> tuple[list[float], list[float]]:
        """Each candidate's mean and standard deviation over its folds (``avgMetrics``, ``stdMetrics``);
        a pruned one's mean is the worst value there is and its deviation NaN."""
        values = {j: [self.metrics[(f, j)] for f in range(self.folds)] for j in self.alive()}
        avg = [float(np.mean(values[j])) if j in values else worst(self.larger_better) for j in range(self.candidates)]
        std = [float(np.std(values[j])) if j in values else math.nan for j in range(self.candidates)]
        return avg, std
