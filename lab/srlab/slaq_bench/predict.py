"""`slaq bench predict`: loss-prediction error of the strawman and the weighted curve fit (Fig. 6/10a)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from slaq.predict.loss_curves import fit_loss_curve, strawman
from slaq.traces.trainers import Trace

HORIZONS = (1, 5, 10)
MIN_HISTORY = 3  # losses known before the first prediction (the strawman needs two)
METHODS = {"strawman": strawman, "weighted-fit": fit_loss_curve}


def prediction_errors(trace: Trace, method: str, horizons: Sequence[int] = HORIZONS) -> dict[int, list[float]]:
    """Absolute percentage errors of predicting ``h`` iterations ahead from every prefix of the trace."""
    predict = METHODS[method]
    y = np.asarray(trace.losses)
    errors: dict[int, list[float]] = {h: [] for h in horizons}
    for n in range(MIN_HISTORY, len(y)):
        curve = predict(y[:n])
        for h in horizons:
            target = n - 1 + h
            if target < len(y):
                errors[h].append(abs(float(curve(float(target))) - y[target]) / abs(y[target]) * 100)
    return errors


def mape_report(traces: Sequence[Trace]) -> dict:
    """MAPE per method, family and horizon, plus the pooled overall figure per method."""
    report: dict = {"horizons": list(HORIZONS), "min_history": MIN_HISTORY, "methods": {}}
    for method in METHODS:
        by_family: dict[str, dict[int, list[float]]] = defaultdict(lambda: {h: [] for h in HORIZONS})
        for trace in traces:
            for h, errs in prediction_errors(trace, method).items():
                by_family[trace.family][h].extend(errs)
        families = {
            fam: {f"{h}_ahead": round(float(np.mean(e)), 3) if e else None for h, e in errs.items()}
            for fam, errs in sorted(by_family.items())
        }
        pooled = {h: [v for errs in by_family.values() for v in errs[h]] for h in HORIZONS}
        report["methods"][method] = {
            "overall": {f"{h}_ahead": round(float(np.mean(v)), 3) for h, v in pooled.items()},
            "families": families,
            "predictions": len(pooled[HORIZONS[0]]),
        }
    return report
