"""Local Kendall tau-b on discrete data with ties (issue 26, item 4).

Before: on statsmodels' ``fair`` (n = 6,366), ``kendall_tau(rate_marriage, religious, epsilon=0.5,
model="local")`` gave 1 with stderr 212.9: the delta method divided by noisy non-tie fractions near
0 (floored at 1e-3).  Now each non-tie fraction is guarded at one noise sd and the stderr is the
spread of the guarded ratio over Gaussian draws of (tau-a, non-tie x, non-tie y) with their joint
plug-in covariance.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import privstats

PAIRS = [
    ("rate_marriage", "religious", ((1, 6), (1, 5))),
    ("age", "yrs_married", ((17.5, 42), (0.5, 23))),
]


@pytest.mark.parametrize("a,b,bounds", PAIRS)
def test_local_tau_b_with_ties_has_honest_stderr_and_coverage(a, b, bounds):
    sm = pytest.importorskip("statsmodels.api")
    df = sm.datasets.fair.load_pandas().data
    x, y = df[a].to_numpy(float), df[b].to_numpy(float)
    truth = stats.kendalltau(x, y).statistic
    reps = 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ests = [
            privstats.kendall_tau(x, y, epsilon=0.5, model="local", bounds=bounds, rng=r) for r in range(reps)
        ]
    raw = np.array([e.details.get("unbiased", e.value) for e in ests])
    se = np.array([e.stderr for e in ests])
    assert se.max() < 1.0  # was 212.9
    assert 0.7 <= se.mean() / raw.std(ddof=1) <= 1.5
    covered = np.mean([lo <= truth <= hi for lo, hi in (e.ci() for e in ests)])
    assert covered >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)
