"""Local Kendall tau-b: the bias scale follows the released joint histogram (issue 26).

The release adds the share ŝ of pairs sharing a joint cell (one more operator on the same reports,
post-processing) and scales the binning bias by B·min(1, max(0, (k²ŝ − 1)/TAU_BIAS_RAMP)), B the
Gaussian-copula worst case over k = 3..16.  k²s − 1 is the joint histogram's χ² distance from the
uniform product: 0 at independent uniform data, where binning adds no bias, so the bound there is
near 0; on skewed correlated data (statsmodels' fair) it is B.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr
from scipy.stats import kendalltau
from statsmodels.datasets import fair

import privstats
from privstats.stats.pairwise.local_quantized import TAU_BIAS_RAMP, _tau_b_bias_scale
from privstats.ustat import kernels as K


def _exact_same_cell(x, y, k: int) -> float:
    """The share of distinct pairs in the same cell of the k×k grid on [0, 1]²."""
    c = np.bincount(K.quantize(x, (0, 1), k) * k + K.quantize(y, (0, 1), k), minlength=k * k)
    return float(np.sum(c * (c - 1.0)) / (len(x) * (len(x) - 1.0)))


def _releases(x, y, epsilon: float, seeds, **kw):
    return [
        privstats.kendall_tau(x, y, epsilon=epsilon, model="local", bounds=(0, 1), rng=s, **kw) for s in seeds
    ]


def _uniform(n: int, seed: int):
    g = np.random.default_rng(seed)
    return g.random(n), g.random(n)


def _copula(n: int, rho: float, seed: int):
    g = np.random.default_rng(seed)
    z = g.standard_normal((n, 2)) @ np.linalg.cholesky([[1, rho], [rho, 1]]).T
    return ndtr(z[:, 0]), ndtr(z[:, 1])


def _fair():
    """statsmodels' fair data: age and years married (skewed, discrete, correlated), on [0, 1]."""
    d = fair.load_pandas().data
    return (d["age"].to_numpy() - 17.5) / 24.5, (d["yrs_married"].to_numpy() - 0.5) / 22.5


def test_bias_scale_is_the_copula_worst_case_over_k():
    assert 0.05 < _tau_b_bias_scale() < 0.06


def test_same_cell_share_is_unbiased():
    x, y = _copula(2000, 0.6, 3)
    k = 4
    s = np.array([r.details["same_cell"] for r in _releases(x, y, 4.0, range(150), bins=k)])
    se = np.std(s, ddof=1) / math.sqrt(len(s))
    assert s.min() > 0  # no clipping at 0, which would bias the mean
    assert abs(s.mean() - _exact_same_cell(x, y, k)) < 5 * se


def test_bias_bound_is_small_on_independent_uniform_data_and_full_on_correlated_data():
    B = _tau_b_bias_scale()
    x, y = _uniform(20_000, 1)
    rs = _releases(x, y, 1.0, range(200))
    k = rs[0].params["bins"]
    d = k * k * np.array([r.details["same_cell"] for r in rs]) - 1
    bb = np.array([r.details["bias_bound"] for r in rs])
    ramp = B * np.clip(d / TAU_BIAS_RAMP, 0, 1)
    np.testing.assert_allclose(bb, ramp, rtol=1e-12, atol=1e-15)
    # ramp ≤ B·max(0, d)/RAMP and E max(0, d0 + Z) ≤ max(0, d0) + σ/√(2π) for Z ~ N(0, σ²) (ŝ unbiased);
    # σ from the seeds, raised by 5 of its standard errors
    d0 = k * k * _exact_same_cell(x, y, k) - 1
    sigma = np.std(d, ddof=1) * (1 + 5 / math.sqrt(2 * (len(d) - 1)))
    bound = B * (max(d0, 0.0) + sigma / math.sqrt(2 * math.pi)) / TAU_BIAS_RAMP
    assert bound < B / 2
    assert bb.mean() < bound + 5 * np.std(bb, ddof=1) / math.sqrt(len(bb))
    assert bb.mean() < B / 2

    x, y = _fair()
    rs = _releases(x, y, 2.0, range(50))
    k = rs[0].params["bins"]
    d = k * k * np.array([r.details["same_cell"] for r in rs]) - 1
    assert k * k * _exact_same_cell(x, y, k) - 1 - 5 * np.std(d, ddof=1) > TAU_BIAS_RAMP
    assert all(r.details["bias_bound"] == B for r in rs)


def test_interval_covers_on_independent_uniform_data():
    x, y = _uniform(20_000, 5)
    k = _releases(x, y, 1.0, [0])[0].params["bins"]
    xb, yb = K.quantize(x, (0, 1), k), K.quantize(y, (0, 1), k)
    target = kendalltau(xb, yb).statistic  # the binned sample's tau-b, the released statistic's target
    rs = _releases(x, y, 1.0, range(1000, 1400))
    cover = np.mean([lo <= target <= hi for lo, hi in (r.ci() for r in rs)])
    sd = math.sqrt(0.95 * 0.05 / len(rs))
    assert 0.93 - 2 * sd <= cover <= 0.99
