"""Shared measurement code: the planner's predicted stderr against the measured RMSE, and CI coverage.

Each case draws public-size data once, computes the exact (non-private) statistic, runs the
private statistic over many seeds and measures the RMSE of the *unbiased* value
(``details["unbiased"]``; the range-clipped value is post-processing) around the exact one.
Data are chosen where the planner's public assumptions hold (uniform scores, independent
pairs), since predictions use public parameters only.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import privstats


def coverage_real_experiment() -> ModuleType:
    """``experiments/coverage_real.py`` loaded as a module (skips outside a source checkout or without
    the real data sets' packages)."""
    return real_data_experiment("coverage_real")


def real_data_experiment(name: str) -> ModuleType:
    """``experiments/NAME.py`` (one of the real-data experiments) loaded as a module; skips as
    :func:`coverage_real_experiment`."""
    path = Path(__file__).resolve().parents[2] / "experiments" / f"{name}.py"
    if not path.is_file():
        pytest.skip("not a source checkout")
    pytest.importorskip("sklearn")
    pytest.importorskip("statsmodels")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Case:
    statistic: str
    model: str
    n: int
    epsilon: float
    run: Callable[[int], privstats.Estimate]  # seed -> Estimate
    exact: float | np.ndarray
    predicted: float
    pick: Callable[[privstats.Estimate], np.ndarray] | None = None  # value compared (default: unbiased)
    entries: slice | None = None  # entries whose intervals are checked (default: all)
    full_exact: np.ndarray | None = None


def _unbiased(est) -> np.ndarray:
    return np.asarray(est.details.get("unbiased", est.value), dtype=float)


def auc_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    g = np.random.default_rng(seed)
    y = np.r_[np.ones(n // 2, int), np.zeros(n - n // 2, int)]
    s = g.random(n)  # uniform scores: the planner's public assumption
    pos, neg = s[y == 1], s[y == 0]
    exact = float(np.mean(pos[:, None] > neg[None, :])) if n <= 4000 else _auc_exact(pos, neg)
    opt = privstats.plan("auc", n=n, epsilon=epsilon, bounds=(0, 1), model=model, warn=False).best
    kw = {"method": "quantized"} if opt.protocol == "ustat-quantized" else {}
    return Case(
        "auc",
        model,
        n,
        epsilon,
        lambda r: privstats.auc(y, s, epsilon=epsilon, model=model, rng=r, **kw),
        exact,
        opt.stderr,
    )


def _auc_exact(pos, neg) -> float:
    from scipy.stats import rankdata

    r = rankdata(np.r_[pos, neg])[: pos.size]
    return float((r.sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def tau_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    from scipy.stats import kendalltau

    g = np.random.default_rng(seed)
    x, z = g.random(n), g.random(n)  # independent: tau ≈ 0, the planner's assumption
    exact = float(kendalltau(x, z).statistic)
    opt = privstats.plan("kendall_tau", n=n, epsilon=epsilon, model=model, warn=False).best
    return Case(
        "kendall_tau",
        model,
        n,
        epsilon,
        lambda r: privstats.kendall_tau(x, z, epsilon=epsilon, model=model, bounds=(0, 1), rng=r),
        exact,
        opt.stderr if opt.best_case is None else opt.best_case,  # independent uniform: the best case
    )


def _gmd_exact(x: np.ndarray) -> float:
    """Gini mean difference, mean |x_i − x_j| over pairs, from the sorted values in O(n log n)."""
    n, xs = x.size, np.sort(x)
    return float(np.sum(xs * (2 * np.arange(n) - n + 1)) / (n * (n - 1) / 2))


def gmd_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    g = np.random.default_rng(seed)
    x = g.random(n)
    exact = _gmd_exact(x)
    opt = privstats.plan(
        "gini_mean_difference", n=n, epsilon=epsilon, bounds=(0, 1), model=model, warn=False
    ).best
    return Case(
        "gini_mean_difference",
        model,
        n,
        epsilon,
        lambda r: privstats.gini_mean_difference(x, epsilon=epsilon, bounds=(0, 1), model=model, rng=r),
        exact,
        opt.stderr if opt.best_case is None else opt.best_case,  # uniform data: the best case
    )


SHUFFLE_DELTA = 1e-6  # the shuffle model's δ in every case (δ is never invented by the library)


def _delta(model: str) -> dict:
    return {"delta": SHUFFLE_DELTA} if model == "shuffle" else {}


def freq_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    d = 16
    g = np.random.default_rng(seed)
    x = g.integers(0, d // 2, n)  # the upper half of the domain is empty
    exact = np.bincount(x, minlength=d).astype(float)
    kw = _delta(model)
    opt = privstats.plan("frequencies", n=n, epsilon=epsilon, domain=d, model=model, warn=False, **kw).best
    return Case(
        "frequencies",
        model,
        n,
        epsilon,
        lambda r: privstats.frequencies(x, domain=d, epsilon=epsilon, model=model, rng=r, **kw),
        exact[d // 2 :],
        opt.stderr,
        pick=lambda e: _unbiased(e)[d // 2 :],
        # intervals of the non-empty items: an empty item's truth sits on the range's edge, where the
        # interval intersected with [0, n] over-covers by construction
        entries=slice(0, d // 2),
        full_exact=exact,
    )


def ecdf_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    g = np.random.default_rng(seed)
    x = g.random(n)
    grid = 256
    t = np.arange(1, grid + 1) / grid
    exact = np.searchsorted(np.sort(x), t, side="right") / n
    opt = privstats.plan("ecdf", n=n, epsilon=epsilon, bounds=(0, 1), grid=grid, model=model, warn=False).best
    return Case(
        "ecdf",
        model,
        n,
        epsilon,
        lambda r: privstats.ecdf(x, epsilon=epsilon, bounds=(0, 1), grid=grid, model=model, rng=r).estimate,
        exact,
        opt.stderr,
        pick=lambda e: np.asarray(e.details["raw"], dtype=float),
    )


def quantile_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    g = np.random.default_rng(seed)
    x = g.random(n)
    exact = np.array([np.sort(x)[math.ceil(0.5 * n) - 1]])
    kw = _delta(model)
    opt = privstats.plan(
        "quantiles", n=n, epsilon=epsilon, bounds=(0, 1), q=[0.5], model=model, warn=False, **kw
    ).best
    return Case(
        "quantiles",
        model,
        n,
        epsilon,
        lambda r: privstats.quantiles(x, [0.5], epsilon=epsilon, bounds=(0, 1), model=model, rng=r, **kw),
        exact,
        opt.stderr,
    )


def range_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    d = 16
    x = np.random.default_rng(seed).integers(0, d, n)  # uniform: the planner's public assumption
    exact = np.cumsum(np.bincount(x, minlength=d)).astype(float)  # the default queries: prefixes [0, j)
    kw = _delta(model)
    opt = privstats.plan("range_counts", n=n, epsilon=epsilon, domain=d, model=model, warn=False, **kw).best
    return Case(
        "range_counts",
        model,
        n,
        epsilon,
        lambda r: privstats.range_counts(x, domain=d, epsilon=epsilon, model=model, rng=r, **kw),
        exact,
        opt.stderr,
    )


def roc_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    """The ROC curve's AUC (``details["auc_raw"]``, unbiased for the AUC of the grid cells)."""
    g = np.random.default_rng(seed)
    y = np.r_[np.ones(n // 2, int), np.zeros(n - n // 2, int)]
    s = g.random(n)
    grid = 1024
    cell = np.ceil(s * grid)  # a score counts at threshold i / grid iff s <= i / grid
    exact = _auc_exact(cell[y == 1], cell[y == 0])  # ties in a cell count 1/2, as the trapezoids do
    opt = privstats.plan("roc_curve", n=n, epsilon=epsilon, grid=grid, model=model, warn=False).best
    return Case(
        "roc_curve",
        model,
        n,
        epsilon,
        lambda r: privstats.roc_curve(y, s, epsilon=epsilon, grid=grid, model=model, rng=r)[-1],
        exact,
        opt.stderr,
        pick=lambda e: np.asarray(e.details["auc_raw"], dtype=float),
    )


def heavy_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    """The estimated count of a planted heavy item (30% of the users) against its exact count."""
    d, item = 64, 7
    x = np.random.default_rng(seed).integers(0, d, n)
    x[: int(0.3 * n)] = item
    exact = float(np.sum(x == item))
    kw = _delta(model)
    opt = privstats.plan(
        "heavy_hitters", n=n, epsilon=epsilon, domain=d, count=exact, model=model, warn=False, **kw
    ).best

    def count(e):
        found = np.asarray(e.value).tolist()
        assert item in found, "the planted heavy item was not found"
        return np.asarray(e.details["counts"][found.index(item)], dtype=float)

    return Case(
        "heavy_hitters",
        model,
        n,
        epsilon,
        lambda r: privstats.heavy_hitters(x, domain=d, epsilon=epsilon, model=model, rng=r, **kw),
        exact,
        opt.stderr,
        pick=count,
    )


def hl_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    """Hosmer–Lemeshow H of a calibrated model (p uniform, y ~ Bernoulli(p)) at the exact deciles.

    H's noise grows with the data's own residuals, and the planner predicts at their expectation,
    so every run draws its own data: the error is measured against that run's exact H."""
    from privstats.stats.distribution import _hl_statistic, hl_group_sums

    def run(r):
        g = np.random.default_rng([seed, r])
        p = g.random(n)
        y = (g.random(n) < p).astype(int)
        E1, E0, O1, O0 = hl_group_sums(y, p, np.quantile(p, np.arange(1, 10) / 10), 10)
        est = privstats.hosmer_lemeshow(y, p, epsilon=epsilon, model=model, bootstrap=100, rng=r)
        est.details["error"] = est.details["unbiased"] - float(
            _hl_statistic(E1 / 2**20, E0 / 2**20, O1, O0, 0.5)
        )
        return est

    opt = privstats.plan("hosmer_lemeshow", n=n, epsilon=epsilon, model=model, warn=False).best
    return Case(
        "hosmer_lemeshow",
        model,
        n,
        epsilon,
        run,
        0.0,
        opt.stderr,
        pick=lambda e: np.asarray(e.details["error"], dtype=float),
    )


BUILDERS = {
    "auc": auc_case,
    "kendall_tau": tau_case,
    "gini_mean_difference": gmd_case,
    "frequencies": freq_case,
    "ecdf": ecdf_case,
    "quantiles": quantile_case,
    "range_counts": range_case,
    "roc_curve": roc_case,
    "heavy_hitters": heavy_case,
    "hosmer_lemeshow": hl_case,
}


def measure_rmse(case: Case, reps: int) -> float:
    """Root mean squared error of the unbiased value around the exact statistic (pooled over entries)."""
    errs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(reps):
            est = case.run(1000 + r)
            v = case.pick(est) if case.pick else _unbiased(est)
            errs.append(np.atleast_1d(v - case.exact))
    return float(np.sqrt(np.mean(np.square(np.concatenate(errs)))))


def coverage(case: Case, reps: int, level: float = 0.95) -> float:
    """Share of ``level`` intervals ``est.ci(level)`` that contain the exact statistic (every entry)."""
    hits = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(reps):
            est = case.run(5000 + r)
            lo, hi = (np.atleast_1d(v)[case.entries or slice(None)] for v in est.ci(level))
            ex = np.atleast_1d(case.exact if case.entries is None else case.full_exact[case.entries])
            hits.append(np.atleast_1d((np.asarray(lo) <= ex) & (ex <= np.asarray(hi))))
    return float(np.mean(np.concatenate(hits)))


def coverage_law(case: Case, reps: int, level: float = 0.95) -> dict:
    """Coverage as :func:`coverage` (same seeds), with what the normal law predicts from the releases'
    own intervals: the mean over seeds of P(e ∈ [v − hi, v − lo]) for an error e ~ N(bias, spread²)
    (the measured bias and spread of the unbiased value v, which ``ci`` and ``stderr`` describe), the
    reported stderr over that spread, and whether the
    intervals allow a stated bias bound (``details["bias_bound"]`` > 0)."""
    from scipy.special import ndtr

    rows, hits, allows = [], [], False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(reps):
            est = case.run(5000 + r)
            sel = case.entries or slice(None)
            lo, hi = (np.atleast_1d(np.asarray(v, dtype=float))[sel] for v in est.ci(level))
            v = np.atleast_1d(_unbiased(est))[sel]  # what the interval and the stderr are about
            ex = np.atleast_1d(case.exact if case.entries is None else case.full_exact[case.entries])
            hits.append((lo <= ex) & (ex <= hi))
            rows.append((v - ex, v - hi, v - lo, np.atleast_1d(est.stderr)[sel]))
            allows |= bool(np.any(np.asarray(est.details.get("bias_bound", 0.0)) > 0))
    err, a, b, se = (np.array([row[i] for row in rows], dtype=float) for i in range(4))
    bias, spread = err.mean(axis=0), err.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        law = ndtr((b - bias) / spread) - ndtr((a - bias) / spread)
        law = np.where(spread > 0, law, (a <= bias) & (bias <= b))
        ratio = np.sqrt(np.mean(se**2)) / np.sqrt(np.mean(spread**2))
    return {
        "coverage": float(np.mean(np.concatenate(hits))),
        "predicted": float(np.mean(law)),
        "stderr_ratio": float(ratio),
        "allows_bias": allows,
    }


def gini_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    g = np.random.default_rng(seed)
    x = g.random(n)  # uniform on the bounds: the planner's public assumption
    exact = _gmd_exact(x) * (n - 1) / (2 * n * float(x.mean()))
    opt = privstats.plan(
        "gini_coefficient", n=n, epsilon=epsilon, bounds=(0, 1), model=model, warn=False
    ).best
    return Case(
        "gini_coefficient",
        model,
        n,
        epsilon,
        lambda r: privstats.gini_coefficient(x, epsilon=epsilon, bounds=(0, 1), model=model, rng=r),
        exact,
        opt.stderr if opt.best_case is None else opt.best_case,  # uniform data: the best case
    )


# I[a + b ≥ 7] on values 0..7 (a matrix kernel: exact in O(n + k²)).  With uniform values its variance
# ζ₂ = 0.246 is near ¼, the worst case of a kernel with range (0, 1) that the secure predictor assumes
# (P = 1 there, so ζ₁ does not enter); ζ₁ = 0.082 > 0 keeps Protocol A's estimate non-degenerate.
SUM_KERNEL = (np.arange(8)[:, None] + np.arange(8)[None, :] >= 7).astype(float)


def ustat_case(model: str, n: int, epsilon: float, seed: int = 0) -> Case:
    x = np.random.default_rng(seed).integers(0, 8, n)  # uniform: the planner's public assumption
    c = np.bincount(x, minlength=8).astype(float)
    exact = float((c @ SUM_KERNEL @ c - c @ np.diag(SUM_KERNEL)) / (n * (n - 1)))
    opt = privstats.plan("ustatistic", n=n, epsilon=epsilon, model=model, kernel=SUM_KERNEL, warn=False).best
    return Case(
        "ustatistic",
        model,
        n,
        epsilon,
        lambda r: privstats.ustatistic(x, SUM_KERNEL, epsilon=epsilon, model=model, rng=r),
        exact,
        opt.stderr,
    )


BUILDERS.update({"gini_coefficient": gini_case, "ustatistic": ustat_case})
