"""Local Kendall tau-b: the binned statistic's bias and the plan's range (issue 26).

Binning into k equal cells per variable changes tau-b (ties inside a cell, and tau-b's tie
correction): on Gaussian-copula data with uniform margins the bias is 0 at k = 2 and 0.04-0.054 at
k = 3-8, decaying slowly.  The plan states it, and its stderr at non-tie fractions ½ (the best case,
independent uniform data, is ``best_case``); the release adds it to the interval in quadrature,
scaled by the released joint histogram's distance from the uniform product.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import multivariate_normal

import privstats
from privstats.stats.pairwise.local_quantized import TAU_BIAS_RAMP, _tau_b_bias_scale, _tau_b_bin_bias


def _binned_tau_b(rho: float, k: int) -> float:
    """Population tau-b of a Gaussian copula cut at its k-quantiles, from the bivariate normal CDF."""
    cuts = np.r_[-8.0, ndtri(np.arange(1, k) / k), 8.0]
    F = np.array([[multivariate_normal.cdf([a, b], cov=[[1, rho], [rho, 1]]) for b in cuts] for a in cuts])
    P = np.diff(np.diff(F, axis=0), axis=1)
    conc = disc = 0.0
    for i in range(k):
        for j in range(k):
            conc += P[i, j] * P[i + 1 :, j + 1 :].sum()
            disc += P[i, j] * P[i + 1 :, :j].sum()
    nu = 1 - float(np.sum(P.sum(axis=1) ** 2))
    return 2 * (conc - disc) / nu


@pytest.mark.parametrize("k", [2, 3, 5])
def test_bin_bias_matches_the_bivariate_normal_cdf(k):
    worst = max(
        abs(_binned_tau_b(r, k) - 2 / math.pi * math.asin(r)) for r in (0.2, 0.4, 0.6, 0.8, 0.9, 0.95)
    )
    assert _tau_b_bin_bias(k) == pytest.approx(worst, abs=2e-3)
    if k > 2:
        assert _tau_b_bin_bias(k) > 0.03


def test_plan_states_the_bias_and_the_range_over_non_tie_fractions():
    best = privstats.plan("kendall_tau", n=5000, epsilon=2.0, model="local", warn=False).best
    k = best.params["bins"]
    # the plan states the bias scale the release's interval allows on data not independent-uniform
    assert k > 2 and best.bias == _tau_b_bias_scale() >= _tau_b_bin_bias(k)
    assert best.best_case < best.stderr
    g = np.random.default_rng(0)
    x, z = g.random(500), g.random(500)
    est = privstats.kendall_tau(x, z, epsilon=2.0, model="local", bounds=(0, 1), bins=4, rng=1)
    # the release scales the bias by the released joint histogram's χ² distance from the uniform product
    d = 16 * est.details["same_cell"] - 1
    B = _tau_b_bias_scale()
    assert est.details["bias_bound"] == B * min(max(d / TAU_BIAS_RAMP, 0.0), 1.0)
    assert 0 <= est.details["bias_bound"] <= B and est.details["bias_rule"] == "quadrature"
