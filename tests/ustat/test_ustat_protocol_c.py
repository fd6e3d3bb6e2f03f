"""Protocol C (pairs of users in simulated 2PC): pairing, corrected Theorem 5 by Monte Carlo over
data and noise, the 4PΔ²/(nε²) noise term (the printed 2P/(nε²) is rejected), RR for binary
kernels, odd n, the bipartite AUC design and the exact (CSPRNG, discrete Laplace) path."""

import math

import numpy as np
import pytest

from privstats.ustat.pairs import PairsProtocol

R = 1500
VALUES = np.array([0.0, 0.5, 1.0])
PROBS = np.array([0.5, 0.2, 0.3])


def _zetas(f):
    F = f(VALUES[:, None], VALUES[None, :])
    theta = PROBS @ F @ PROBS
    zeta1 = PROBS @ (F @ PROBS) ** 2 - theta**2
    zeta2 = PROBS @ F**2 @ PROBS - theta**2
    return theta, zeta1, zeta2


def _run(proto, n, g, reps=R):
    vals = []
    for _ in range(reps):
        x = g.choice(VALUES, size=n, p=PROBS)
        pairs = proto.make_pairs(n, g)
        vals.append(proto.estimate(proto.backend.compute(x[pairs[:, 0]], x[pairs[:, 1]], g), pairs, n=n)[0])
    return np.array(vals)


def _check(vals, mean, var):
    assert abs(vals.mean() - mean) < 5 * math.sqrt(var / vals.size)
    assert abs(vals.var(ddof=1) - var) < 5 * 1.5 * var * math.sqrt(2 / (vals.size - 1))


def test_each_user_in_exactly_P_pairs():
    proto = PairsProtocol(lambda a, b: a, epsilon=1.0, P=3, kernel_range=(0, 1))
    pairs = proto.make_pairs(10, rng=0)
    assert pairs.shape == (15, 2)
    assert np.all(np.bincount(pairs.ravel(), minlength=10) == 3)
    assert np.all(pairs[:, 0] != pairs[:, 1])


@pytest.mark.parametrize("P,n", [(1, 200), (3, 200), (2, 201)])
def test_theorem5_corrected_mse_against_population(P, n):
    f = lambda a, b: np.abs(a - b)
    theta, z1, z2 = _zetas(f)
    proto = PairsProtocol(f, epsilon=1.0, P=P, kernel_range=(0, 1))
    _check(_run(proto, n, np.random.default_rng(30 + P)), theta, proto.variance(n, z1, z2))


def test_printed_noise_term_is_rejected():
    """Noise-dominated regime: the variance is 4PΔ²/(nε²)-like, not the printed 2P/(nε²)."""
    f = lambda a, b: np.abs(a - b)
    _theta, z1, z2 = _zetas(f)
    n, P, eps = 200, 2, 0.3
    proto = PairsProtocol(f, epsilon=eps, P=P, kernel_range=(0, 1))
    vals = _run(proto, n, np.random.default_rng(35))
    m = n // 2
    subsampling = proto.variance(n, z1, z2) - proto.backend.noise_variance / (P * m)
    printed = subsampling + 2 * P / (n * eps**2)
    corrected = proto.variance(n, z1, z2)
    tol = 5 * 1.5 * corrected * math.sqrt(2 / (R - 1))
    assert abs(vals.var(ddof=1) - corrected) < tol
    assert abs(vals.var(ddof=1) - printed) > tol
    assert proto.backend.noise_variance == pytest.approx(2 * (P / eps) ** 2, rel=1e-4)


def test_randomized_response_for_binary_kernels():
    f = lambda a, b: (a == b) * 1.0
    theta, z1, z2 = _zetas(f)
    proto = PairsProtocol(f, epsilon=1.0, P=2, kernel_range=(0, 1), mechanism="rr")
    _check(_run(proto, 300, np.random.default_rng(36)), theta, proto.variance(300, z1, z2))
    not_binary = PairsProtocol(lambda a, b: np.abs(a - b), epsilon=1.0, kernel_range=(0, 1), mechanism="rr")
    with pytest.raises(ValueError, match="binary"):
        not_binary.backend.compute(np.array([0.0]), np.array([0.5]), rng=0)


def test_odd_n_one_user_sits_out_per_permutation():
    proto = PairsProtocol(lambda a, b: np.abs(a - b), epsilon=1.0, P=4, kernel_range=(0, 1))
    pairs = proto.make_pairs(11, rng=1)
    assert pairs.shape == (20, 2)
    counts = np.bincount(pairs.ravel(), minlength=11)
    assert counts.sum() == 40 and counts.max() <= 4
    x = np.linspace(0, 1, 11)
    _, _, info = proto.estimate(proto.backend.compute(x[pairs[:, 0]], x[pairs[:, 1]], 2), pairs, n=11)
    assert info["sat_out_per_permutation"] == 1


@pytest.mark.parametrize("P", [1, 3])
def test_bipartite_auc_design_against_population(P):
    g = np.random.default_rng(40 + P)
    f = lambda a, b: (a > b) + 0.5 * (a == b)
    pv, nv = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0])
    pp, pn = np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.4])
    F = f(pv[:, None], nv[None, :])
    theta = pp @ F @ pn
    z_pos = pp @ (F @ pn) ** 2 - theta**2
    z_neg = pn @ (pp @ F) ** 2 - theta**2
    z2 = pp @ F**2 @ pn - theta**2
    proto = PairsProtocol(f, epsilon=1.0, P=P, kernel_range=(0, 1))
    n_pos, n_neg = 80, 130
    vals = []
    for _ in range(R):
        pos, neg = g.choice(pv, n_pos, p=pp), g.choice(nv, n_neg, p=pn)
        pairs = proto.make_bipartite_pairs(n_pos, n_neg, g)
        out = proto.backend.compute(pos[pairs[:, 0]], neg[pairs[:, 1]], g)
        vals.append(proto.estimate_two_sample(out, pairs, n_pos=n_pos, n_neg=n_neg)[0])
    _check(np.array(vals), theta, proto.two_sample_variance(n_pos, n_neg, z_pos, z_neg, z2))


def test_exact_discrete_laplace_path_has_the_stated_noise():
    """rng=None: CSPRNG pairing and exact discrete Laplace; the noise variance matches the backend's."""
    proto = PairsProtocol(lambda a, b: np.abs(a - b), epsilon=2.0, P=1, kernel_range=(0, 1))
    x = np.zeros(4000)
    pairs = proto.make_pairs(x.size)
    out = proto.backend.compute(x[pairs[:, 0]], x[pairs[:, 1]])
    se = proto.backend.noise_variance * math.sqrt(2 * 5 / out.size)  # Laplace kurtosis 6
    assert abs(out.var() - proto.backend.noise_variance) < 5 * se
    assert abs(out.mean()) < 5 * math.sqrt(proto.backend.noise_variance / out.size)


def test_named_kernel_simulated_backend_draws_the_spu_paths_realised_law():
    """A named two-party kernel with ``backend="simulated"`` simulates the SPU path: its exact realised
    law (rounded coins), its reported variance; the AUC-with-ties-½ estimate over two samples is within
    5 SE of the exact statistic, and the variance of the noise (release − kernel) over 2·10^5 pairs is
    the reported one within 5 SE (its SE from the law's exact fourth moment)."""
    from privstats.ustat.mpc import laplace_plan
    from privstats.ustat.pairs import NoiseLaw, SimulatedTwoParty

    proto = PairsProtocol("greater_half", epsilon=1.0, P=1, kernel_range=(0.0, 1.0), backend="simulated")
    be = proto.backend
    assert isinstance(be, SimulatedTwoParty) and isinstance(be.law, NoiseLaw)
    plan = laplace_plan(1.0, 2)
    assert be.noise_variance == pytest.approx(plan.variance / 4, rel=1e-12)
    g = np.random.default_rng(5)
    pos, neg = np.round(g.beta(3, 2, 4000), 2), np.round(g.beta(2, 3, 4000), 2)
    pairs = proto.make_bipartite_pairs(pos.size, neg.size, rng=g)
    out = be.compute(pos[pairs[:, 0]], neg[pairs[:, 1]], rng=g)
    value, var, _ = proto.estimate_two_sample(out, pairs, n_pos=pos.size, n_neg=neg.size)
    exact = np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :]))
    assert abs(value - exact) < 5 * math.sqrt(var)
    n = 200_000
    noise = (be.compute(np.zeros(n), np.zeros(n), rng=6) - 0.5) / 0.5  # ties: kernel ½
    pmf = plan.cycle_pmf()
    z = np.arange(pmf.size) - pmf.size * (np.arange(pmf.size) >= pmf.size // 2)
    m4 = float(np.sum(pmf * z**4.0))
    assert abs(noise.var() - plan.variance) < 5 * math.sqrt((m4 - plan.variance**2) / n)
