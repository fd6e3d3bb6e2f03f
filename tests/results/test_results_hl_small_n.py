"""Hosmer–Lemeshow at small n (issue 26, item 5).

Before: at n = 569 (breast cancer, cross-validated logistic regression) and central ε = 1 the
debiased H divided the sums' noise variance by noisy expected counts floored at 0.5, so its raw
value averaged about −1,000 and the clipped answer was H = 0 in 48 of 50 seeds, with no warning.
Now: the pooled, noise-debiased statistic Σ (d² − s²) / max(V, s²) is unbiased for its stated
estimand, its stderr and the planner match the measured spread, the p-value holds its level, and a
warning names the n at which the test starts to have power.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privstats
from privstats.plan import UselessResultWarning
from privstats.stats.distribution.calibration import (
    _hl_pooled,
    hl_group_sums,
    hl_n_needed,
    hl_noise_parts,
    hosmer_lemeshow_accounting,
)


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    return y, cross_val_predict(clf, X, y, cv=5, method="predict_proba")[:, 1]


def _calibrated(n, seed):
    g = np.random.default_rng(seed)
    p = g.uniform(0.02, 0.98, n)
    return (g.uniform(size=n) < p).astype(int), p


def _runs(y, p, eps, reps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ests = [privstats.hosmer_lemeshow(y, p, epsilon=eps, bootstrap=400, rng=r) for r in range(reps)]
    return np.array([e.details["unbiased"] for e in ests]), np.array([e.stderr for e in ests])


def _target(y, p, eps):
    """The estimand on exact decile groups: Σ d² / max(V, floor) of the true sums."""
    E1, E0, O1, O0 = hl_group_sums(y, p, np.quantile(p, np.arange(1, 10) / 10), 10)
    parts = hl_noise_parts(hosmer_lemeshow_accounting(eps, 10, "split"))
    return float(_hl_pooled(E1 / 2**20, E0 / 2**20, O1, O0, *parts, debias=False))


@pytest.mark.parametrize("data", ["breast_cancer", "calibrated"])
def test_hl_small_n_is_unbiased_with_honest_stderr_and_plan(data):
    y, p = _breast_cancer() if data == "breast_cancer" else _calibrated(569, 5)
    vals, ses = _runs(y, p, 1.0, 60)
    sd = vals.std(ddof=1)
    # unbiased for its estimand (the old raw value averaged about -1,000 here)
    assert abs(vals.mean() - _target(y, p, 1.0)) < 5 * sd / np.sqrt(vals.size) + 1.0
    assert 0.5 < ses.mean() / sd < 2.0
    rmse = float(np.sqrt(np.mean((vals - _target(y, p, 1.0)) ** 2)))
    planned = privstats.plan("hosmer_lemeshow", n=y.size, epsilon=1.0, model="central")[0].stderr
    assert 0.5 <= planned / rmse <= 2.0


def test_hl_p_value_holds_its_level_at_small_n():
    reps = 200
    pv = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(reps):
            y, p = _calibrated(569, 1000 + r)
            pv.append(privstats.hosmer_lemeshow(y, p, epsilon=1.0, bootstrap=400, rng=r).details["p_value"])
    rate = np.mean(np.array(pv) < 0.05)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)


def test_hl_warns_with_the_n_needed():
    y, p = _calibrated(569, 7)
    need = hl_n_needed(1.0, 10, 10)
    assert need > 569
    with pytest.warns(UselessResultWarning, match=f"n >= {need}"):
        privstats.hosmer_lemeshow(y, p, epsilon=1.0, bootstrap=200, rng=0)
    big = hl_n_needed(8.0, 10, 10)
    y, p = _calibrated(big, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UselessResultWarning)
        privstats.hosmer_lemeshow(y, p, epsilon=8.0, bootstrap=200, rng=0)


def test_secure_hl_small_n_stderr_plan_and_level():
    """Secure at n = 569, ε = 1: before, raw values of ±3,000 (plan 254, spread 2,860)."""
    y, p = _calibrated(569, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ests = [
            privstats.hosmer_lemeshow(y, p, epsilon=1.0, bootstrap=400, rng=r, model="secure")
            for r in range(40)
        ]
        pv = []
        for r in range(120):
            yy, pp = _calibrated(569, 2000 + r)
            est = privstats.hosmer_lemeshow(yy, pp, epsilon=1.0, bootstrap=400, rng=r, model="secure")
            pv.append(est.details["p_value"])
    vals = np.array([e.details["unbiased"] for e in ests])
    sd = vals.std(ddof=1)
    assert 0.5 < np.mean([e.stderr for e in ests]) / sd < 2.0
    planned = privstats.plan("hosmer_lemeshow", n=569, epsilon=1.0, model="secure")[0].stderr
    assert 0.5 <= planned / sd <= 2.0
    assert np.mean(np.array(pv) < 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(pv))
