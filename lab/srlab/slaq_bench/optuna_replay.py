"""``slaq bench optuna --offline``: the pruners of ``slaq bench optuna`` judged without a clock.

Each seed's study (:mod:`srlab.slaq_bench.optuna_prune`'s points, data and objective, unchanged) runs
once with no pruner on real Spark, and every trial's value after every step is recorded
(:func:`record`). Then the study is replayed offline for each pruner (:func:`replay_study`): a real
Optuna study in memory, with the pruner under test, driven by ``ask``/``tell``/``trial.report`` with the
recorded values, ``n_jobs`` trials at once on a simulated clock where step ``s`` of a trial costs
``overhead + growth·(s + 1)`` units: by default ``s + 1``, the bench's refit with ``iterations·(s+1)``
L-BFGS iterations if every iteration ran; ``overhead`` is the per-fit cost that does not grow with them
(Spark jobs, the evaluation). ``overhead=1, growth=0`` is the other extreme, every step costing the
same: what the bench's small fits measure when L-BFGS converges within the first steps' iterations. As in the bench, a trial checks
``should_prune()`` after every report, its last included, and a thread that frees (a trial completed or
pruned) starts the next enqueued trial at once. Events at the same time are handled in trial order.

Replayed: the bench's ``slaq`` (:class:`slaq.optuna.Pruner`), ``median`` (``MedianPruner()``) and ``none``,
and a ``clairvoyant`` reference (:func:`clairvoyant`): the floor no pruner judging by completed trials can
go under, given that the first ``n_jobs`` trials start before any trial completed.

Measured per study and pruner: the time (units) until the best trial completed, the best value and the
trials pruned; the same value as the exhaustive replay (no pruner) is exact equality, since every
replay reads the same recorded numbers. Nothing is timed, so the result does not depend on the load of
the machine that computes it: only the recording does (its per-step seconds are kept for reference).
"""

from __future__ import annotations

import heapq
import json
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from srlab.slaq_bench.configs import session_conf, stock_pool
from srlab.slaq_bench.mllib_workload import DataSpec, make_data
from srlab.slaq_bench.optuna_prune import MEDIAN, NONE, SLAQ, OptunaWorkload, objective_for, points, pruner_of
from srsupport.session import DEFAULT_MASTER, spark_session

log = logging.getLogger("srlab.slaq_bench.optuna_replay")

CLAIRVOYANT = "clairvoyant"
REPLAYED = (SLAQ, MEDIAN, NONE, CLAIRVOYANT)


def clairvoyant(values: list[list[float]]) -> Any:
    """A reference, not a pruner one could run: it knows the exhaustive best (the lowest final value, the first of
    equals) and prunes every other trial at its first report once a trial completed (as early as any pruner
    that judges by completed trials could). Its time to the best is what no such pruner can beat."""
    import optuna
    from optuna.trial import TrialState

    best = min(range(len(values)), key=lambda i: values[i][-1])

    class Clairvoyant(optuna.pruners.BasePruner):
        def prune(self, study: Any, trial: Any) -> bool:
            return trial.number != best and bool(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    return Clairvoyant()


def bench_pruner(name: str) -> Callable[[list[list[float]]], Any]:
    """The bench's pruner of configuration ``name``, as a replay's factory (it needs no recorded values)."""
    return lambda _values: pruner_of(name)


class _Recorder:
    """The trial the bench's objective sees, recording when each report came (the rest is the trial's own)."""

    def __init__(self, trial: Any, began: float, into: dict[int, list[float]]):
        self._trial, self._began, self._into = trial, began, into

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trial, name)

    def report(self, value: float, step: int) -> None:
        self._into.setdefault(self._trial.number, []).append(time.monotonic() - self._began)
        self._trial.report(value, step)


def record_study(train: Any, valid: Any, seed: int, work: OptunaWorkload, pool: Callable[[int], Any] | None) -> dict[str, Any]:
    """One seed's study with no pruner: every trial's parameters, its value after each step and when (seconds from the study's start)."""
    import optuna

    study = optuna.create_study(direction="minimize", pruner=optuna.pruners.NopPruner(), sampler=optuna.samplers.RandomSampler(seed))
    for point in points(seed, work.trials):
        study.enqueue_trial(point)
    reported: dict[int, list[float]] = {}
    objective = objective_for(train, valid, work, pool)
    began = time.monotonic()
    study.optimize(lambda t: objective(_Recorder(t, began, reported)), n_trials=work.trials, n_jobs=work.n_jobs)
    trials = [{"number": t.number, "params": t.params, "values": [t.intermediate_values[s] for s in range(work.steps)],
               "reported_s": [round(x, 3) for x in reported[t.number]]} for t in sorted(study.trials, key=lambda t: t.number)]
    return {"seed": seed, "seconds": round(time.monotonic() - began, 2), "trials": trials}


def record(work: OptunaWorkload, master: str = DEFAULT_MASTER) -> dict[str, Any]:
    """Every seed's study once with no pruner on real Spark (stock FAIR, one pool per trial, as the bench's ``none``)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = []
    with spark_session("slaq-bench-optuna-record", master, session_conf("stock", 1.0)) as spark:
        sc = spark.sparkContext
        for seed in work.seeds:
            data = make_data(spark, DataSpec(work.rows, work.features, work.partitions, seed))
            train, valid = (d.cache() for d in data.randomSplit([0.8, 0.2], seed=seed))
            train.count(), valid.count()
            studies.append(record_study(train, valid, seed, work, lambda n: stock_pool(sc, n)))
            log.info("seed %d recorded in %.1f s", seed, studies[-1]["seconds"])
            for d in (train, valid, data):
                d.unpersist()
    return {"workload": asdict(work) | {"master": master}, "studies": studies}


def replay_study(values: list[list[float]], pruner: Any, n_jobs: int, overhead: float = 0.0, growth: float = 1.0) -> dict[str, Any]:
    """The study replayed with ``pruner`` (see the module docstring): trial ``i`` reports ``values[i][s]`` at
    step ``s`` (its parameters are not asked for: no pruner reads them). When its best trial completed (units), the best value and trial, the trials
    pruned and when the last trial ended."""
    import optuna
    from optuna.trial import TrialState

    study = optuna.create_study(direction="minimize", pruner=pruner, sampler=optuna.samplers.RandomSampler(0))
    events: list[tuple[float, int, int]] = []  # (when a step's report comes, trial number, step)
    running: dict[int, Any] = {}
    completed: dict[int, float] = {}
    pruned_at: dict[int, int] = {}

    def cost(step: int) -> float:
        return overhead + growth * (step + 1)

    def start(now: float) -> None:
        if len(study.trials) < len(values):
            trial = study.ask()
            running[trial.number] = trial
            heapq.heappush(events, (now + cost(0), trial.number, 0))

    for _ in range(n_jobs):
        start(0.0)
    end = 0.0
    while events:
        now, number, step = heapq.heappop(events)
        trial, value = running[number], values[number][step]
        trial.report(value, step)
        if trial.should_prune():
            study.tell(trial, state=TrialState.PRUNED)
            pruned_at[number] = step
        elif step == len(values[number]) - 1:
            study.tell(trial, value)
            completed[number] = now
        else:
            heapq.heappush(events, (now + cost(step + 1), number, step + 1))
            continue
        end = now
        del running[number]
        start(now)
    best = study.best_trial
    return {"to_best": completed[best.number], "end": end, "best_trial": best.number, "best_value": study.best_value,
            "pruned": len(pruned_at), "pruned_at": pruned_at}


def replay(recording: dict[str, Any], pruners: dict[str, Callable[[list[list[float]]], Any]], steps: int | None = None,
           n_jobs: int | None = None, overhead: float = 0.0, growth: float = 1.0) -> dict[str, Any]:
    """Every recorded study replayed with every pruner (name -> a fresh pruner, given the study's values); ``steps`` (at most the recorded
    ones) truncates the trials, as a run with fewer steps would have reported the same values up to there."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    work = recording["workload"]
    steps = steps or work["steps"]
    n_jobs = n_jobs or work["n_jobs"]
    if not 1 <= steps <= work["steps"]:
        raise ValueError(f"steps must be in [1, {work['steps']}] (what was recorded), got {steps}")
    rows = []
    for study in recording["studies"]:
        values = [t["values"][:steps] for t in study["trials"]]
        row: dict[str, Any] = {"seed": study["seed"]}
        for name, make in pruners.items():
            row[name] = replay_study(values, make(values), n_jobs, overhead, growth)
        rows.append(row)
    return {"steps": steps, "n_jobs": n_jobs, "overhead": overhead, "growth": growth, "studies": rows, "summary": summarize(rows, list(pruners))}


def summarize(rows: list[dict[str, Any]], names: list[str], reference: str = NONE, baseline: str = MEDIAN) -> dict[str, Any]:
    """Per pruner: the median time to the best, the seeds whose best equals ``reference``'s (the exhaustive
    study's), and against ``baseline`` each seed's ratio of times to the best and their median. Pure."""
    out: dict[str, Any] = {}
    for name in names:
        ratios = [r[name]["to_best"] / r[baseline]["to_best"] for r in rows] if baseline in names else []
        out[name] = {"median_to_best": statistics.median(r[name]["to_best"] for r in rows),
                     "same_best": sum(r[name]["best_value"] == r[reference]["best_value"] for r in rows) if reference in names else None,
                     "pruned": sum(r[name]["pruned"] for r in rows),
                     "ratio_to_" + baseline: [round(x, 3) for x in ratios],
                     "median_ratio": round(statistics.median(ratios), 3) if ratios else None}
    out["studies"] = len(rows)
    return out


def table(result: dict[str, Any], names: list[str]) -> list[str]:
    """The replay as a Markdown table: per seed the time to the best (units), the trials pruned and whether the best is the exhaustive one's."""
    others = "/".join(n for n in names if n != NONE)
    head = "| seed | " + " | ".join(f"{n}: to best (pruned)" for n in names) + f" | same best as {NONE} ({others}) | " + \
        " | ".join(f"{n}/{MEDIAN}" for n in names if n != MEDIAN) + " |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in result["studies"]:
        same = "/".join("yes" if r[n]["best_value"] == r[NONE]["best_value"] else "NO" for n in names if n != NONE) if NONE in names else "-"
        cells = [f"{r[n]['to_best']:g} ({r[n]['pruned']})" for n in names]
        ratios = [f"{r[n]['to_best'] / r[MEDIAN]['to_best']:.2f}" for n in names if n != MEDIAN] if MEDIAN in names else []
        lines.append(f"| {r['seed']} | " + " | ".join(cells) + f" | {same} | " + " | ".join(ratios) + " |")
    s = result["summary"]
    cells = [f"{s[n]['median_to_best']:g} ({s[n]['pruned']})" for n in names]
    same_all = "/".join(f"{s[n]['same_best']}" for n in names if n != NONE) if NONE in names else "-"
    ratios = [f"{s[n]['median_ratio']:.2f}" for n in names if n != MEDIAN] if MEDIAN in names else []
    lines.append("| median (pruned: total) | " + " | ".join(cells) + f" | {same_all} of {s['studies']} | " + " | ".join(ratios) + " |")
    return lines


def bench_offline(work: OptunaWorkload, master: str = DEFAULT_MASTER, recording: Path | None = None, overhead: float = 0.0,
                  growth: float = 1.0) -> dict[str, Any]:
    """Record (or read ``recording``, when it exists; written there otherwise) and replay with the bench's pruners."""
    if recording is not None and recording.exists():
        recorded = json.loads(recording.read_text())
        same = ("trials", "iterations", "rows", "features", "partitions")
        if any(recorded["workload"][k] != getattr(work, k) for k in same) or recorded["workload"]["steps"] < work.steps:
            raise ValueError(f"{recording} recorded another workload: {recorded['workload']}; this one has "
                             + ", ".join(f"{k}={getattr(work, k)}" for k in (*same, "steps")))
        have = {s["seed"] for s in recorded["studies"]}
        if missing := [s for s in work.seeds if s not in have]:
            raise ValueError(f"{recording} has no study of seed(s) {missing}")
        recorded["studies"] = [s for s in recorded["studies"] if s["seed"] in work.seeds]
    else:
        recorded = record(work, master)
        if recording is not None:
            recording.write_text(json.dumps(recorded))
    pruners = {name: clairvoyant if name == CLAIRVOYANT else bench_pruner(name) for name in REPLAYED}
    result = replay(recorded, pruners, work.steps, work.n_jobs, overhead, growth)
    lines = table(result, list(REPLAYED))
    log.info("replayed %d studies, step s costing %g + %g·(s + 1) units, %d trials at once; time to the best in units:\n%s",
             len(result["studies"]), overhead, growth, work.n_jobs, "\n".join(lines))
    return {"workload": recorded["workload"], "replay": result, "table": lines}
