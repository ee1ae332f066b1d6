"""A CrossValidator fit with hopeless candidates pruned (``spark.slaq.prune``): pyspark's
``CrossValidator._fit`` with its folds scheduled fit by fit (:class:`slaq.prune_grid.FoldGrid`).

Same folds, same fits, same evaluation and the same refit of the best as pyspark's own; what differs
is which fits run and when. Each fit runs on a pool thread under a Spark job tag of its own, so a fit
whose candidate becomes hopeless while it runs is stopped by cancelling that tag's jobs: cancelling
is repeated every :data:`CANCEL_EVERY` seconds until the fit's thread returns, because a fit submits
a new job per iteration and a cancel reaches only the jobs running at that moment. A stopped fit's
failure is its candidate's pruning, nothing else; any other fit's failure fails the CrossValidator
as it does in pyspark (after the other running fits are cancelled).
"""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Sequence
from multiprocessing.pool import ThreadPool
from typing import Any

import numpy as np

from slaq.prune import OnPrune, Pruned
from slaq.prune_grid import Fit, FoldGrid
from slaq.pyspark_private import tuning_helpers

log = logging.getLogger("slaq.prune")

CANCEL_EVERY = 0.2  # seconds between two cancels of a stopped fit's jobs, and the longest a wait for a fit blocks


def cross_validate(cv: Any, dataset: Any, on_prune: OnPrune | None = None) -> Any:
    """``cv.fit(dataset)`` with hopeless candidates' fits not started, or stopped while they run."""
    from pyspark import inheritable_thread_target
    from pyspark.ml.tuning import CrossValidatorModel

    helpers = tuning_helpers()
    if isinstance(helpers, str):  # tuning.install checked this already; a direct caller gets the same sentence
        raise RuntimeError(f"cannot prune: {helpers}")
    est, epm, eva = cv.getOrDefault(cv.estimator), cv.getOrDefault(cv.estimatorParamMaps), cv.getOrDefault(cv.evaluator)
    n_folds = cv.getOrDefault(cv.numFolds)
    grid = FoldGrid(n_folds, len(epm), eva.isLargerBetter())
    collect = cv.getCollectSubModels()
    sub_models: list[list[Any]] | None = [[None] * len(epm) for _ in range(n_folds)] if collect else None
    sc = dataset.sparkSession.sparkContext
    datasets = helpers.k_fold(cv, dataset)
    cached: dict[int, tuple[Any, Any, contextlib.ExitStack]] = {}
    done: queue.Queue[tuple[Fit, Any, BaseException | None]] = queue.Queue()
    stopping: set[Fit] = set()

    def tag(fit: Fit) -> str:
        return f"slaq-prune-{cv.uid}-fold{fit[0]}-candidate{fit[1]}"

    def run(fit: Fit, task: Any) -> None:
        sc.addJobTag(tag(fit))
        try:
            done.put((fit, task(), None))
        except BaseException as e:  # noqa: BLE001 (handed to the loop, which re-raises what is not a stop)
            done.put((fit, None, e))
        finally:
            sc.removeJobTag(tag(fit))

    def start(fit: Fit) -> None:
        fold, j = fit
        if fold not in cached:
            stack = contextlib.ExitStack()
            train = stack.enter_context(helpers.cache_dataset(datasets[fold][0]))
            validation = stack.enter_context(helpers.cache_dataset(datasets[fold][1]))
            cached[fold] = (train, validation, stack)
        train, validation, _ = cached[fold]
        (task,) = helpers.parallel_fit_tasks(est, train, eva, validation, [epm[j]], collect)
        grid.start(fit)
        pool.apply_async(inheritable_thread_target(dataset.sparkSession)(run), (fit, task))

    def prune() -> None:
        stopped = grid.stop()
        if not stopped:
            return
        condemned = {p.candidate for p in stopped}
        running = {fit[1]: fit for fit in grid.running if fit[1] in condemned}
        stopping.update(running.values())
        _report(cv.uid, stopped, n_folds, epm, running)
        if on_prune is not None:
            on_prune(cv.uid, stopped)

    def next_done() -> tuple[Fit, Any, BaseException | None]:
        """The next fit to return; meanwhile the stopped fits' jobs are cancelled every CANCEL_EVERY seconds."""
        while True:
            for fit in stopping & grid.running:
                sc.cancelJobsWithTag(tag(fit))
            try:
                return done.get(timeout=CANCEL_EVERY)
            except queue.Empty:
                continue

    slots = min(cv.getParallelism(), len(epm))
    pool = ThreadPool(processes=slots)
    try:
        while not grid.done():
            prune()
            while len(grid.running) < slots and (fit := grid.next_fit()) is not None:
                start(fit)
            fit, result, error = next_done()
            stopped = fit in stopping
            stopping.discard(fit)
            if error is not None and not stopped:
                for other in grid.running - {fit}:
                    sc.cancelJobsWithTag(tag(other))
                raise error
            _, metric, model = result if error is None else (None, None, None)
            grid.finish(fit, None if stopped else metric)
            if sub_models is not None and not stopped and model is not None:
                sub_models[fit[0]][fit[1]] = model
            for fold in [f for f in cached if grid.fold_done(f)]:
                cached.pop(fold)[2].close()
    finally:
        pool.close()
        for _, _, stack in cached.values():
            stack.close()

    avg, std = grid.averages()
    best = int(np.argmax(avg) if grid.larger_better else np.argmin(avg))
    best_model = est.fit(dataset, epm[best])
    return cv._copyValues(CrossValidatorModel(best_model, avg, sub_models, std))


def _report(uid: str, stopped: list[Pruned], folds: int, epm: Sequence[Any], running: dict[int, Fit]) -> None:
    for p in stopped:
        params = ", ".join(f"{param.name}={value}" for param, value in epm[p.candidate].items())
        stop = (f"its running fold-{running[p.candidate][0]} fit is stopped and its remaining folds are not fitted"
                if p.candidate in running else "its remaining folds are not fitted")
        log.info("SLAQ: %s pruned candidate %d (%s) after %d of %d folds: mean metric %.6g, best candidate %d's %.6g; %s",
                 uid, p.candidate, params, p.after_folds, folds, p.mean, p.leader, p.leader_mean, stop)
