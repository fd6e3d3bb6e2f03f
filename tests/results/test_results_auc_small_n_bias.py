"""Local AUC at small n and ε: the planner reports the quantisation bias (issue 26, item 2).

Weak model (logistic regression on two breast-cancer features, exact AUC 0.780, n = 569) at
ε = 0.5: the automatic grid has 2 cells and the linear-corrected estimate is 0.066 low (200 runs),
where ``privstats.plan`` reported bias 0.  The planner now reports the worst-case bias over linear
class densities, 1/(3k²) = 0.083, as the bias's scale; the measured bias stays within one reported
standard error.
"""

from __future__ import annotations

import numpy as np
import pytest

import privstats

pytest.importorskip("sklearn")


def _scores():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    d = load_breast_cancer()
    X, y = d.data[:, [1, 4]], d.target
    s = LogisticRegression(random_state=0).fit(X, y).predict_proba(X)[:, 1]
    return y, s, float(roc_auc_score(y, s))


def test_local_auc_small_n_bias_is_reported_by_the_planner():
    y, s, exact = _scores()
    reps = 200
    ests = [privstats.auc(y, s, epsilon=0.5, model="local", rng=r) for r in range(reps)]
    v = np.array([e.details.get("unbiased", e.value) for e in ests])
    se = float(np.mean([e.stderr for e in ests]))
    bias, mc = v.mean() - exact, v.std(ddof=1) / np.sqrt(reps)
    assert abs(bias) <= se  # within one reported standard error
    opt = privstats.plan("auc", n=y.size, epsilon=0.5, model="local", n_pos=int(y.sum()), warn=False).best
    assert opt.bias >= abs(bias) - 3 * mc  # was 0
    rmse = float(np.sqrt(np.mean((v - exact) ** 2)))
    assert 0.7 <= opt.stderr / rmse <= 1.5
