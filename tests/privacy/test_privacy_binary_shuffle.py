"""Shuffled binary randomized response: the minority-coins bound against the exact worst case.

Issue 22 deliverable 7: for k = 2 above the exact range the blanket pair was 1.2–2x exact in ε.  The
block bound must never be below the exact worst case over the other users' values, and within 5%.
"""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.privacy.amplification import shuffled_epsilon
from privstats.privacy.binary_shuffle import MINORITY_MAX, binary_minority_delta, binary_rr_exact_delta
from privstats.privacy.clone_pairs import smallest_eps
from privstats.privacy.krr_shuffle import BINARY_EXACT_MAX, krr_shuffle_delta


def _worst_by_hand(eps, e0, n):
    """Every number m of other users holding 1, the count of ones, both directions (O(n^3))."""
    keep = math.exp(e0) / (1 + math.exp(e0))
    e = math.exp(eps)
    worst = 0.0
    for m in range(n):
        others = np.convolve(
            stats.binom.pmf(np.arange(n - m), n - 1 - m, 1 - keep), stats.binom.pmf(np.arange(m + 1), m, keep)
        )
        one = np.append(others * (1 - keep), 0) + np.insert(others * keep, 0, 0)
        zero = np.append(others * keep, 0) + np.insert(others * (1 - keep), 0, 0)
        worst = max(worst, np.maximum(one - e * zero, 0).sum(), np.maximum(zero - e * one, 0).sum())
    return worst


@pytest.mark.parametrize("n,e0", [(2, 1.0), (13, 0.5), (41, 2.0), (120, 3.0)])
def test_never_below_the_enumeration(n, e0):
    for eps in np.linspace(0.0, e0, 9)[:-1]:
        assert binary_minority_delta(eps, e0, n) >= _worst_by_hand(eps, e0, n) - 1e-13


@pytest.mark.parametrize("n", [1000, 3001])
def test_within_5_percent_of_exact_in_epsilon(n):
    ratios = []
    for e0 in (0.5, 1.0, 3.0, 5.0):
        for delta in (1e-2, 1e-3, 1e-6):
            exact = smallest_eps(lambda e, e0=e0: binary_rr_exact_delta(e, e0, n), delta, e0, 1e-7)
            bound = smallest_eps(lambda e, e0=e0: binary_minority_delta(e, e0, n), delta, e0, 1e-7)
            assert bound >= exact * (1 - 1e-6)
            if exact > 0.001:
                ratios.append(bound / exact)
    assert max(ratios) <= 1.05


def test_the_blanket_pair_it_replaces_was_looser():
    n, e0, delta = 3001, 3.0, 1e-3
    exact = smallest_eps(lambda e: binary_rr_exact_delta(e, e0, n), delta, e0, 1e-7)
    blanket = smallest_eps(lambda e: krr_shuffle_delta(e, e0, n, 2, exact=True), delta, e0, 1e-7)
    assert blanket > 1.3 * exact


def test_the_accountant_uses_it_above_the_exact_range():
    n = BINARY_EXACT_MAX + 1001
    assert n <= MINORITY_MAX
    for e0, delta in ((1.0, 1e-6), (3.0, 1e-3)):
        exact = smallest_eps(lambda e, e0=e0: binary_rr_exact_delta(e, e0, n), delta, e0, 1e-7)
        claimed = shuffled_epsilon(e0, n, delta, k=2, randomizer="krr")
        assert exact * (1 - 1e-6) <= claimed <= 1.05 * exact
    assert krr_shuffle_delta(0.05, 1.0, n, 2) == binary_minority_delta(0.05, 1.0, n)


def test_edges():
    assert binary_minority_delta(1.0, 1.0, 100) == 0.0
    for n in (1000, 100_000):  # no noise at all (e^ε0 would overflow): nothing hidden
        assert krr_shuffle_delta(1.0, 800.0, n, 2) == 1.0
    assert binary_minority_delta(-0.1, 1.0, 100) == 1.0
    # one user: randomized response itself, (p − e^ε q)
    assert binary_minority_delta(0.2, 1.0, 1) == pytest.approx(
        (math.e - math.exp(0.2)) / (math.e + 1), rel=1e-8
    )
