"""Tree mechanisms: Lemma 1 / Eq. 9 by enumeration, noise drawn once, unbiasedness and exact variance."""

import numpy as np
import pytest
import scipy.stats as st

import privstats
from privstats.cdf.tree import (
    BaryTreeMechanism,
    BinaryTreeMechanism,
    choose_mechanism,
    cumulative_counts,
    path_matrix,
    signed_block_decomposition,
    uniform_grid,
)


def _vec(chi, size):
    v = np.zeros(size, dtype=np.int64)
    for k, s in chi.items():
        v[k] = s
    return v


@pytest.mark.parametrize("L", range(1, 7))
def test_every_interval_is_at_most_L_plus_1_signed_blocks(L):
    M = path_matrix(L)
    N = 1 << L
    worst = 0
    for a in range(N):
        for b in range(a, N):
            chi = signed_block_decomposition(a, b, L)
            ind = np.zeros(N, dtype=np.int64)
            ind[a : b + 1] = 1
            assert np.array_equal(M @ _vec(chi, M.shape[1]), ind)
            assert set(chi.values()) <= {-1, 1}
            worst = max(worst, len(chi))
            if b == N - 1:  # suffixes (add/remove): Lemma 1 bound
                assert len(chi) <= (L + 2) // 2 + (0 if a == 0 else 1)
    assert worst <= L + 1


def test_naive_prefix_differences_would_exceed_the_bound():
    """The signed decomposition matters: prefix(b) - prefix(a) with positive blocks needs more than L+1."""
    L = 6
    N = 1 << L
    naive = max(bin(b + 1).count("1") + bin(a).count("1") for a in range(N) for b in range(a, N))
    assert naive > L + 1


@pytest.mark.parametrize("L", [2, 3, 4])
def test_neighbouring_datasets_shift_at_most_sensitivity_node_noises(L):
    """Replace-one: the count vectors differ by +-1 on one interval of grid indices, which
    the mechanism's node noises absorb with at most `sensitivity` unit shifts."""
    N = 1 << L
    mech = BinaryTreeMechanism(N, 1.0)
    grid = np.arange(1, N + 1, dtype=float)
    base = np.array([1.0, 3.0, 3.0, float(N)])
    M = path_matrix(L)
    for old in range(1, N + 1):
        for new in range(1, N + 1):
            x1 = np.append(base, old)
            x2 = np.append(base, new)
            diff = cumulative_counts(x2, grid) - cumulative_counts(x1, grid)
            nz = np.flatnonzero(diff)
            if nz.size == 0:
                continue
            assert np.all(diff[nz] == diff[nz[0]]) and nz[-1] - nz[0] + 1 == nz.size
            chi = signed_block_decomposition(nz[0], nz[-1], L)
            assert np.array_equal(M @ (diff[nz[0]] * _vec(chi, M.shape[1])), diff)
            assert sum(abs(v) for v in chi.values()) <= mech.sensitivity


def test_bary_replace_changes_at_most_2h_nodes():
    mech = BaryTreeMechanism(27, 1.0, 3)
    grid = np.arange(1, 28, dtype=float)
    base = np.array([2.0, 5.0, 20.0])
    for old in range(1, 28):
        for new in range(1, 28):
            s1 = mech.statistic(cumulative_counts(np.append(base, old), grid))
            s2 = mech.statistic(cumulative_counts(np.append(base, new), grid))
            assert np.abs(s1 - s2).sum() <= mech.sensitivity


def _monte_carlo(mech, C, n, reps, seed):
    rng = np.random.default_rng(seed)
    return np.array([mech.estimate_counts(mech.release(C, rng=rng), n) for _ in range(reps)])


@pytest.mark.parametrize(
    "mech",
    [
        BinaryTreeMechanism(12, 2.0),
        BinaryTreeMechanism(16, 1.0, "add-remove"),
        BaryTreeMechanism(20, 1.0, 3),
        BaryTreeMechanism(16, 1.0, 4, "add-remove"),
    ],
    ids=lambda m: f"{m.name}-{m.neighbours}",
)
def test_unbiased_with_exact_variance(mech):
    reps = 3000
    C = np.cumsum(np.random.default_rng(0).poisson(4, mech.n_points))
    R = _monte_carlo(mech, C, int(C[-1]), reps, 1)
    var = mech.count_variance()
    z = (R.mean(axis=0) - C) / np.sqrt(var / reps)
    assert np.all(np.abs(z) < 5)
    ratio = R.var(axis=0, ddof=1) / var
    tol = 5 * np.sqrt(2 / (reps - 1)) * 1.6  # Laplace-type kurtosis inflates the variance of the variance
    assert np.all(np.abs(ratio - 1) < tol)


def test_under_noised_variant_is_caught():
    """Halving the node scale (a wrong sensitivity) is visible in the variance check."""
    mech = BinaryTreeMechanism(16, 1.0)
    weak = BinaryTreeMechanism(16, 2.0)  # same tree, half the scale
    C = np.arange(16)
    R = _monte_carlo(weak, C, 16, 3000, 2)
    assert np.all(R.var(axis=0, ddof=1) / mech.count_variance() < 0.5)


def test_noise_is_drawn_once():
    x = np.random.default_rng(3).uniform(0, 1, 500)
    res = privstats.ecdf(x, epsilon=0.5, bounds=(0, 1), grid=64, smoothing="none", rng=4)
    first = res.evaluate(0.5)
    again = np.array([res.evaluate(0.5) for _ in range(200)])
    assert np.all(again == first)  # repeated queries do not average the noise away
    assert np.all(res.evaluate(np.full(50, 0.5)) == first)


def test_auto_picks_the_smallest_exact_variance():
    for nb in ("replace", "add-remove"):
        auto = choose_mechanism(1024, 1.0, nb)
        binary = BinaryTreeMechanism(1024, 1.0, nb)
        assert auto.count_variance().mean() <= binary.count_variance().mean()
        for b in (2, 4, 16, 32):
            assert auto.count_variance().mean() <= BaryTreeMechanism(
                1024, 1.0, b, nb
            ).count_variance().mean() * (1 + 1e-9)


def test_large_epsilon_equals_scipy_ecdf():
    x = np.random.default_rng(5).integers(0, 50, 3000).astype(float)
    res = privstats.ecdf(x, epsilon=1e7, bounds=(0, 49), grid=49, smoothing="none", rng=6)
    ref = st.ecdf(x).cdf
    t = uniform_grid((0, 49), 49)
    assert np.allclose(res.evaluate(t), ref.evaluate(t), atol=1e-12)
    assert np.allclose(res.evaluate(t + 0.5), ref.evaluate(t), atol=1e-12)
    for m in ("binary", "b-ary:5"):
        r = privstats.ecdf(x, epsilon=1e7, bounds=(0, 49), grid=49, method=m, neighbours="add-remove", rng=7)
        assert np.allclose(r.evaluate(t), ref.evaluate(t), atol=1e-9)


def test_result_api_confidence_interval_and_quantile():
    x = np.random.default_rng(8).normal(0.5, 0.1, 20000).clip(0, 1)
    res = privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=512, rng=9)
    ci = res.confidence_interval(0.99)
    t = res.quantiles
    assert np.all(ci.low.evaluate(t) <= res.evaluate(t)) and np.all(res.evaluate(t) <= ci.high.evaluate(t))
    assert abs(res.quantile(0.5) - np.median(x)) < 0.01
    assert res.estimate.guarantee.epsilon == 1.0 and res.estimate.model == "central"
    assert np.all(np.diff(res.probabilities) >= 0)
