"""Curator-side noise: exact discrete Laplace on counts and snapped real statistics."""

import math
from fractions import Fraction

import numpy as np
import pytest

from privstats.central import add_count_noise, add_real_noise, discrete_laplace_variance, real_noise_scale
from privstats.privacy.audit import epsilon_lower_bound


def test_count_noise_mean_and_variance_match_discrete_laplace():
    eps, n = 0.5, 200_000
    noisy = add_count_noise(np.full(n, 100), eps, rng=1)
    var = discrete_laplace_variance(1 / eps)
    assert abs(noisy.mean() - 100) < 5 * math.sqrt(var / n)
    # variance of the sample variance: (m4 - var^2)/n; discrete Laplace m4 <= 6 var^2 (continuous kurtosis 6)
    assert abs(noisy.var() - var) < 5 * math.sqrt(5 * var**2 / n)


def test_count_noise_audit_passes_real_and_catches_under_noised():
    eps, trials = 1.0, 40_000
    real_a = add_count_noise(np.zeros(trials, dtype=int), eps, rng=2)
    real_b = add_count_noise(np.ones(trials, dtype=int), eps, rng=3)
    assert epsilon_lower_bound(real_a, real_b) <= eps
    # under-noised: calibrated to half the sensitivity, i.e. really 2ε
    weak_a = add_count_noise(np.zeros(trials, dtype=int), 2 * eps, rng=4)
    weak_b = add_count_noise(np.ones(trials, dtype=int), 2 * eps, rng=5)
    assert epsilon_lower_bound(weak_a, weak_b) > eps


def test_real_noise_snapping_accounts_for_rounding():
    scale, std = real_noise_scale(1.0, 1.0, 0.25)
    assert scale == Fraction(5, 1)  # 1/0.25 steps + 1 for rounding
    assert std == pytest.approx(0.25 * math.sqrt(discrete_laplace_variance(5.0)))
    vals = np.array([add_real_noise(0.3, 1.0, sensitivity=1.0, granularity=0.25, rng=s)[0] for s in range(3)])
    assert np.allclose(vals / 0.25, np.round(vals / 0.25))


def test_real_noise_unbiased_with_stated_std():
    value, n = 0.123456, 2000
    out, std = add_real_noise(np.full(n, value), 2.0, sensitivity=1.0, rng=7)
    assert abs(out.mean() - value) < 5 * std / math.sqrt(n) + 1.0 / 2**20
    assert std == pytest.approx(math.sqrt(2) / 2.0, rel=1e-3)  # ≈ continuous Laplace(1/ε)


def test_bad_input_named():
    with pytest.raises(ValueError, match="epsilon"):
        add_count_noise([1, 2], 0)
    with pytest.raises(ValueError, match="sensitivity"):
        add_count_noise([1, 2], 1.0, sensitivity=0)
    with pytest.raises(ValueError, match="counts"):
        add_count_noise([1.5], 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        add_real_noise(1.0, 1.0, sensitivity=-1)
    with pytest.raises(ValueError, match="value"):
        add_real_noise(np.nan, 1.0, sensitivity=1)
