"""Intervals and standard errors on real data at n = 300, ε = 0.5 (issue 26, deliverables 1 and 3).

statsmodels' ``fair`` (6,366 marriages, bundled with the package): 300 rows drawn once with a fixed
seed; x = age (public bounds 17–42), z = years married (0–23).  Each check runs 100 seeded releases:
the coverage of a 95% interval then has binomial sd 2.2%, so 0.84 is 5 sd below 0.95; the measured
spread of 100 releases is known to about ±10%, so a reported/measured ratio outside [0.7, 1.5] is
not noise.  ``experiments/coverage_real.py`` runs the full table (docs/results.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import kendalltau

import privstats

pytest.importorskip("statsmodels")

RUNS = 100
COVERAGE_FLOOR = 0.95 - 5 * np.sqrt(0.95 * 0.05 / RUNS)


@pytest.fixture(scope="module")
def fair():
    import statsmodels.api as sm

    f = sm.datasets.fair.load_pandas().data
    idx = np.random.default_rng(300).choice(len(f), 300, replace=False)
    return f.age.to_numpy()[idx], f.yrs_married.to_numpy()[idx]


def _runs(call, exact):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n = 300 at ε = 0.5 is flagged as a weak result; measured anyway
        for r in range(RUNS):
            e = call(r)
            lo, hi = e.ci()
            out.append((float(e.unclipped), float(e.stderr), lo, hi))
    v, s, lo, hi = (np.array(c) for c in zip(*out, strict=True))
    return v, s, float(np.mean((lo <= exact) & (exact <= hi))), hi - lo


def test_secure_gini_coefficient_has_no_zero_width_intervals(fair):
    # the clipped GMD (0 whenever its noise went below 0) gave G = 0 with stderr 0: coverage 0.65
    x, _ = fair
    n = x.size
    gmd = np.sum(np.sort(x) * (2 * np.arange(n) - n + 1)) / (n * (n - 1) / 2)
    exact = gmd * (n - 1) / (2 * n * x.mean())
    _, s, cov, width = _runs(
        lambda r: privstats.gini_coefficient(x, epsilon=0.5, bounds=(17, 42), model="secure", rng=r), exact
    )
    assert np.all(s > 0) and np.all(width > 0)
    assert cov >= COVERAGE_FLOOR, cov


def test_secure_kendall_tau_b_stderr_matches_its_spread(fair):
    # the delta method with the noisy non-tie fractions floored at 1e-3 reported stderr up to 900
    x, z = fair
    exact = float(kendalltau(x, z).statistic)
    v, s, cov, _ = _runs(
        lambda r: privstats.kendall_tau(x, z, epsilon=0.5, model="secure", bounds=((17, 42), (0, 23)), rng=r),
        exact,
    )
    ratio = float(np.sqrt(np.mean(s**2)) / np.std(v, ddof=1))
    assert 0.7 <= ratio <= 1.5, ratio
    assert cov >= COVERAGE_FLOOR, cov


def test_local_auc_interval_carries_the_quantisation_bias_bound(fair):
    # at n = 300, ε = 0.5 the grid has k = 2 cells; real scores were 0.08–0.14 low there and the plain
    # ±1.96σ interval covered 0.80–0.89 over 100 seeds; the interval now allows a bias scale b as a bias
    # the estimate may have (the linear correction is unbiased over the family b is the worst case of):
    # the narrowest ±h that covers at 95% for every |bias| ≤ b.  b is the released histograms' shared-cell
    # pair share over 3k (1/(3k²) at uniform histograms), so 0 ≤ b ≤ 1/(3k)
    from scipy.stats import norm

    x, z = fair
    y = (z > np.median(z)).astype(int)
    s = (x - 17) / 25
    est = privstats.auc(y, s, epsilon=0.5, model="local", rng=0, postprocess="none")
    k = est.params["domain_size"]
    lo, hi = est.ci()
    b, sd = est.details["bias_bound"], est.stderr
    assert k == 2 and 0 <= b <= 1 / (3 * k)
    assert est.details["bias_rule"] == "quadrature"
    assert (lo + hi) / 2 == pytest.approx(est.value)  # postprocess="none": no clipping
    h = (hi - lo) / 2
    assert norm.cdf((h - b) / sd) - norm.cdf((-h - b) / sd) == pytest.approx(0.95, abs=1e-9)
