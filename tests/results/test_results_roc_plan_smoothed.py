"""The ROC planner predicts the released (isotonic-smoothed) curve's AUC error (issue 26).

It predicted the unsmoothed curves' AUC error, 2.4-3.5x the measured RMSE at n = 300, ε = 0.5 on
real data (central and secure): where the noise is large against the grid's steps the isotonic
projection removes much of it.  Uniform scores in both classes (the planner's public assumption),
n = 300, ε = 0.25, a 256-point grid: the unsmoothed prediction is about 2.1x the RMSE there.
"""

from __future__ import annotations

import numpy as np

import privstats

RUNS = 60


def test_plan_matches_the_smoothed_auc_rmse_at_small_n():
    g = np.random.default_rng(0)
    y = np.r_[np.ones(150, int), np.zeros(150, int)]
    s = g.random(300)
    pos, neg = s[y == 1], s[y == 0]
    exact = float(np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :]))
    vals = np.array([privstats.roc_curve(y, s, epsilon=0.25, grid=256, rng=r)[-1].value for r in range(RUNS)])
    rmse = float(np.sqrt(np.mean((vals - exact) ** 2)))
    best = privstats.plan("roc_curve", n=300, epsilon=0.25, grid=256, model="central", warn=False).best
    # the RMSE over 60 seeds has relative sd ≈ 1/√(2·60) = 0.09: four of them either side
    assert 0.73 <= best.stderr / rmse <= 1.37, (best.stderr, rmse)
    assert "isotonic" in best.note
