"""Protocol A (quantise + one oracle report): unbiasedness and exact variances by Monte Carlo.

Tolerances: 5 standard errors of the Monte Carlo mean (σ/√R) and of the sample variance
(≈ σ²√(2/(R−1)), normal approximation, inflated ×1.5 for excess kurtosis)."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.ustat.kernels import auc_matrix, gini_matrix, kendall_matrix
from privstats.ustat.params import grr_variance_bound
from privstats.ustat.quantized import QuantizedUStat

R = 1500


def _check_mean_var(vals, mean, var):
    vals = np.asarray(vals)
    assert abs(vals.mean() - mean) < 5 * math.sqrt(var / vals.size), (vals.mean(), mean)
    assert abs(vals.var(ddof=1) - var) < 5 * 1.5 * var * math.sqrt(2 / (vals.size - 1)), (vals.var(), var)


def _one_sample_truth(A, x):
    h = np.bincount(x, minlength=A.shape[0]).astype(float)
    n = h.sum()
    return (h @ A @ h - h @ np.diag(A)) / (n * (n - 1)), h


@pytest.mark.parametrize("oracle", ["grr", "oue", "hr"])
def test_one_sample_unbiased_with_exact_conditional_variance(oracle):
    g = np.random.default_rng(10)
    A = gini_matrix(6, "avg")
    x = g.integers(0, 6, 400) // np.array([1, 2])[g.integers(0, 2, 400)]
    truth, h = _one_sample_truth(A, x)
    proto = QuantizedUStat(A, 1.5, oracle)
    vals = [proto.estimate(proto.simulate(x, g))[0] for _ in range(R)]
    _check_mean_var(vals, truth, proto.conditional_variance(h))


@pytest.mark.parametrize("oracle", ["grr", "oue", "hr"])
def test_two_sample_auc_unbiased_with_exact_variance(oracle):
    g = np.random.default_rng(11)
    proto = QuantizedUStat(auc_matrix(8, "half"), 1.0, oracle)
    pos, neg = g.integers(2, 8, 300), g.integers(0, 6, 500)
    truth = np.bincount(pos, minlength=8) @ proto.A @ np.bincount(neg, minlength=8) / (300 * 500)
    vals = [proto.estimate_two_sample(proto.simulate(pos, g), proto.simulate(neg, g))[0] for _ in range(R)]
    var = proto.two_sample_variance(np.bincount(pos, minlength=8), np.bincount(neg, minlength=8))
    _check_mean_var(vals, truth, var)


def test_population_variance_lemma1_and_theorem1_bound():
    """Data i.i.d. from D each run: variance is Lemma 1 (general form), below Theorem 1's bound."""
    g = np.random.default_rng(12)
    k, n, eps = 5, 300, 1.0
    A = gini_matrix(k, "mid")
    D = np.array([0.4, 0.1, 0.1, 0.1, 0.3])
    proto = QuantizedUStat(A, eps, "grr")
    vals = []
    for _ in range(R):
        x = g.choice(k, size=n, p=D)
        vals.append(proto.estimate(proto.simulate(x, g))[0])
    var = proto.population_variance(D, n)
    _check_mean_var(vals, D @ A @ D, var)
    assert var <= grr_variance_bound(n, eps, k)


def test_misprinted_debiasing_is_detected():
    """Debiasing with the wrong ε (as a misprinted Eq. 9 would) is biased beyond 5 standard errors."""
    g = np.random.default_rng(13)
    A = gini_matrix(6)
    x = 5 * g.integers(0, 2, 2000)  # two point masses: the debiasing matters
    truth, h = _one_sample_truth(A, x)
    honest, wrong = QuantizedUStat(A, 1.0), QuantizedUStat(A, 1.3)
    states = [honest.simulate(x, g) for _ in range(300)]
    se = math.sqrt(honest.conditional_variance(h) / 300)
    assert abs(np.mean([honest.estimate(s)[0] for s in states]) - truth) < 5 * se
    assert abs(np.mean([wrong.estimate(s)[0] for s in states]) - truth) > 5 * se


@pytest.mark.parametrize("oracle", ["grr", "oue", "hr"])
def test_simulate_matches_client_encoding_in_distribution(oracle):
    g = np.random.default_rng(14)
    proto = QuantizedUStat(kendall_matrix(2, 3), 1.0, oracle)
    x = g.integers(0, 6, 150)
    sim = [proto.estimate(proto.simulate(x, g))[0] for _ in range(600)]
    enc = [proto.estimate(proto.aggregate(proto.encode_batch(x, g)))[0] for _ in range(600)]
    assert stats.ks_2samp(sim, enc).pvalue > 1e-3
    # the test can fail: a different ε is told apart
    other = QuantizedUStat(kendall_matrix(2, 3), 2.0, oracle)
    far = [other.estimate(other.simulate(x, g))[0] for _ in range(600)]
    assert stats.ks_2samp(sim, far).pvalue < 1e-3


def test_aggregation_is_mergeable_and_order_free():
    proto = QuantizedUStat(gini_matrix(4), 1.0)
    x = np.random.default_rng(15).integers(0, 4, 1000)
    reports = proto.encode_batch(x, 3)
    whole = proto.aggregate(reports)
    a = proto.aggregate({"value": reports["value"][:400]})
    b = proto.aggregate({"value": reports["value"][400:]})
    assert proto.estimate(a.merge(b))[0] == proto.estimate(whole)[0]


def test_generic_report_histogram_path_agrees_with_grr_closed_forms():
    """The path other report-histogram oracles (Hadamard response) take gives k-RR's closed forms."""
    from privstats.ustat.quantized import _VectorModel

    proto = QuantizedUStat(gini_matrix(5), 1.0, "grr")
    generic = QuantizedUStat(gini_matrix(5), 1.0, "grr")
    generic.oracle.name = "grr-as-generic"
    generic.model = _VectorModel(generic.oracle)
    assert generic.model.kind == "histogram" and proto.model.kind == "grr"
    h = np.array([50, 0, 20, 10, 120])
    assert generic.conditional_variance(h) == pytest.approx(proto.conditional_variance(h), rel=1e-9)
    assert generic.population_variance(h / h.sum(), 200) == pytest.approx(
        proto.population_variance(h / h.sum(), 200)
    )
    state = proto.simulate(np.repeat(np.arange(5), h), 0)
    assert generic.estimate(state)[0] == pytest.approx(proto.estimate(state)[0], rel=1e-9)
