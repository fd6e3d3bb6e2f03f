"""h1 (random Fourier features), the exact objective, and h2 (MWEM) pieces."""

import itertools
import math

import numpy as np
import pytest

from privstats.summarization.features import (
    RandomFourierFeatures,
    marginal_gains,
    objective,
    rbf_kernel,
    rff_tail_bound,
    rff_term_variance,
)
from privstats.summarization.mwem import MWEMSketch, exponential_mechanism, quantize


def _data(seed=0, n=12, dim=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, dim))


@pytest.mark.parametrize("s", [0, 1, 4])
def test_exact_marginal_gain_equals_brute_force(s):
    X = _data(0, 10)
    V = _data(1, 7) + 0.5
    S, Z = X[:s], X[s:]
    gains = marginal_gains(Z, S, V, gamma=0.3)
    brute = np.array(
        [objective(np.vstack([S, z[None]]), V, 0.3) - (objective(S, V, 0.3) if s else 0.0) for z in Z]
    )
    assert np.allclose(gains, brute, atol=1e-12)


@pytest.mark.parametrize("s", [1, 3, 6])
def test_corrected_bid_is_affine_in_the_gain_and_the_printed_one_is_not(s):
    """The owners' score g̃ᵀh − (s/(s+1)) gᵀh (exact kernel: mean kernels) orders points as the true gain."""
    X = _data(2, 14)
    V = _data(3, 9) + 1.0
    S, Z = X[:s], X[s:]
    gains = marginal_gains(Z, S, V, gamma=0.4)
    to_target = rbf_kernel(Z, V, 0.4).mean(1)
    to_summary = rbf_kernel(Z, S, 0.4).mean(1)
    corrected = to_target - s / (s + 1) * to_summary
    printed = to_summary - s / (s + 1) * to_target  # Algorithm 3 step 6 as printed (swapped)
    resid = gains - 2.0 / (s + 1) * corrected
    assert np.ptp(resid) < 1e-12  # constant offset C(S) − 1/(s+1)²
    assert np.argmax(corrected) == np.argmax(gains)
    resid_printed = gains - 2.0 / (s + 1) * printed
    assert np.ptp(resid_printed) > 1e-3


def _rff_products(x, y, gamma, d, seeds, scale_gamma=1.0):
    out = []
    for seed in seeds:
        h1 = RandomFourierFeatures(x.size, d, gamma * scale_gamma, seed)
        hx, hy = h1.transform(np.stack([x, y]))
        out.append(hx @ hy)
    return np.array(out)


def test_rff_unbiased_within_exact_standard_error_and_wrong_bandwidth_caught():
    x, y = np.array([0.0, 0.5, -0.3]), np.array([0.8, -0.2, 0.1])
    gamma, d, reps = 0.5, 64, 400
    k = float(rbf_kernel(x[None], y[None], gamma)[0, 0])
    se = math.sqrt(float(rff_term_variance(k)) / d / reps)
    good = _rff_products(x, y, gamma, d, range(reps))
    assert abs(good.mean() - k) < 5 * se
    assert abs(good.var() / (rff_term_variance(k) / d) - 1) < 0.25  # variance formula (400 draws)
    wrong = _rff_products(x, y, gamma, d, range(reps), scale_gamma=0.5)  # ω ~ N(0, γI): the wrong kernel
    assert abs(wrong.mean() - k) > 5 * se


def test_rff_inner_products_within_hoeffding_bound():
    rng = np.random.default_rng(5)
    X = rng.normal(scale=0.7, size=(40, 4))
    d, gamma, t = 256, 0.5, 0.25
    K = rbf_kernel(X, X, gamma)
    iu = np.triu_indices(40, 1)
    viol = []
    for seed in range(10):
        H = RandomFourierFeatures(4, d, gamma, seed).transform(X)
        viol.append(np.abs((H @ H.T - K)[iu]) >= t)
    frac = np.mean(viol)
    bound = rff_tail_bound(d, t)  # 2 exp(−d t²/8) ≈ 0.27
    assert frac <= bound
    assert rff_tail_bound(d, 10.0) < 1e-300 and rff_tail_bound(1, 0.1) == 1.0


def test_quantize_unbiased_and_on_grid():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=20)
    L, reps = 8, 4000
    Q = quantize(np.tile(x, (reps, 1)), bound=1.0, grid=L, rng=1)
    assert set(np.unique(Q)) <= set(range(-L, L + 1, 2))
    y = (x + 1) * L / 2
    p = y - np.floor(y)
    se = (2.0 / L) * np.sqrt(p * (1 - p) / reps) + 1e-12  # one grid step η = 2/L times Bernoulli(p) sd
    assert np.all(np.abs(Q.mean(0) / L - x) <= 5 * se + 1e-12)


def test_mwem_product_form_update_equals_brute_force_joint():
    """Lemma 1: the MW update on the full joint over S^d stays a product; its marginals equal ours."""
    sketch = MWEMSketch(n_features=2, grid=2)  # S = {−1, 0, 1}, joint has 9 states
    S = sketch.values
    states = np.array(list(itertools.product(S, S)))
    joint = np.full(len(states), 1.0 / len(states))
    q = 5
    for i, mu in [(0, 3.0), (1, -2.0), (0, 4.5), (1, 1.0)]:
        w_joint = q * (joint @ states[:, i])
        joint = joint * np.exp(states[:, i] * (mu - w_joint) / (2 * q))
        joint /= joint.sum()
        sketch.update(i, mu, q)
    marg = [np.array([joint[states[:, j] == v].sum() for v in S]) for j in range(2)]
    assert np.allclose(np.exp(sketch.logw), np.stack(marg), atol=1e-12)
    assert np.allclose(joint, np.outer(marg[0], marg[1]).ravel(), atol=1e-12)


def test_mwem_error_within_theorem4_bound_at_large_epsilon():
    rng = np.random.default_rng(3)
    d, L, q, T = 8, 16, 40, 4000
    U = quantize(rng.uniform(-0.8, 0.8, size=(q, d)), 1.0, L, rng=2).sum(0)
    out = MWEMSketch(d, L).release(U, q, T, epsilon=1e6, rng=4)
    err = np.abs(q * out - U / L).max()  # count units
    c = 3
    bound = 2 * q * math.sqrt(d * math.log(L + 1) / T) + (3 * c + 2) * math.log(d) / 1e6
    assert err <= bound
    # with few iterations the error is larger than with many (the bound is not vacuous here)
    few = MWEMSketch(d, L).release(U, q, 20, epsilon=1e6, rng=4)
    assert np.abs(q * few - U / L).max() > err


def test_exponential_mechanism_exact_frequencies():
    logits = np.array([0.0, -0.5, -1.0, 1.0, 0.25])
    n = 4000
    draws = np.array(
        [exponential_mechanism(logits, rng=g) for g in np.random.default_rng(0).integers(2**32, size=n)]
    )
    p = np.exp(logits - logits.max())
    p /= p.sum()
    freq = np.bincount(draws, minlength=5) / n
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n))
    flat = np.exp(logits / 2 - (logits / 2).max())  # an under-scaled mechanism is caught
    flat /= flat.sum()
    assert np.any(np.abs(freq - flat) > 5 * np.sqrt(flat * (1 - flat) / n))
