"""Regressions from the review of the core: central noise limits, numeric types of guarantees."""

import math
from fractions import Fraction

import numpy as np
import pytest

from privstats.central import add_count_noise, add_real_noise, discrete_laplace_variance
from privstats.privacy import ZCDP, ApproxDP, BudgetLedger, PureDP


def test_real_noise_refuses_values_beyond_the_exact_grid():
    """|value|/granularity >= 2^51 used to overflow int64 silently (1e14 came back as about -8.8e12)."""
    with pytest.raises(ValueError, match="value is too large for granularity"):
        add_real_noise(1e14, 1.0, sensitivity=1.0, rng=0)
    noisy, std = add_real_noise(1e14, 1.0, sensitivity=1.0, granularity=2.0**-3, rng=0)
    assert abs(noisy - 1e14) < 60 * std


def test_tiny_epsilon_names_epsilon():
    with pytest.raises(ValueError, match="epsilon"):
        add_count_noise([1, 2], 1e-20, rng=0)
    with pytest.raises(ValueError, match="epsilon"):
        add_real_noise(1.0, 1e-12, sensitivity=1.0, rng=0)


def test_count_noise_rejects_counts_that_wrap():
    with pytest.raises(ValueError, match="counts"):
        add_count_noise(np.array([2**63 + 1], dtype=np.uint64), 1.0, rng=0)


def test_numpy_sensitivity_is_accepted():
    a, _ = add_real_noise(1.0, 1.0, sensitivity=np.float32(1.0), rng=0)
    b, _ = add_real_noise(1.0, 1.0, sensitivity=1.0, rng=0)
    assert a == b


def test_discrete_laplace_variance_accurate_at_large_scale():
    for scale in [1e6, 1e9, 1e12]:
        a = Fraction(math.exp(-1 / scale))
        one_minus_a = Fraction(-math.expm1(-1 / scale))  # exact 1 − a for this float a up to 1 ulp of 1 − a
        exact = 2 * a / one_minus_a**2
        assert discrete_laplace_variance(scale) == pytest.approx(float(exact), rel=1e-9)
        assert discrete_laplace_variance(scale) == pytest.approx(2 * scale**2, rel=1e-6)


def test_guarantees_accept_numpy_and_fraction_numbers():
    assert PureDP(np.float32(0.5)) == PureDP(0.5)
    assert PureDP(np.int64(1)).epsilon == 1.0 and isinstance(PureDP(np.int64(1)).epsilon, float)
    assert ApproxDP(Fraction(1, 2), np.float64(1e-6)) == ApproxDP(0.5, 1e-6)
    assert ZCDP(np.float64(0.25)).rho == 0.25
    for bad in [True, "1", float("nan"), -1]:
        with pytest.raises(ValueError, match="epsilon"):
            PureDP(bad)
    led = BudgetLedger(PureDP(np.float64(1.0)))
    led.spend(PureDP(np.float32(0.5)), "a")
    assert BudgetLedger.from_json(led.to_json()).entries == [("a", PureDP(0.5))]
