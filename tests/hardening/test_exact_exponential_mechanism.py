"""Leak 4(c): with rng=None the exponential-mechanism quantile samples exactly.

The interval law of :func:`exact_exponential_interval` is compared with its exact probabilities
len_j β^(-|j - t|) / Z (chi-square, 60 000 draws through a seeded source so the test is
reproducible; the rng=None path calls the same function with the OS CSPRNG).  The same test
rejects the law of twice the ε (an under-noised mechanism)."""

import math
from fractions import Fraction

import numpy as np
from scipy import stats

from privstats.cdf.quantiles import _base_below_exp, exact_exponential_interval
from privstats.privacy.randomness import as_source


def _law(left, right, q, eps):
    n = left.size - 1
    t = math.floor(Fraction(q) * n)
    beta = float(_base_below_exp(eps / 2))
    w = (right - left) * beta ** -np.abs(np.arange(left.size) - t)
    return w / w.sum()


def test_interval_law_is_exact_and_under_noising_is_caught():
    x = np.sort(np.random.default_rng(0).uniform(0, 1, 7))
    left = np.concatenate([[0.0], x])
    right = np.concatenate([x, [1.0]])
    src = as_source(1)
    draws = np.array([exact_exponential_interval(left, right, 0.5, 1.5, src) for _ in range(60_000)])
    obs = np.bincount(draws, minlength=left.size)
    assert stats.chisquare(obs, _law(left, right, 0.5, 1.5) * draws.size).pvalue > 1e-3
    assert stats.chisquare(obs, _law(left, right, 0.5, 3.0) * draws.size).pvalue < 1e-6


def test_base_is_below_e_to_the_half_epsilon():
    for eps in (1e-9, 0.1, 1.0, 5.0):
        b = _base_below_exp(eps / 2)
        assert b >= 1 and float(b) <= math.exp(eps / 2)
