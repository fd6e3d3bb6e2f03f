"""The ROC curve's AUC interval allows the grid's bias scale read off the two released class curves
(the shared-cell share over 3k, as the local AUC's), not the planner's 1/(3k²) (issue 26).

Run at every (n, ε) cell of the real-data table, the local curve on randhie's peaked scores at
(300, 2) covered 0.900 over 400 seeds with 1/(3k²) (bias 0.96 sd): both classes crowd the top cells,
so far more pairs share a cell than at uniform histograms.  With the released share it covers 0.9625.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import coverage_real_experiment

from privstats.stats.distribution.roc import _roc_cell_pair_bias
from privstats.stats.pairwise.plumbing import _auc_linear_family_bias


@pytest.mark.parametrize("k", [2, 4, 16])
def test_scale_is_the_linear_family_bound_at_uniform_curves(k):
    uniform = np.arange(1, k + 1) / k
    assert _roc_cell_pair_bias(uniform, uniform) == pytest.approx(_auc_linear_family_bias(k))
    top = np.r_[np.zeros(k - 1), 1.0]  # both classes in the last cell: every pair shares it
    assert _roc_cell_pair_bias(top, top) == pytest.approx(1 / (3 * k))


def test_local_roc_on_randhie_covers_at_its_table_cell():
    R = coverage_real_experiment()
    r = R.run_cell({"data": "randhie", "n": 300, "eps": 2.0, "stat": "roc_curve", "model": "local"}, 400)
    se = np.sqrt(0.95 * 0.05 / r["runs"])
    assert r["runs"] == 400
    assert 0.93 - 2 * se <= r["coverage"] <= 0.99 + 2 * se, r["coverage"]
    assert 0.7 <= r["stderr_ratio"] <= 1.5
