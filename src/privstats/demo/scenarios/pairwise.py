"""Scenarios: AUC, Kendall's tau, Gini and collision probability (pairwise statistics)."""

from __future__ import annotations

import numpy as np

from privstats.demo.config import INCOME_BOUNDS, ORDINAL_LEVELS
from privstats.demo.data import gini_mean_difference_exact
from privstats.demo.running import _call, _Context, _estimate_of, _float, _public
from privstats.estimate import TRUST_MODELS


def _scalar_reader(out):
    est = _estimate_of(out)
    if est is None:
        return _float(out), None
    return est.value, est.stderr


def _auc_scenario(ctx: _Context, data: str, statistic: str, label: str, note: str) -> None:
    """``privstats.auc`` of a scored, labelled data set under every trust model."""
    fn = _public("auc")
    from sklearn.metrics import roc_auc_score

    y, s = ctx.data(data)
    exact = float(roc_auc_score(y, s))

    def body(model, eps):
        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, y, s, epsilon=eps, model=model, bounds=(0.0, 1.0), rng=seed),
            _scalar_reader,
            exact,
            note=note.format(n=y.size),
        )

    ctx.each_model(
        statistic, TRUST_MODELS, body, plan={"n": y.size, "n_pos": int(y.sum()), "bounds": (0.0, 1.0)}
    )


def scenario_auc(ctx: _Context) -> None:
    """``privstats.auc`` of a logistic-regression score on breast cancer (569 patients)."""
    _auc_scenario(ctx, "breast_cancer", "auc", "AUC", "breast cancer, n=569")


def _roc_parts(out):
    if isinstance(out, tuple):
        fpr, tpr = out[0], out[1]
    else:
        fpr, tpr = out.fpr, out.tpr
    fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    order = np.lexsort((tpr, fpr))
    return fpr[order], tpr[order]


def scenario_auc_scale(ctx: _Context) -> None:
    """``privstats.auc`` of a calibrated synthetic score for many users (where the local model pays off)."""
    _auc_scenario(
        ctx, "scores", "auc (synthetic)", "AUC (synthetic scores)", "calibrated Beta(2,5) scores, n={n}"
    )


def scenario_kendall(ctx: _Context) -> None:
    """``privstats.kendall_tau`` (tau-b) of an ordinal 6×6 pair."""
    fn = _public("kendall_tau")
    from scipy import stats

    a, b = ctx.data("ordinal")
    exact = float(stats.kendalltau(a, b).statistic)
    bounds = (0.0, float(ORDINAL_LEVELS))  # ratings 0..5, one bin per rating

    def body(model, eps):
        ctx.measure(
            "Kendall's tau-b",
            model,
            eps,
            lambda seed: _call(
                fn, a, b, epsilon=eps, model=model, bounds=bounds, bins=ORDINAL_LEVELS, rng=seed
            ),
            _scalar_reader,
            exact,
            note=f"ordinal {ORDINAL_LEVELS}x{ORDINAL_LEVELS}",
        )

    ctx.each_model("kendall_tau", TRUST_MODELS, body, plan={"n": a.size, "bounds": bounds})


def _incomes_scalar(ctx: _Context, statistic: str, label: str, exact_of) -> None:
    """One scalar statistic of the incomes (public bounds) under every trust model."""
    fn = _public(statistic)
    x = ctx.data("incomes")
    exact = exact_of(x)

    def body(model, eps):
        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, x, epsilon=eps, model=model, bounds=INCOME_BOUNDS, rng=seed),
            _scalar_reader,
            exact,
            note="incomes",
        )

    ctx.each_model(statistic, TRUST_MODELS, body, plan={"n": x.size, "bounds": INCOME_BOUNDS})


def scenario_gini(ctx: _Context) -> None:
    """``privstats.gini_mean_difference`` of incomes."""
    _incomes_scalar(ctx, "gini_mean_difference", "Gini mean difference", gini_mean_difference_exact)


def gini_coefficient_exact(x) -> float:
    """Σ_{i,j}|x_i − x_j| / (2 n² mean) = GMD·(n − 1)/(2n·mean)."""
    x = np.asarray(x, dtype=float)
    return gini_mean_difference_exact(x) * (x.size - 1) / (2 * x.size * x.mean())


def scenario_gini_coefficient(ctx: _Context) -> None:
    """``privstats.gini_coefficient`` of incomes (part of ε pays for the mean)."""
    _incomes_scalar(ctx, "gini_coefficient", "Gini coefficient", gini_coefficient_exact)


def collision_probability_exact(values, d: int) -> float:
    """Σ_{i<j} I[x_i = x_j] / C(n, 2) from the histogram."""
    c = np.bincount(values, minlength=d).astype(float)
    n = c.sum()
    return float(np.sum(c * (c - 1)) / (n * (n - 1)))


def scenario_collision(ctx: _Context) -> None:
    """``privstats.collision_probability`` (Rényi-2) of the Zipf sample."""
    fn = _public("collision_probability")
    values = ctx.data("zipf")
    d = ctx.cfg.domain
    exact = collision_probability_exact(values, d)

    def body(model, eps):
        ctx.measure(
            "collision probability",
            model,
            eps,
            lambda seed: _call(fn, values, epsilon=eps, model=model, domain_size=d, rng=seed),
            _scalar_reader,
            exact,
            note=f"Zipf, d={d}",
        )

    ctx.each_model("collision_probability", TRUST_MODELS, body, plan={"n": values.size, "domain_size": d})
