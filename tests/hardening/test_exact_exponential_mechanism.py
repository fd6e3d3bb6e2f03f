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


def test_joint_mechanism_samples_its_exact_law():
    """JointExp on 4 points, 2 quantiles: the (interval, interval) frequencies of 30,000 draws
    against the law enumerated here from the definition (chi-square)."""
    import math

    from scipy import stats

    from privstats.cdf.quantiles import JOINT_WEIGHT_ERROR, joint_exponential_quantiles

    x = np.array([0.1, 0.2, 0.6, 0.9])
    qs = np.array([0.3, 0.7])
    eps, n = 2.0, x.size
    scale = (eps - 8 * qs.size * JOINT_WEIGHT_ERROR) / 4.0  # replace-one sensitivity 2
    edges = np.concatenate([[0.0], x, [1.0]])
    lens = np.diff(edges)
    targets = np.diff(np.concatenate([[0.0], qs, [1.0]])) * n

    def phi(j, g):
        return math.exp(-scale * abs(g - targets[j]))

    law = {}
    for i1 in range(n + 1):
        for i2 in range(i1, n + 1):
            vol = lens[i1] * lens[i2] if i1 < i2 else lens[i1] ** 2 / 2
            law[(i1, i2)] = vol * phi(0, i1) * phi(1, i2 - i1) * phi(2, n - i2)
    total = sum(law.values())
    draws = np.array(
        [joint_exponential_quantiles(x, qs, epsilon=eps, bounds=(0, 1), rng=s) for s in range(30_000)]
    )
    cells = np.searchsorted(x, draws)  # interval index of each output
    keys = sorted(law)
    observed = np.array([np.sum((cells[:, 0] == a) & (cells[:, 1] == b)) for a, b in keys])
    expected = np.array([law[k] / total for k in keys]) * len(draws)
    keep = expected >= 5
    chi2 = np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep])
    pooled_obs, pooled_exp = observed[~keep].sum(), expected[~keep].sum()
    if pooled_exp > 0:
        chi2 += (pooled_obs - pooled_exp) ** 2 / max(pooled_exp, 1e-12)
    dof = int(keep.sum()) - (0 if pooled_exp > 0 else 1)
    assert stats.chi2.sf(chi2, dof) > 1e-3
