"""All-prefix variances and covariance of a hierarchical histogram equal the per-range exact formula."""

import numpy as np
import pytest

from privstats.local import HierarchicalHistogram

CONFIGS = [
    (16, 2, "grr", "users"),
    (16, 2, "oue", "budget"),
    (27, 3, "olh", "users"),
    (20, 4, "auto", "users"),
    (13, 2, "grr", "budget"),
    (64, 4, "oue", "users"),
    (5, 8, "grr", "users"),
]


def _setup(d, b, oracle, split, seed=0):
    rng = np.random.default_rng(seed)
    hh = HierarchicalHistogram(d, 1.0, branching=b, oracle=oracle, split=split)
    counts = rng.integers(0, 50, d)
    counts[d // 4] = 0
    n = int(counts.sum())
    sizes = (
        rng.multinomial(n, np.full(hh.height, 1 / hh.height)) if split == "users" else np.full(hh.height, n)
    )
    return hh, counts, n, sizes


def _range_variance(hh, counts, n, sizes, lo, hi):
    return hh.linear_variance(counts, hh.range_coefficients(n, lo, hi, sizes)[0], sizes)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"d{c[0]}-b{c[1]}-{c[2]}-{c[3]}")
def test_prefix_variances_equal_range_query_formula(cfg):
    hh, counts, n, sizes = _setup(*cfg)
    ref = np.array([_range_variance(hh, counts, n, sizes, 0, i) for i in range(hh.domain_size)])
    assert np.allclose(hh.prefix_variances(counts, sizes), ref, rtol=1e-10, atol=1e-9 * ref.max())
    cov = hh.prefix_covariance(counts, sizes)
    assert np.allclose(np.diag(cov), ref, rtol=1e-10, atol=1e-9 * ref.max())
    for i, j in [(hh.domain_size - 2, hh.domain_size // 3), (3, 1)]:  # Var(P_i − P_j) = Var(range j+1..i)
        assert cov[i, i] + cov[j, j] - 2 * cov[i, j] == pytest.approx(
            _range_variance(hh, counts, n, sizes, j + 1, i), rel=1e-9
        )


def test_prefix_counts_unbiased_with_exact_variance_by_monte_carlo():
    hh = HierarchicalHistogram(16, 1.0, branching=2, oracle="grr", split="users")
    counts = np.random.default_rng(1).multinomial(3000, np.linspace(1, 3, 16) / np.linspace(1, 3, 16).sum())
    truth = np.cumsum(counts)
    gen, reps = np.random.default_rng(7), 800
    draws, var = np.empty((reps, 16)), np.zeros(16)
    for r in range(reps):
        state = hh.simulate_counts(counts, gen)
        draws[r] = hh.prefix_counts(state).value
        var += hh.prefix_variances(counts, state.level_sizes) / reps  # E[Var | split] = total variance
    z = (draws.mean(axis=0) - truth)[:-1] / np.sqrt(var[:-1] / reps)
    assert np.all(np.abs(z) < 5)
    ratio = np.mean((draws - truth) ** 2, axis=0)[:-1] / var[:-1]  # known mean: chi2_reps / reps
    assert np.all(np.abs(ratio - 1) < 5 * np.sqrt(2 / reps))
    assert np.allclose(draws[:, -1], 3000)  # the whole domain is n exactly


def test_prefix_variances_reject_hadamard_levels():
    hh = HierarchicalHistogram(16, 1.0, oracle="hr")
    with pytest.raises(ValueError, match="oracle='grr'"):
        hh.prefix_variances(np.ones(16, dtype=int), np.full(hh.height, 4))
