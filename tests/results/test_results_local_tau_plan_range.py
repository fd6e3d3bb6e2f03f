"""Local Kendall tau-b planner (issue 26, item 5): on a peaked real variable no point prediction from
public parameters is right (tau-b's noise is sd(tau-a)/√(ν_x ν_y), and the binned non-tie fraction ν of
a variable piled into one bin is near 0), so the plan gives a best-to-worst range over data shapes, from
uniform margins (ν = 1 − 1/k) to both non-tie fractions at the release's guard (one noise sd), and the
measured RMSE lies in it.

Data: statsmodels ``randhie``, x = lpi (bounds 0-8), z = disea (0-60: 96% of users in the lower of the
k = 2 bins), n = 5,000 rows drawn as in experiments/coverage_real.py, ε = 0.5.  The point prediction
(ν = ½) was 0.31x the measured RMSE there.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privstats

sm = pytest.importorskip("statsmodels.api")
pytest.importorskip("scipy")


def test_local_tau_plan_range_holds_the_rmse_on_a_peaked_variable():
    from scipy.stats import kendalltau

    r = sm.datasets.randhie.load_pandas().data
    idx = np.random.default_rng(5000).choice(len(r), 5000, replace=False)
    x, z = r.lpi.to_numpy()[idx], r.disea.to_numpy()[idx]
    exact = float(kendalltau(x, z).statistic)
    runs = 60
    vals = np.array(
        [
            privstats.kendall_tau(
                x, z, epsilon=0.5, model="local", bounds=((0.0, 8.0), (0.0, 60.0)), rng=4000 + s
            ).unclipped
            for s in range(runs)
        ]
    )
    rmse = float(np.sqrt(np.mean((vals - exact) ** 2)))
    # the RMSE estimate's relative SE is about 1/√(2·runs) ≈ 0.09 (less with the bias); 4 of them each side
    rel = 4 / math.sqrt(2 * runs)
    plan = privstats.plan("kendall_tau", n=5000, epsilon=0.5, model="local", warn=False)
    best = plan.best
    assert best.stderr_range is not None
    lo, hi = best.stderr_range
    assert lo <= best.stderr <= hi
    assert lo <= rmse * (1 - rel) and rmse * (1 + rel) <= hi, (lo, rmse, hi)
    assert "over data shapes" in best.note
    # the table says the number is at the option's stated shape (non-tie fractions ½), not at uniform data
    assert "stderr at the stated data shape" in plan.table()
