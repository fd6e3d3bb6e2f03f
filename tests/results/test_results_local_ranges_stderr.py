"""Local (flat-oracle) range counts: the stderr's plug-in counts sum to n (issue 26).

The plug-in counts behind the exact variance were the noisy counts clipped at 0; where the noise
exceeds the counts (n = 300, ε = 0.5, 16 codes, most users in a few of them, as the visit counts of
statsmodels' randhie) they summed to about twice n and the reported stderr was 1.6x the measured
spread.  Clipped, with the publicly empty padding cells at 0 and rescaled to n, they give the spread.
"""

from __future__ import annotations

import numpy as np

import privstats

RUNS = 200


def test_prefix_stderr_matches_the_spread_on_peaked_counts_at_small_n():
    g = np.random.default_rng(3)
    p = 0.55 ** np.arange(13)
    x = g.choice(13, size=300, p=p / p.sum())  # 13 codes: three padding cells in the 16-cell oracle
    vals, ses = [], []
    for r in range(RUNS):
        est = privstats.range_counts(x, domain=13, epsilon=0.5, model="local", rng=100 + r)
        vals.append(est.unclipped)
        ses.append(est.stderr)
    sd = np.asarray(vals).std(axis=0, ddof=1)
    ratio = float(np.sqrt(np.mean(np.square(ses))) / np.sqrt(np.mean(sd**2)))
    # the spread of 200 draws is known to about 1/√(2·200) = 5%; four of them either side
    assert 0.8 <= ratio <= 1.2, ratio
