"""Real spark.ml loss histories for ``slaq bench predict``'s before-the-first-loss comparison.

Every grid entry of the ``slaq bench mllib`` sweep (``mllib_workload.GRIDS``) is fitted on several
folds of one seeded data set, one fit at a time on local Spark: what a CrossValidator runs. Per fit
the fitted model's ``objectiveHistory`` gives the losses and breeze's per-iteration log line
(``fit_timing.IterationClock``) when each iteration ended. The recorded copy ships as a small JSON
fixture (``data/sparkml_traces.json``) so the comparison is reproducible without Spark:

    python -m srlab.slaq_bench.sparkml_traces   # re-records it (starts local Spark)
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from srlab.slaq_bench.mllib_workload import FAMILIES, GRIDS, DataSpec, make_data, make_estimator, param_map

TRACE_FILE = Path(__file__).parent / "data" / "sparkml_traces.json"
FOLDS = 3
DATA = DataSpec(rows=30_000, features=20, partitions=4, seed=7)
MAX_ITER = 60


@dataclass(frozen=True)
class SparkMlTrace:
    estimator: str  # the pyspark.ml class name
    params: dict[str, Any]  # the fit's explicitly set hyperparameters (as the spark.ml hook sees them)
    family: str  # the mllib sweep family the grid entry belongs to
    fold: int
    losses: list[float]  # objectiveHistory: the initial point first
    iteration_s: list[float]  # wall seconds of each iteration after the first (len(losses) - 2 entries)
    time_to_first_loss_s: float  # from the fit's start to the end of its first iteration


def record(master: str = "local[2]") -> list[SparkMlTrace]:
    """Fit every grid entry on :data:`FOLDS` folds, sequentially (timings without contention)."""
    from slaq.sparkml import hyperparameters
    from srlab.slaq_bench.fit_timing import IterationClock, restore_tag, tag_thread
    from srlab.slaq_bench.mllib import objective_history
    from srsupport.session import spark_session

    out: list[SparkMlTrace] = []
    with spark_session("slaq-sparkml-traces", master) as spark:
        sc = spark.sparkContext
        data = make_data(spark, DATA)
        folds = data.randomSplit([1.0] * FOLDS, seed=DATA.seed)
        clock = IterationClock(sc)
        try:
            for family in FAMILIES:
                for index in range(len(GRIDS[family])):
                    for fold in range(FOLDS):
                        train = folds[(fold + 1) % FOLDS].union(folds[(fold + 2) % FOLDS])
                        est = make_estimator(family, DATA.features, MAX_ITER, DATA.seed)
                        params = param_map(est, family, index, DATA.features)
                        name = f"{family}-{index}-{fold}"
                        previous = tag_thread(sc, name)
                        began = time.time()
                        try:
                            model = est.fit(train, params)
                        finally:
                            restore_tag(sc, previous)
                        ends = clock.iteration_times().get(name, [])
                        shown = {k: v for k, v in hyperparameters(est.copy(params)).items()}
                        out.append(SparkMlTrace(type(est).__name__, {k: _plain(v) for k, v in shown.items()}, family, fold,
                                                objective_history(model), [round(b - a, 4) for a, b in zip(ends, ends[1:])],
                                                round(ends[0] - began, 3) if ends else float("nan")))
        finally:
            clock.close()
    return out


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def save(traces: list[SparkMlTrace], path: Path = TRACE_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(t) for t in traces], separators=(",", ":")) + "\n", encoding="utf-8")


def load(path: Path = TRACE_FILE) -> list[SparkMlTrace]:
    return [SparkMlTrace(**row) for row in json.loads(path.read_text(encoding="utf-8"))]


if __name__ == "__main__":
    recorded = record()
    save(recorded)
    print(f"{len(recorded)} fits -> {TRACE_FILE} ({TRACE_FILE.stat().st_size} bytes)")
