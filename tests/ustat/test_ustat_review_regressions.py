"""Regressions found in review (each fails on the code before its fix), plus Monte Carlo checks of the
tau-b and Gini-coefficient standard errors.

Tolerances are derived from the exact or delta-method variances (5 standard errors of a Monte Carlo
mean, 5·1.5·σ²·√(2/(R−1)) for a sample variance, binomial 5σ for coverage)."""

import math

import numpy as np
import pytest

import privstats
from privstats.ustat import central as C
from privstats.ustat.kernels import auc_matrix, collision_matrix, quantize
from privstats.ustat.quantized import QuantizedUStat


def test_oue_diagonal_uses_the_exact_n():
    """OUE with k ≫ n: subtracting c0·tr(A)·ΣŜ (noisy) instead of c0·tr(A)·n blew the variance up by
    orders of magnitude."""
    g = np.random.default_rng(60)
    k, n, R = 600, 300, 200
    x = g.integers(0, k, n)
    proto = QuantizedUStat(collision_matrix(k), 1.0, "oue")
    vals = np.array([proto.estimate(proto.simulate(x, g))[0] for _ in range(R)])
    var = proto.conditional_variance(np.bincount(x, minlength=k))
    assert abs(vals.mean() - C.exact_collision(x)) < 5 * math.sqrt(var / R)
    assert abs(vals.var(ddof=1) - var) < 5 * 1.5 * var * math.sqrt(2 / (R - 1))


def test_central_tau_b_noises_are_independent():
    """A seed passed to three releases gave them the same noise: tau-a − c·nontie was released noise-free."""
    g = np.random.default_rng(61)
    x = g.integers(0, 5, 3000)
    y = np.clip(x + g.integers(-2, 3, x.size), 0, 5)
    ex = C.exact_kendall(x, y)
    scale_a, scale_y = 4.0, 2.0  # sensitivities × n: the three noises are (4/n, 2/n, 2/n)·Laplace(3/ε)
    vals = []
    for seed in range(20):
        e = privstats.kendall_tau(x, y, epsilon=0.3, bounds=(0, 6), model="central", rng=seed)
        ta_noisy, ny_noisy = e.details["tau_a"], e.details["nontie_x"]
        vals.append((ta_noisy - ex["tau_a"]) / scale_a - (ny_noisy - ex["nontie_y"]) / scale_y)
    assert np.std(vals) > 1e-3  # identical noises would cancel exactly (std 0 up to the snapping grid)


def test_tau_b_stderr_matches_the_spread():
    """Delta method over (tau-a, both non-tie fractions): stated stderr ≈ spread over seeds, CI covers."""
    g = np.random.default_rng(62)
    x = g.integers(0, 5, 4000)
    y = np.clip(x + g.integers(-2, 3, x.size), 0, 5)
    truth = C.exact_kendall(x, y)["tau_b"]
    R = 200
    for kw in (
        {"model": "local", "bins": 6, "epsilon": 1.5},
        {"model": "secure", "P": 3, "epsilon": 6.0},
        {"model": "central", "epsilon": 0.05},
    ):
        ests = [privstats.kendall_tau(x, y, bounds=(0, 6), rng=1000 + i, **kw) for i in range(R)]
        v = np.array([e.value for e in ests])
        se = np.mean([e.stderr for e in ests])
        # sample sd within 5 of its standard errors (≈ σ·√(κ/(4R)), κ ≤ 6 for Laplace-like noise)
        assert abs(v.std(ddof=1) / se - 1) < 5 * math.sqrt(6 / (4 * R)) + 0.05, kw
        cover = np.mean([lo <= truth <= hi for lo, hi in (e.ci(0.95) for e in ests)])
        assert cover > 0.95 - 5 * math.sqrt(0.95 * 0.05 / R), kw


def test_gini_coefficient_stderr_includes_the_mean_rounding():
    """At large ε the randomized rounding of the private mean dominates; it was left out (stderr 20× small)."""
    g = np.random.default_rng(63)
    x = g.random(4000) ** 2 * 10
    truth = C.exact_gini_mean_difference(x) * (x.size - 1) / (2 * x.size * x.mean())
    R = 200
    ests = [privstats.gini_coefficient(x, epsilon=20.0, bounds=(0, 10), bins=64, rng=i) for i in range(R)]
    v = np.array([e.value for e in ests])
    se = np.mean([e.stderr for e in ests])
    assert v.std(ddof=1) < se * (
        1 + 5 * math.sqrt(1 / (2 * R))
    )  # conservative bound, never anti-conservative
    cover = np.mean([lo <= truth <= hi for lo, hi in (e.ci(0.95) for e in ests)])
    assert cover > 0.95 - 5 * math.sqrt(0.95 * 0.05 / R)


def test_gini_coefficient_keeps_delta_of_the_all_pairs_part():
    x = np.random.default_rng(64).random(500)
    e = privstats.gini_coefficient(
        x, epsilon=1.0, bounds=(0, 1), model="secure", method="all-pairs", delta=1e-6, rng=0
    )
    assert e.delta == 1e-6


@pytest.mark.parametrize("epsilon", [1e6])
def test_huge_epsilon_does_not_overflow_and_is_exact(epsilon):
    g = np.random.default_rng(65)
    y = np.r_[np.ones(400, int), np.zeros(400, int)]
    s = np.r_[g.random(400) * 0.5 + 0.5, g.random(400) * 0.6]
    exact8 = C.exact_matrix_two_sample(
        quantize(s[:400], (0, 1), 8), quantize(s[400:], (0, 1), 8), auc_matrix(8)
    )
    est = privstats.auc(y, s, epsilon=epsilon, method="quantized", domain_size=8, rng=1)
    assert est.value == pytest.approx(exact8, abs=1e-9)
    for kw in (
        {"method": "tree"},
        {"method": "tree", "splitting": "advanced", "delta": 1e-6},
        {"model": "secure", "ties": "zero"},
        {},
    ):
        assert math.isfinite(privstats.auc(y, s, epsilon=epsilon, rng=1, **kw).value)
    assert math.isfinite(privstats.gini_coefficient(s, epsilon=epsilon, bounds=(0, 1), rng=1).value)
    assert math.isfinite(privstats.kendall_tau(s, s, epsilon=epsilon, bounds=(0, 1), rng=1).value)


def test_oracle_choice_prefers_krr_at_large_epsilon():
    """OUE keeps the true bit with probability ½ at any ε; its bound said its noise vanished, so a given
    small domain at ε = 20 got OUE (stderr 0.06) instead of nearly noiseless k-RR."""
    g = np.random.default_rng(66)
    y = np.r_[np.ones(500, int), np.zeros(500, int)]
    s = np.r_[g.random(500) * 0.5 + 0.5, g.random(500) * 0.6]
    est = privstats.auc(y, s, epsilon=20.0, method="quantized", domain_size=8, rng=1)
    assert est.params["oracle"] == "grr" and est.stderr < 1e-3


def test_bad_kernels_and_huge_dense_domains_get_clear_errors():
    x = np.random.default_rng(67).random(100)
    with pytest.raises(ValueError, match="kernel must be a vectorized callable"):
        privstats.ustatistic(x, lambda a: a, epsilon=1.0, bounds=(0, 1), model="local")
    est = privstats.ustatistic(
        x, lambda a, b: 0.5, epsilon=1.0, bounds=(0, 1), bins=4, model="local", rng=0
    )  # constant kernel
    assert math.isfinite(est.value)
    y = np.r_[np.ones(50, int), np.zeros(50, int)]
    # structured kernels run in O(k) with k-RR/OUE up to 2^20 categories (was a 34 GB dense allocation)
    with pytest.raises(ValueError, match="domain_size.*at most"):
        privstats.auc(y, x, epsilon=1.0, method="quantized", domain_size=2**20 + 1, rng=0)
    with pytest.raises(ValueError, match="bins.*at most"):
        privstats.kendall_tau(x, x, epsilon=1.0, bounds=(0, 1), bins=1100, rng=0)
    # Hadamard response and user kernels keep the dense k×k path and its limit
    with pytest.raises(ValueError, match="domain_size.*dense"):
        privstats.auc(y, x, epsilon=1.0, method="quantized", domain_size=2**16, oracle="hr", rng=0)
    with pytest.raises(ValueError, match="bins.*dense"):
        privstats.ustatistic(x, lambda a, b: a * b, epsilon=1.0, bounds=(0, 1), bins=10**4, rng=0)
