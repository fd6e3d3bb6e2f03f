"""Protocol B (tree AUC with the Hadamard level oracle): exact privacy ratio, unbiasedness and exact
variance of the full recursion for every splitting, the corrected Lemma 5 constant, pruning."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.ustat.central import exact_auc
from privstats.ustat.tree import TreeAUC, uauc

R = 1200


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_level_oracle_ratio_is_exactly_e_eps(eps):
    proto = TreeAUC(3, eps)
    probs = np.stack([proto.level_output_probabilities(q, 3) for q in range(8)])
    ratio = probs.max(axis=0) / probs.min(axis=0)
    assert ratio.max() <= math.exp(eps) * (1 + 1e-12)
    assert ratio.max() == pytest.approx(math.exp(eps))
    assert np.allclose(probs.sum(axis=(1, 2)), 1)


def test_client_reports_follow_output_probabilities():
    proto = TreeAUC(3, 1.0)
    n = 40000
    rep = proto.encode_batch(np.full(n, 5), levels=np.full(n, 3), rng=1)
    cells = rep["j"] * 2 + (rep["z"] > 0)
    expected = proto.level_output_probabilities(5, 3).ravel() * n
    assert stats.chisquare(np.bincount(cells, minlength=16), expected).pvalue > 1e-4


def _data(g):
    return g.integers(0, 8, 240), g.integers(0, 8, 160) // 2


@pytest.mark.parametrize("splitting", ["users", "budget", "advanced"])
def test_full_recursion_unbiased_with_exact_variance(splitting):
    g = np.random.default_rng(20)
    pos, neg = _data(g)
    proto = TreeAUC(3, 4.0, splitting=splitting, delta=1e-6, a=0)
    truth = uauc(pos, neg, 3) / (pos.size * neg.size)
    vals = np.array([proto.estimate(proto.simulate(pos, g), proto.simulate(neg, g))[0] for _ in range(R)])
    var = proto.full_recursion_variance(pos, neg)
    assert abs(vals.mean() - truth) < 5 * math.sqrt(var / R)
    assert abs(vals.var(ddof=1) - var) < 5 * 1.5 * var * math.sqrt(2 / (R - 1))


def test_lemma5_constant_is_too_small_and_the_corrected_one_fits():
    """At ε = 3 the printed Lemma 5 variance (4e^ε/(e^ε−1)² per user) is far below the truth."""
    g = np.random.default_rng(21)
    proto = TreeAUC(2, 3.0, splitting="budget", a=0)
    n_l = 3000
    x = g.integers(0, 2**proto.depth, n_l)
    est = []
    for _ in range(800):
        st = proto.simulate(x, g)
        est.append(proto._level_estimates(st, 2, np.array([1]), {})[0])
    emp = np.var(est, ddof=1)
    e = proto.epsilon_level
    exact = n_l * ((math.exp(e) + 1) / math.expm1(e)) ** 2 - np.sum(x == 1)
    lemma5 = 4 * n_l * math.exp(e) / math.expm1(e) ** 2
    tol = 5 * 1.5 * exact * math.sqrt(2 / 799)
    assert abs(emp - exact) < tol
    assert emp - lemma5 > tol


def test_simulate_matches_client_encoding_in_distribution():
    g = np.random.default_rng(22)
    pos, neg = _data(g)
    proto = TreeAUC(3, 1.0)
    sim = [proto.estimate(proto.simulate(pos, g), proto.simulate(neg, g))[0] for _ in range(500)]

    def client(v):
        return proto.aggregate(proto.encode_batch(v, proto.assign_levels(v.size, g), rng=g))

    enc = [proto.estimate(client(pos), client(neg))[0] for _ in range(500)]
    assert stats.ks_2samp(sim, enc).pvalue > 1e-3
    wrong = TreeAUC(3, 3.0)
    far = [wrong.estimate(wrong.simulate(pos, g), wrong.simulate(neg, g))[0] for _ in range(500)]
    assert stats.ks_2samp(sim, far).pvalue < 1e-3


def test_secure_client_path_and_merge():
    proto = TreeAUC(4, 1.0, splitting="budget")
    s = np.arange(16).repeat(20)
    rep = proto.encode_batch(s)  # OS CSPRNG
    assert rep["j"].shape == (320, 4) and set(np.unique(rep["z"])) <= {-1, 1}
    whole = proto.aggregate(rep)
    half = proto.aggregate({"j": rep["j"][:100], "z": rep["z"][:100]})
    rest = proto.aggregate({"j": rep["j"][100:], "z": rep["z"][100:]})
    merged = half.merge(rest)
    assert all(np.array_equal(merged.dense[level], whole.dense[level]) for level in whole.dense)
    with pytest.raises(ValueError):
        proto.aggregate({"j": rep["j"], "z": rep["z"] * 2})


@pytest.mark.parametrize("discard", ["half", "zero"])
def test_pruned_tree_is_accurate_at_large_scale(discard):
    """Default threshold (Cor. 4/5): error within a few plug-in standard errors on ur-like data."""
    g = np.random.default_rng(23)
    pos, neg = g.integers(0, 2**12, 200_000), g.integers(0, 2**12, 200_000) // 2
    proto = TreeAUC(12, 2.0, discard=discard, ties="half")
    value, var, det = proto.estimate(proto.simulate(pos, g), proto.simulate(neg, g))
    truth = exact_auc(pos, neg, "half")
    assert det["explored_nodes"] < 2**13  # only explored nodes are queried
    assert abs(value - truth) < 6 * math.sqrt(var) + (0.02 if discard == "zero" else 0)


def test_sparse_levels_use_parity_sums():
    """Depth 22 > the dense limit: deep levels answer by parity sums over kept reports."""
    g = np.random.default_rng(24)
    pos, neg = g.integers(2**21, 2**22, 20000), g.integers(0, 2**21, 20000)
    proto = TreeAUC(22, 2.0)
    value, var, _ = proto.estimate(proto.simulate(pos, g), proto.simulate(neg, g))
    assert 22 in proto.simulate(pos[:10], g).raw
    assert abs(value - 1.0) < 6 * math.sqrt(var)


@pytest.mark.parametrize("splitting", ["users", "budget"])
def test_histogram_simulation_matches_per_user_encoding(splitting):
    """Few distinct values: the histogram draw has the distribution of encoding every user."""
    g = np.random.default_rng(25)
    proto = TreeAUC(4, 1.0, splitting=splitting)
    pos, neg = np.repeat([3, 12], [700, 900]), np.repeat([0, 9], [800, 800])
    hist = [proto.estimate(proto.simulate(pos, g), proto.simulate(neg, g))[0] for _ in range(400)]
    assert 8 * 2 * 2**proto.depth <= pos.size  # so simulate takes the histogram path

    def client(v):
        lv = proto.assign_levels(v.size, g) if splitting == "users" else None
        return proto.aggregate(proto.encode_batch(v, lv, rng=g))

    enc = [proto.estimate(client(pos), client(neg))[0] for _ in range(400)]
    assert stats.ks_2samp(hist, enc).pvalue > 1e-3


@pytest.mark.parametrize("depth,eps,delta", [(16, 1.0, 1e-3), (20, 4.0, 1e-2), (8, 1.0, 1e-6)])
def test_advanced_splitting_level_budget_composes_to_the_total(depth, eps, delta):
    from privstats.privacy.composition import advanced_composition

    e_level = TreeAUC(depth, eps, splitting="advanced", delta=delta).epsilon_level
    assert e_level >= eps / depth  # never worse than basic composition
    drv = advanced_composition(e_level, depth, delta).epsilon
    assert min(drv, depth * e_level) <= eps * (1 + 1e-9)
