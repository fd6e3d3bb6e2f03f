"""Scenarios: ECDF, quantiles (incomes), ROC and Hosmer-Lemeshow (scores)."""

from __future__ import annotations

import numpy as np

from privstats.demo.config import (
    INCOME_BOUNDS,
    INCOME_THRESHOLD,
    QUANTILE_LEVELS,
    SHUFFLE_DELTA,
    SHUFFLE_QUANTILE_USERS,
)
from privstats.demo.running import _call, _Context, _estimate_of, _headline, _public, _Unsupported
from privstats.demo.scenarios.pairwise import _roc_parts, _scalar_reader
from privstats.estimate import TRUST_MODELS


def _ecdf_arrays(res, grid: np.ndarray):
    """(values, lo, hi) of a private ECDF result on ``grid``; the band may be None."""
    F = np.asarray(res.evaluate(grid), dtype=float)
    lo = hi = None
    ci = getattr(res, "confidence_interval", None)
    if callable(ci):
        try:
            band = ci(0.95)
        except TypeError:
            band = ci(confidence_level=0.95)
        low, high = (band.low, band.high) if hasattr(band, "low") else band
        lo = np.asarray(low.evaluate(grid) if hasattr(low, "evaluate") else low, dtype=float)
        hi = np.asarray(high.evaluate(grid) if hasattr(high, "evaluate") else high, dtype=float)
        if lo.shape != grid.shape:  # band given on the mechanism's own grid
            lo = hi = None
    return F, lo, hi


def scenario_ecdf(ctx: _Context) -> None:
    """``privstats.ecdf`` of incomes: F at a public threshold; the curves go to the ECDF figure."""
    fn = _public("ecdf")
    from scipy import stats

    x = ctx.data("incomes")
    # the mechanism's own grid (1024 points, the ecdf default): between grid points a private ECDF is a
    # step function, so comparing off-grid would add discretisation error that the band does not cover
    grid = np.linspace(*INCOME_BOUNDS, 1025)[1:]
    exact_curve = stats.ecdf(x).cdf.evaluate(grid)
    t = INCOME_THRESHOLD
    exact = float(stats.ecdf(x).cdf.evaluate(t))
    curves = ctx.result.curves.setdefault(
        "ecdf", {"grid": grid, "exact": exact_curve, "private": {}, "bands": {}}
    )

    def read(res):
        value = float(np.asarray(res.evaluate(np.array([t])), dtype=float)[0])
        _F, lo, hi = _ecdf_arrays(res, np.array([t]))
        se = None if lo is None else float((hi[0] - lo[0]) / (2 * 1.959964))
        est = _estimate_of(res)
        if se is None and est is not None and est.stderr is not None and np.ndim(est.stderr) == 0:
            se = float(est.stderr)
        return value, se

    def sup_err(res):
        F = np.asarray(res.evaluate(grid), dtype=float)
        return {
            "sup_abs_error": float(np.max(np.abs(F - exact_curve))),
            "note": f"sup |error| over the grid {np.max(np.abs(F - exact_curve)):.3g}",
        }

    def body(model, eps):
        kw = dict(epsilon=eps, bounds=INCOME_BOUNDS, model=model)
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
        res = ctx.measure(
            f"ECDF F({t:g})",
            model,
            eps,
            lambda seed: _call(fn, x, rng=seed, **kw),
            read,
            exact,
            extra=sup_err,
        )
        if res is not None and eps == _headline(ctx):
            F, lo, hi = _ecdf_arrays(res, grid)
            curves["private"][model] = F
            if lo is not None:
                curves["bands"][model] = (lo, hi)

    ctx.each_model("ecdf", TRUST_MODELS, body, plan={"n": x.size, "bounds": INCOME_BOUNDS})


def scenario_quantiles(ctx: _Context) -> None:
    """``privstats.quantiles`` of incomes: the quartiles for one budget; the row shows the median."""
    fn = _public("quantiles")
    x = ctx.data("incomes")
    exact = np.quantile(x, QUANTILE_LEVELS, method="inverted_cdf")
    mid = QUANTILE_LEVELS.index(0.5)

    def read(out):
        est = _estimate_of(out)
        value = np.asarray(est.value if est is not None else out, dtype=float).ravel()
        se = None
        if est is not None and est.stderr is not None:
            se = np.asarray(est.stderr, dtype=float).ravel()[mid]
        return value[mid], se

    def body(model, eps):
        kw = dict(epsilon=eps, bounds=INCOME_BOUNDS, model=model)
        data, label, truth, note = x, "median", exact, ""
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
            if x.size > SHUFFLE_QUANTILE_USERS:
                data = x[:SHUFFLE_QUANTILE_USERS]
                truth = np.quantile(data, QUANTILE_LEVELS, method="inverted_cdf")
                label, note = f"median, first {data.size} users", f"n = {data.size} of {x.size} users"
                ctx.caveat(
                    f"the shuffle-model quantile row runs on the first {data.size} of {x.size} users "
                    "(its range-count protocol is costly to simulate); its exact value is computed on "
                    "the same users"
                )

        def all_err(out):
            est = _estimate_of(out)
            value = np.asarray(est.value if est is not None else out, dtype=float).ravel()
            err = np.abs(value - truth)
            return {
                "quartile_abs_errors": err.tolist(),
                "note": "; ".join(
                    filter(None, [note, "quartile |errors| " + ", ".join(f"{e:.3g}" for e in err)])
                ),
            }

        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, data, list(QUANTILE_LEVELS), rng=seed, **kw),
            read,
            float(truth[mid]),
            extra=all_err,
        )

    ctx.each_model(
        "quantiles",
        TRUST_MODELS,
        body,
        plan={"n": x.size, "bounds": INCOME_BOUNDS, "q": list(QUANTILE_LEVELS)},
    )


def hosmer_lemeshow_exact(y, p, groups: int = 10) -> float:
    """Non-private Hosmer–Lemeshow H over groups (t_{q-1}, t_q] cut at the exact q/groups quantiles of p."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    cuts = np.quantile(p, np.arange(1, groups) / groups, method="inverted_cdf")
    g = np.searchsorted(cuts, p, side="left")
    e1, e0 = np.bincount(g, p, groups), np.bincount(g, 1 - p, groups)
    o1, o0 = np.bincount(g, y, groups), np.bincount(g, 1 - y, groups)
    return float(np.sum((o1 - e1) ** 2 / e1 + (o0 - e0) ** 2 / e0))


def scenario_hosmer_lemeshow(ctx: _Context) -> None:
    """``privstats.hosmer_lemeshow`` calibration statistic of the calibrated synthetic score."""
    fn = _public("hosmer_lemeshow")
    y, p = ctx.data("scores")
    exact = hosmer_lemeshow_exact(y, p)

    def body(model, eps):
        if model != "central":
            raise _Unsupported("hosmer_lemeshow takes no model argument (central only)")
        ctx.measure(
            "Hosmer–Lemeshow H",
            model,
            eps,
            lambda seed: _call(fn, y, p, epsilon=eps, rng=seed),
            _scalar_reader,
            exact,
            extra=lambda est: {"note": f"10 groups; private p-value {est.details['p_value']:.3g}"},
        )

    ctx.each_model("hosmer_lemeshow", ["central"], body, plan={"n": y.size})


def scenario_roc(ctx: _Context) -> None:
    """``privstats.roc_curve`` on breast cancer: the area under the private curve vs the exact AUC."""
    fn = _public("roc_curve")
    from sklearn.metrics import roc_auc_score, roc_curve

    y, s = ctx.data("breast_cancer")
    exact = float(roc_auc_score(y, s))
    fpr0, tpr0, _ = roc_curve(y, s)
    curves = ctx.result.curves.setdefault("roc", {"exact": (fpr0, tpr0), "private": {}})

    def read(out):
        fpr, tpr = _roc_parts(out)
        est = _estimate_of(out)  # the curve's AUC estimate carries the stderr of the area
        return float(np.trapezoid(tpr, fpr)), (None if est is None else est.stderr)

    def body(model, eps):
        out = ctx.measure(
            "ROC curve AUC",
            model,
            eps,
            lambda seed: _call(fn, y, s, epsilon=eps, model=model, bounds=(0.0, 1.0), rng=seed),
            read,
            exact,
            note="area under the private curve; breast cancer",
        )
        if out is not None and eps == _headline(ctx):
            curves["private"][model] = _roc_parts(out)

    ctx.each_model(
        "roc_curve", TRUST_MODELS, body, plan={"n": y.size, "n_pos": int(y.sum()), "bounds": (0.0, 1.0)}
    )
