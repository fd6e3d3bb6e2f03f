"""Local Kendall tau-b: the interval's bias allowance adapts to the taus the release leaves plausible.

The binned tau-b's Gaussian-copula bias is odd in ρ and 0 at independence; its worst case over every
ρ (0.053 at k = 4) does not shrink with n, so at n = 20,000, ε = 1 it was 1.15 noise sd and independent
data covered 0.995-0.998 (issue 26).  The release now takes the worst case over the taus in its own
noise interval (its draws' quantiles, the ratio's law), so at independence the bound is a fraction of
σ and the interval ≈ ±2σ, while at ρ = 0.8 it is still the copula's worst case.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

import privstats
from privstats.stats.pairwise.local_quantized import _tau_b_bias_near, _tau_b_bin_bias


def _copula(rho: float, n: int, seed: int):
    g = np.random.default_rng(seed)
    a = g.standard_normal(n)
    return ndtr(a), ndtr(rho * a + np.sqrt(1 - rho * rho) * g.standard_normal(n))


@pytest.mark.parametrize("seed", range(4))
def test_bias_bound_shrinks_at_independence_and_not_at_strong_correlation(seed):
    x, z = _copula(0.0, 20_000, seed)
    est = privstats.kendall_tau(x, z, epsilon=1.0, model="local", bounds=(0, 1), rng=100 + seed)
    k, sd = est.params["bins"], est.stderr
    assert k >= 3 and _tau_b_bin_bias(k) > 0.9 * sd  # the worst case over every ρ: about σ here
    # plausible |tau| ≤ |tau_hat| + ~2σ ≈ 0.2 → bias ≤ 0.08ρ ≈ 0.025 (main: the worst case, 1.2σ)
    assert est.details["bias_bound"] < 0.6 * sd
    lo, hi = est.ci()
    assert (hi - lo) / 2 < 2.4 * sd  # main: bias_aware_halfwidth(σ, 1.2σ) ≈ 2.9σ
    x, z = _copula(0.8, 20_000, seed)
    est = privstats.kendall_tau(x, z, epsilon=1.0, model="local", bounds=(0, 1), rng=100 + seed)
    assert est.details["bias_bound"] >= 0.95 * _tau_b_bin_bias(est.params["bins"])


def test_bias_near_is_the_curve_over_the_range():
    assert _tau_b_bias_near(2, -1.0, 1.0) == 0.0  # the median split keeps tau
    assert _tau_b_bias_near(4, -2.0, 2.0) == pytest.approx(_tau_b_bin_bias(4), abs=2e-3)
    # odd in rho: a range around 0 reads the larger |tau| end, a range away from 0 its own stretch
    assert _tau_b_bias_near(4, -0.01, 0.01) < 0.002
    assert _tau_b_bias_near(4, -0.3, 0.05) == pytest.approx(_tau_b_bias_near(4, 0.0, 0.3))


def test_interval_follows_the_ratio_law_not_a_symmetric_rms():
    # a peaked variable: a noisy non-tie fraction near its guard makes tau-b's law skewed, so the
    # interval (the draws' quantile range) is not symmetric about the value (main: ±h, symmetric)
    g = np.random.default_rng(5)
    x = np.where(g.random(5000) < 0.95, 0.05, g.random(5000))
    z = np.clip(x + 0.3 * g.random(5000), 0, 1)
    asym = []
    for r in range(4):
        est = privstats.kendall_tau(x, z, epsilon=2.0, model="local", bounds=(0, 1), rng=r)
        lo, hi = est.ci()
        if lo > -1 and hi < 1:
            asym.append(abs((hi - est.unclipped) - (est.unclipped - lo)) / (hi - lo))
    assert len(asym) >= 2 and min(asym) > 0.1
