"""`slaq bench predict`: loss-prediction error of the strawman and the weighted curve fit (Fig. 6/10a), and
before a spark.ml fit's first losses, of today's default (a new job's straight line, then the short-history
fallback) and of the prior (``slaq.predict.prior``) on recorded spark.ml fits (``sparkml_traces``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from slaq.predict.forecast import CurveCache, JobForecast, job_forecast
from slaq.predict.loss_curves import fit_loss_curve, strawman
from slaq.predict.prior import Reference, build_prior, fit_key, prior_forecast
from slaq.stats.history import JobHistory
from slaq.traces.trainers import Trace
from srlab.slaq_bench.sparkml_traces import SparkMlTrace

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


# -- before the first loss: the prior vs today's default, on real spark.ml fits ------------------------

OBSERVED = (0, 1, 3)  # own losses seen when the prediction is made
PRIOR_SOURCES = ("estimator default", "other candidates", "other folds")


def _references(held_out: int, traces: Sequence[SparkMlTrace], source: str) -> list[Reference]:
    """What the application knows when ``held_out`` starts, leave-one-out: every other fit finished.
    ``source`` limits it to nothing (the estimator default), the same estimator's other params, or all."""
    if source == "estimator default":
        return []
    me = traces[held_out]
    mine = fit_key(me.estimator, me.params)
    out = []
    for i, t in enumerate(traces):
        key = fit_key(t.estimator, t.params)
        if i == held_out or (source == "other candidates" and key == mine):
            continue
        out.append(Reference(key, tuple(t.losses[1:]), _cost(t), finished=True))
    return out


def _cost(trace: SparkMlTrace) -> float | None:
    return float(np.median(trace.iteration_s)) if trace.iteration_s else None


def _history(losses: Sequence[float]) -> JobHistory:
    h = JobHistory()
    for v in losses:
        h.report(v)
    return h


def cold_start_errors(trace: SparkMlTrace, fc: JobForecast, observed: int, clip: bool = False) -> list[float]:
    """Absolute error of ``fc`` at every iteration the fit has left, in % of the fit's own span (first
    captured loss to final). With nothing observed both sides are on the 1-to-0 scale. Predictions
    are read as the policy reads them (never above the latest loss); ``clip``: also never below the
    forecast's own floor, the kind reading of today's straight line, which the policy does not apply."""
    y = np.asarray(trace.losses[1:], dtype=float)  # what SLAQ captures: one loss per iteration after the initial point
    span = float(y[0] - y[-1])
    if span <= 0 or observed >= y.size:
        return []
    k = np.arange(max(observed, 1), y.size, dtype=float)
    predicted = np.minimum(fc.curve(k), fc.loss_now)
    if clip:
        predicted = np.maximum(predicted, fc.floor)
    truth = (y[k.astype(int)] - y[-1]) / span if observed == 0 else y[k.astype(int)]
    return list(np.abs(predicted - truth) / (1.0 if observed == 0 else span) * 100)


def cold_start_report(traces: Sequence[SparkMlTrace]) -> dict:
    """Loss-prediction error at 0, 1 and 3 observed iterations, today's default vs the prior by its
    source, per estimator; the prior's error in iterations and cost per iteration where it has one."""
    methods = ("today",) + PRIOR_SOURCES
    readings = ("policy", "clipped")
    errors: dict[tuple[str, str], dict[str, dict[int, list[float]]]] = {
        (m, r): defaultdict(lambda: {n: [] for n in OBSERVED}) for m in methods for r in readings}
    iteration_err: dict[str, list[float]] = {m: [] for m in PRIOR_SOURCES}
    cost_err: dict[str, list[float]] = {m: [] for m in ("today",) + PRIOR_SOURCES}
    for i, t in enumerate(traces):
        y = t.losses[1:]
        key = fit_key(t.estimator, t.params)
        cost = _cost(t)
        others = [c for j, o in enumerate(traces) if j != i and (c := _cost(o)) is not None]
        if cost is not None and others:
            cost_err["today"].append(abs(float(np.median(others)) - cost) / cost * 100)
        for n in OBSERVED:
            fc = job_forecast(t.estimator, _history(y[:n]), CurveCache())
            for r in readings:
                errors["today", r][t.estimator][n].extend(cold_start_errors(t, fc, n, r == "clipped"))
        for source in PRIOR_SOURCES:
            prior = build_prior(key, _references(i, traces, source))
            iteration_err[source].append(abs(prior.iterations - (len(y) - 1)))
            if cost is not None and prior.cost is not None:
                cost_err[source].append(abs(prior.cost - cost) / cost * 100)
            for n in OBSERVED:
                fc = prior_forecast(t.estimator, _history(y[:n]), prior)
                for r in readings:
                    errors[source, r][t.estimator][n].extend(cold_start_errors(t, fc, n, r == "clipped"))

    def mean(values: list[float]) -> float | None:
        return round(float(np.mean(values)), 1) if values else None

    report: dict = {"observed": list(OBSERVED), "fits": len(traces),
                    "estimators": dict(sorted(Counter(t.estimator for t in traces).items())), "methods": {}}
    for m in methods:
        pooled = {r: {n: [e for per in errors[m, r].values() for e in per[n]] for n in OBSERVED} for r in readings}
        report["methods"][m] = {
            "error_pct_of_span": {f"{n}_observed": mean(pooled["policy"][n]) for n in OBSERVED},
            "error_pct_of_span_floor_clipped": {f"{n}_observed": mean(pooled["clipped"][n]) for n in OBSERVED},
            "per_estimator": {est: {f"{n}_observed": mean(per[n]) for n in OBSERVED} for est, per in sorted(errors[m, "policy"].items())},
            "cost_per_iteration_error_pct": mean(cost_err[m]),
        }
        if m in iteration_err:
            report["methods"][m]["iterations_abs_error"] = mean(iteration_err[m])
    return report
