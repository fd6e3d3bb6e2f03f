"""The audit tool itself: valid on a mechanism of known ε, decisive on a weaker one, multi-dimensional outputs."""

import math

import numpy as np
import pytest

from privstats.privacy.audit import epsilon_lower_bound, expected_epsilon_lower_bound


def _binary_rr(eps, bit, trials, rng):
    keep = math.exp(eps) / (1 + math.exp(eps))
    return np.where(rng.random(trials) < keep, bit, 1 - bit)


def test_bound_is_below_the_true_epsilon_and_near_it_with_many_trials():
    rng = np.random.default_rng(11)
    a, b = _binary_rr(1.0, 0, 20_000, rng), _binary_rr(1.0, 1, 20_000, rng)
    bound = epsilon_lower_bound(a, b)
    # expected-count prediction 0.94; the bound may fall short by sampling noise, never exceed 1 (w.p. 1 - alpha)
    assert 0.8 < bound <= 1.0


def test_expected_bound_matches_the_closed_form_limit():
    p = math.exp(2.0) / (1 + math.exp(2.0))
    assert expected_epsilon_lower_bound([0, 1], [p, 1 - p], [1 - p, p], 10**12) == pytest.approx(
        2.0, abs=0.01
    )
    # fewer trials: strictly smaller (the confidence interval costs something)
    assert expected_epsilon_lower_bound([0, 1], [p, 1 - p], [1 - p, p], 1000) < 1.9


def test_delta_is_subtracted():
    rng = np.random.default_rng(12)
    a, b = _binary_rr(2.0, 0, 20_000, rng), _binary_rr(2.0, 1, 20_000, rng)
    assert epsilon_lower_bound(a, b, delta=0.5) < epsilon_lower_bound(a, b) - 0.5


def test_multidimensional_outputs_need_a_statistic():
    rng = np.random.default_rng(13)
    # output = (noise coordinate, the randomized-response bit): only the second coordinate differs
    a = np.stack([rng.integers(0, 5, 20_000), _binary_rr(2.0, 0, 20_000, rng)], axis=1)
    b = np.stack([rng.integers(0, 5, 20_000), _binary_rr(2.0, 1, 20_000, rng)], axis=1)
    with pytest.raises(ValueError, match="statistic"):
        epsilon_lower_bound(a, b)
    assert epsilon_lower_bound(a, b, statistic=lambda o: o[:, 1]) > 1.8
    # the irrelevant coordinate alone shows nothing
    assert epsilon_lower_bound(a, b, statistic=lambda o: o[:, 0]) < 0.2


def test_continuous_outputs_use_tail_thresholds():
    """Laplace(0, 1/ε) vs Laplace(1, 1/ε): the best events are tails; the search finds them."""
    rng = np.random.default_rng(14)
    for eps, low, high in ((1.0, 0.6, 1.0), (3.0, 2.0, 3.0)):
        a = rng.laplace(0.0, 1 / eps, 20_000)
        b = rng.laplace(1.0, 1 / eps, 20_000)
        assert low < epsilon_lower_bound(a, b) <= high


def test_bad_input_named():
    with pytest.raises(ValueError, match="samples_a"):
        epsilon_lower_bound([], [1, 2])
    with pytest.raises(ValueError, match="same length"):
        expected_epsilon_lower_bound([0, 1], [0.5, 0.5], [1.0], 10)
