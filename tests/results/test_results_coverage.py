"""Coverage of 95% intervals (issue 15): within [0.93, 0.97] over 400 seeds.

Central releases are Laplace-dominated, where the normal interval (±1.96σ) covers only
93.7%; ``Estimate.ci`` uses the exact Laplace quantile (±2.12σ).  The fast test checks
that on the cheap central statistics; the slow one measures every statistic × model.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from privstats.estimate import Estimate, laplace_normal_halfwidth

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from harness import BUILDERS, coverage, coverage_law, coverage_real_experiment


def test_laplace_normal_halfwidth_is_the_exact_quantile():
    g = np.random.default_rng(0)
    draws = g.laplace(0, 1.0, 400_000) + g.normal(0, 0.7, 400_000)
    h = laplace_normal_halfwidth(0.95, 1.0, 0.7)
    assert abs(np.mean(np.abs(draws) <= h) - 0.95) < 5 * np.sqrt(0.95 * 0.05 / draws.size)
    assert laplace_normal_halfwidth(0.95, 1.0) == pytest.approx(np.log(20))
    e = Estimate(0.5, stderr=np.sqrt(2), details={"ci_law": {"laplace_scale": 1.0}}, support=(0, 1))
    assert e.ci() == (0.0, 1.0)


@pytest.mark.parametrize("statistic", ["auc", "kendall_tau", "gini_mean_difference"])
def test_central_coverage_400_seeds(statistic):
    case = BUILDERS[statistic]("central", 2000, 1.0)
    c = coverage(case, 400)
    # 400 seeds: the binomial sd is 1.1%, the band [0.93, 0.97] is about ±1.8 sd around 0.95
    assert 0.93 <= c <= 0.97, (statistic, c)


FULL = (
    [("auc", m) for m in ("central", "secure", "local")]
    + [("kendall_tau", m) for m in ("central", "secure", "local")]
    + [("gini_mean_difference", m) for m in ("central", "secure", "local")]
    + [("gini_coefficient", m) for m in ("central", "secure", "local")]
    + [("ustatistic", m) for m in ("central", "secure", "local")]
    + [("frequencies", m) for m in ("central", "local")]
    + [("quantiles", m) for m in ("central", "secure", "local")]
    + [("range_counts", m) for m in ("central", "shuffle", "local")]
    + [("roc_curve", m) for m in ("central", "secure", "local")]
    + [("frequencies", "shuffle")]
)
# not in the table: shuffle quantiles (the answer is a dithered bin's midpoint and its interval one or two
# bins less 2.5% at each end: on spread-out values it covers 0.99-1.00 on the real sets of
# experiments/coverage_real.py, above the band) and heavy hitters (a set, no interval)


@pytest.mark.slow
def test_full_coverage_table():
    """Every pair within issue 26's band [0.93, 0.99] (two binomial sd of slack below: 400 seeds).

    The local AUC, Kendall's tau and Gini intervals allow a stated quantisation-bias bound b (the
    narrowest interval covering 95% for every bias up to b), so on this zero-bias data they cover more
    than 95% by construction (at b = σ: 0.992); for them the upper end is what the normal law predicts
    from their own intervals and the measured spread, and the coverage must match that law (4 sd).
    The reported stderr over the measured spread is in [0.7, 1.5].
    """
    rows, bad = [], []
    se = np.sqrt(0.95 * 0.05 / 400)
    for statistic, model in FULL:
        case = BUILDERS[statistic](model, 20000, 1.0)
        m = coverage_law(case, 400)
        c, law = m["coverage"], m["predicted"]
        shown = f"{law:.4f}" if m["allows_bias"] else "—"
        rows.append(f"| {statistic} | {model} | {c:.4f} | {shown} | {m['stderr_ratio']:.2f} |")
        ok = 0.93 - 2 * se <= c <= (max(0.99, law + 4 * se) if m["allows_bias"] else 0.99)
        ok &= not m["allows_bias"] or abs(c - law) <= 4 * se
        # local quantiles' stderr was their ECDF band's half-width over z (1.63x the spread here); their
        # release law's reads 1.01x (coverage 0.9675, the band's interval)
        ok &= 0.7 <= m["stderr_ratio"] <= 1.5 or not np.isfinite(m["stderr_ratio"])
        if not ok:
            bad.append((statistic, model, c, law, m["stderr_ratio"]))
    print("\n| statistic | model | coverage (400 seeds, n = 20000, ε = 1) | normal law | stderr ratio |")
    print("|---|---|---|---|---|\n" + "\n".join(rows))
    assert not bad, bad


# ----------------------------------------------------------------------------- real data (issue 26)
# (statistic, model) pairs the real-data table (docs/results.md) shows failing, with the reason; the
# slow test below checks every other pair of experiments/coverage_real.py on the four data sets
REAL_KNOWN = {
    # Hosmer-Lemeshow central is checked here: against hl_estimand it covers 0.91-0.98 in all 20 cells
    # (stderr 0.84-1.22x); on the resampled sets at n = 5000 the cut-jitter law inflates the moved users'
    # residual spread by sqrt(max(1, h/Q)) (copies cross a cut together) and is rescaled to h (it was
    # 0.79-0.85, stderr 0.68-0.83x, in 3 cells)
    # quantiles, central and secure: checked here (both run the tree; central's default was JointExp with
    # a band from 10% of ε, stderr 4-32x, until issue 26).  At the two corners below every cell passes; the
    # table's remaining misses are off these corners: coverage 0.993-1.000 where a tied value lies far
    # inside its block (the release is all but exact and the interval holds its cell); the stderr (the
    # release law's spread since issue 26's second round: 1.59/1.85x -> 1.26/0.95x on central randhie,
    # secure randhie 2.56x -> 1.23x at (5000, 0.5)) still reads 2.65x on secure fair at (5000, 0.5), where
    # q sits 1-3 sd below a block's edge and the plug-in curve overstates a rare crossing; the bias of
    # 1.1 sd at (1000, 1) on fair and randhie (a tied value's release was its public cell's midpoint,
    # 0.005-0.009 off in every run) is gone: the central grid is dithered, so the rounding is unbiased
    # noise of sd cell/sqrt(12) (test_results_quantile_dither.py); secure keeps the served task's grid
    # the local Gini mean difference and coefficient are checked here: the interval adds the quantisation
    # bias bound (worst case over densities linear within bins) in quadrature, and the release warns
    # (UselessResultWarning) where 1.3x that bound reaches the noise sd: the two cells beyond the bound
    # (breast-cancer radii at (300, 0.5), 1.19 sd; fair ages at (5000, 2), 1.24 sd) warn
    # the Gaussian-copula bias of binned tau-b (0 at k = 2, 0.04-0.054 at k = 3-8) is in the plan and the
    # interval; skewed and discrete margins give 0.03-0.09 at every k in reach
    # the planner's number (non-tie fractions ½) was 0.27-0.48x on peaked variables; its stderr_range (uniform
    # margins to non-tie fractions at the release's guard) holds the RMSE in all 20 cells (400 seeds)
    # the interval is the ratio's law (quantiles of the stderr's Gaussian draws, not ±z·RMS): the 4 cells
    # at 0.993-1.000 read 0.943-0.988 (400 seeds)
    # local Kendall's tau-b (checked here since the ratio-law interval): with the bias scale ramped by the
    # released same-cell share, 19 of 20 cells in band at 400 seeds; fair at (300, 2) reads 0.9275 (its
    # own binning bias, −0.084, 0.56 sd)
}


LOCAL_400 = {"auc", "kendall_tau", "gini_mean_difference", "gini_coefficient"}


@pytest.mark.slow
def test_real_data_coverage_stderr_and_bias():
    R = coverage_real_experiment()
    bad = []
    for stat, models in R.MODELS.items():
        for model in models:
            if (stat, model) in REAL_KNOWN or (stat, model) in R.COSTLY:
                continue
            for data in ("breast_cancer", "fair", "randhie", "anes96"):
                for n, eps in ((300, 0.5), (5000, 2.0)):
                    # the local U-statistics at their table cells' 400 seeds: at 100 the measured spread's own
                    # sampling error (~7%) moved fair's GMD stderr ratio at (300, 0.5) from 1.42 to 1.58
                    runs = 400 if model == "local" and stat in LOCAL_400 else 100
                    r = R.run_cell({"data": data, "n": n, "eps": eps, "stat": stat, "model": model}, runs)
                    # four binomial sd around the band [0.93, 0.99]: ~200 cells are checked, and at 2 sd
                    # a correct cell fails one time in 20 (gini secure read 0.88 at 100 seeds, 0.945 at 400)
                    se = np.sqrt(0.95 * 0.05 / r["runs"])
                    ok = 0.93 - 4 * se <= r["coverage"] <= 0.99 + 4 * se
                    ok &= np.isnan(r["stderr_ratio"]) or 0.7 <= r["stderr_ratio"] <= 1.5
                    ok &= r["bias_over_sd"] <= 1 or "UselessResultWarning" in r["warnings"]
                    if not ok:
                        bad.append((stat, model, data, n, eps, r["coverage"], r["stderr_ratio"]))
    assert not bad, bad
