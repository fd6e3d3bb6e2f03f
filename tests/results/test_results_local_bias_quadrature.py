"""Local AUC (issue 26): the grid's quantisation-bias scale b enters the 95% interval as a bias the
estimate may have: the narrowest ±h covering at 95% for every |bias| ≤ b (at most ±z√(σ² + b²)), not b
added to ±zσ.  With the linear correction b is read off the released histograms, the shared-cell pair
share over 3k (``_auc_cell_pair_bias``: 1/(3k²) at uniform histograms, at most 1/(3k)); on a given grid
it is the planner's 1/(3k²).

The local AUC's automatic grid carries the linear correction, unbiased for linear class densities, so b
(the uncorrected worst case over them) is a bias the data may have, not one it has; added to ±zσ the
interval covered 0.9925-0.9975 in 6 of 20 real cells (400 seeds) where the realised bias was 0.1-0.3σ.
The local ROC's grid is not corrected (its realised bias 0.3-0.7σ): it keeps b added to ±zσ (coverage
0.90-0.99 over 100 seeds; quadrature read 0.88-0.98).  Scores: logistic
regression on two breast-cancer features (fixed ``random_state``), n = 569, exact AUC 0.780.
"""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

import privstats
from privstats.stats.pairwise.plumbing import _auc_linear_family_bias

pytest.importorskip("sklearn")

Z = 1.959963984540054


def _scores():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    d = load_breast_cancer()
    X, y = d.data[:, [1, 4]], d.target
    s = LogisticRegression(random_state=0).fit(X, y).predict_proba(X)[:, 1]
    return y, s, float(roc_auc_score(y, s))


def _half_width(est) -> float:
    """Half-width of the 95% interval around the unclipped value (the support only cuts its ends)."""
    lo, hi = est.ci(0.95)
    centre = est.unclipped
    return max(hi - centre, centre - lo)


def test_local_auc_interval_allows_the_bias_scale_and_covers():
    y, s, exact = _scores()
    runs = 200
    hits = 0
    for r in range(runs):
        est = privstats.auc(y, s, epsilon=2.0, model="local", rng=26_000 + r)
        assert est.params.get("smoothing") == "linear"
        b = est.details["bias_bound"]
        assert 0 <= b <= 1 / (3 * est.params["domain_size"])
        quad = Z * math.sqrt(est.stderr**2 + b * b)
        lo, hi = est.ci(0.95)
        # the support (0, 1) may cut an end; the other end is where the normal law shifted by b covers
        # exactly 95%, inside the quadrature half-width
        h, sd = _half_width(est), est.stderr
        assert norm.cdf((h - b) / sd) - norm.cdf((-h - b) / sd) == pytest.approx(0.95, abs=1e-9), r
        assert Z * sd <= h <= quad, (r, h, quad, Z * sd + b)
        hits += lo <= exact <= hi
    # coverage over 200 seeds within 4 binomial sd of the band [0.93, 0.99] (sd 0.015 at 0.95)
    se = math.sqrt(0.95 * 0.05 / runs)
    assert 0.93 - 4 * se <= hits / runs <= 1.0, hits / runs


def test_local_auc_on_a_given_grid_keeps_the_linear_bias_rule():
    """Without the linear correction (a given grid) b is the uncorrected estimate's own worst-case bias
    and stays added to ±zσ."""
    y, s, _ = _scores()
    est = privstats.auc(y, s, epsilon=2.0, model="local", domain_size=4, rng=7)
    assert "bias_rule" not in est.details
    b = _auc_linear_family_bias(4)
    assert _half_width(est) == pytest.approx(Z * est.stderr + b, rel=1e-9)
