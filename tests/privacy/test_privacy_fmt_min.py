"""``method="fmt"`` returns the tighter of FMT21's two published closed forms (Thm 3.1 and the
authors' code), and stays a valid bound: never below the exact divergence of shuffled binary
randomized response, computed exactly (binomial convolutions, worst case over the other users)."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.privacy.amplification import shuffled_epsilon


def _forms(e0, n, delta):
    a = 8 * math.sqrt(math.exp(e0) * math.log(4 / delta)) / math.sqrt(n)
    c = 8 * math.exp(e0) / n
    e = math.log(1 + a + c)
    code = math.log(1 + (1 - math.exp(-e0)) / (1 + math.exp(-e0 - e)) * (a + c))
    thm = math.log(1 + (math.exp(e0) - 1) / (math.exp(e0) + 1) * (a + c))
    return code, thm


def _exact_rr_delta(eps, e0, n):
    """max over the other users' ones-count m of the hockey-stick divergence of the shuffled ones-count."""
    p = 1 / (1 + math.exp(e0))  # flip probability of binary RR
    worst = 0.0
    for m in range(0, n, max(1, n // 60)):
        base = np.convolve(
            stats.binom.pmf(np.arange(m + 1), m, 1 - p), stats.binom.pmf(np.arange(n - m), n - 1 - m, p)
        )
        P = np.convolve(base, [1 - p, p])  # first user holds 1
        Q = np.convolve(base, [p, 1 - p])  # first user holds 0
        e = math.exp(eps)
        worst = max(worst, np.maximum(P - e * Q, 0).sum(), np.maximum(Q - e * P, 0).sum())
    return worst


@pytest.mark.parametrize(
    "e0,n,delta", [(0.5, 1000, 1e-2), (1.0, 2000, 1e-2), (1.0, 3000, 1e-3), (2.0, 3000, 1e-2)]
)
def test_fmt_is_the_minimum_and_never_below_exact(e0, n, delta):
    code, thm = _forms(e0, n, delta)
    eps = shuffled_epsilon(e0, n, delta, method="fmt")
    assert eps == pytest.approx(min(code, thm, e0), rel=1e-12)
    assert eps < code  # strictly tighter than the previous (code) form
    assert _exact_rr_delta(eps, e0, n) <= delta
