"""Leak 5: ``local_epsilon_for`` and ``shuffled_epsilon`` are consistent.

Before the fix ``local_epsilon_for(method="balle", k=...)`` returned an ε0 that
``shuffled_epsilon`` then rejected (outside Thm 3.1's ε <= 1, or a rounding error above the
target) in 4 of the 106 round trips of the grid below.  Property: every returned ε0 is
accepted and certifies at most the requested ε.
"""

import itertools

import pytest

from privstats.privacy.amplification import local_epsilon_for, shuffled_epsilon

GRID = list(
    itertools.product(
        [0.05, 0.1, 0.3, 0.5, 0.99, 1.0, 1.5],
        [1_000, 10_000, 123_457, 10**6],
        [1e-4, 1e-6, 1e-9],
        [2, 3, 16, 1000],
    )
)


def test_balle_round_trip_is_consistent():
    checked, failures = 0, []
    for eps, n, delta, k in GRID:
        try:
            e0 = local_epsilon_for(eps, n, delta, method="balle", k=k)
        except ValueError:
            continue
        checked += 1
        try:
            back = shuffled_epsilon(e0, n, delta, method="balle", k=k)
        except ValueError as err:
            failures.append((eps, n, delta, k, e0, str(err)))
            continue
        if back > eps:
            failures.append((eps, n, delta, k, e0, back))
    assert checked > 100 and failures == []


@pytest.mark.parametrize("method", ["fmt", "fmt-numeric", "balle"])
def test_other_methods_round_trip(method):
    for eps, n, delta in itertools.product([0.1, 1.0], [10_000, 10**6], [1e-6]):
        try:
            e0 = local_epsilon_for(eps, n, delta, method=method)
        except ValueError:
            continue
        assert shuffled_epsilon(e0, n, delta, method=method) <= eps
