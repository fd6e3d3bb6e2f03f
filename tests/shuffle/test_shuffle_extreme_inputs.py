"""Extreme public parameters of the shuffle protocol classes (issue 26, deliverable 6).

Before: ε = 1e6 raised OverflowError, ShuffledSum and Count-Min at n = 10^12 raised MemoryError
(the cell noise law Bin(n, γ) was tabulated over all n + 1 values), the Hadamard class named
domain_size for a bad k and 'method' for a bad calibration.  The windowed noise law and the
short-cut γ search must leave every ordinary calibration exactly as it was.
"""

from __future__ import annotations

import numpy as np
import pytest

from privstats.shuffle import (
    CountMinMultiMessage,
    HadamardMultiMessage,
    ShuffledKRR,
    ShuffledRAPPOR,
    ShuffledSum,
)
from privstats.shuffle import calibrate as C
from privstats.shuffle.summation import _sum_delta, _sum_gamma


def _plain_sum_gamma(trials, epsilon, delta):
    """The bisection as it was before the known-good short cut."""
    lo, hi = 0.0, 0.5
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        if _sum_delta(epsilon, trials, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize(("trials", "epsilon"), [(800, 1.0), (8000, 8.0), (1600, 0.5), (160, 1.0)])
def test_sum_gamma_is_the_plain_bisection(trials, epsilon):
    assert _sum_gamma(trials, epsilon, 1e-6) == _plain_sum_gamma(trials, epsilon, 1e-6)


@pytest.mark.parametrize(("n", "gamma"), [(10**5, 1e-3), (10**6, 2e-5), (200_000, 0.3)])
def test_windowed_cell_law_gives_the_same_delta(monkeypatch, n, gamma):
    windowed = C.countmin_delta(1.0, n, gamma, 3)
    monkeypatch.setattr(C, "CELL_WINDOW", 1 << 40)  # every value 0..n, as before
    assert C.countmin_delta(1.0, n, gamma, 3) == windowed


def test_huge_n_calibrates_without_tabulating_n_values():
    sm = ShuffledSum(n=10**12, epsilon=1.0, delta=1e-6)
    mean_blanket = sm.gamma * sm.n * sm.blanket
    assert 1 < mean_blanket < 1e6  # the blanket's expected ones do not grow with n
    assert 0 < C.countmin_delta(1.0, 10**12, 1e-9, 3) < 1


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: ShuffledKRR(4, n=200, epsilon=1e6, delta=1e-6), "epsilon"),
        (lambda: ShuffledRAPPOR(4, n=200, epsilon=1e6, delta=1e-6), "epsilon"),
        (lambda: ShuffledRAPPOR(4, n=200, epsilon=8.0, delta=1e-6, epsilon0=1e6), "epsilon0"),
        (lambda: ShuffledSum(n=200, epsilon=1e6, delta=1e-6), "epsilon"),
        (lambda: CountMinMultiMessage(8, n=10**12, epsilon=8.0, delta=1e-6), "n"),
        (lambda: CountMinMultiMessage(8, n=200, epsilon=8.0, delta=1e-6, buckets=2**40), "buckets"),
        (lambda: CountMinMultiMessage(8, n=200, epsilon=8.0, delta=1e-6, calibration="bogus"), "calibration"),
        (lambda: CountMinMultiMessage(8, n=200, epsilon=8.0, delta=1e-6, estimator="max"), "estimator"),
        (lambda: HadamardMultiMessage(8, n=200, epsilon=8.0, delta=1e-6, k=10**12), "k"),
        (lambda: HadamardMultiMessage(8, n=200, epsilon=8.0, delta=1e-6, calibration="bogus"), "calibration"),
    ],
)
def test_bad_public_parameters_get_a_value_error_naming_them(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_ragged_sets_name_the_argument():
    proto = HadamardMultiMessage(8, n=200, epsilon=8.0, delta=1e-6)
    with pytest.raises(ValueError, match="sets"):
        proto.simulate(np.array([[0, 1], [2]], dtype=object), rng=0)
    with pytest.raises(ValueError, match="sets"):
        proto.encode_batch([[0, 1], [2]], rng=0)
