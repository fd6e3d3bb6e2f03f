"""Exact ε-LDP of every frequency oracle by enumerating output probabilities, and encode vs those probabilities."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.local import GRR, OLH, OUE, BinaryRR, HadamardResponse
from privstats.local.olh import olh_hash


def max_ratio(oracle, **kw) -> float:
    """Largest P(y | x) / P(y | x') over all inputs x, x' and outputs y."""
    probs = np.array([oracle.output_probabilities(x, **kw) for x in range(oracle.domain_size)])
    assert np.allclose(probs.sum(axis=1), 1.0)
    assert np.all(probs > 0)
    return float((probs.max(axis=0) / probs.min(axis=0)).max())


def is_eps_ldp(oracle, **kw) -> bool:
    return max_ratio(oracle, **kw) <= math.exp(oracle.epsilon) * (1 + 1e-12)


ORACLES = [
    lambda eps: GRR(5, eps),
    lambda eps: BinaryRR(eps),
    lambda eps: OUE(4, eps),
    lambda eps: OUE(6, eps),
    lambda eps: HadamardResponse(3, eps),
    lambda eps: HadamardResponse(9, eps),
]


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("make", ORACLES)
def test_ratio_at_most_and_tight(make, eps):
    oracle = make(eps)
    ratio = max_ratio(oracle)
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-9)  # every one of these is tight


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("g", [None, 2, 5])
def test_olh_ratio_conditional_on_seed(eps, g):
    oracle = OLH(6, eps, g=g)
    tight = False
    for seed in [0, 1, 2**63 + 5, 12345678901234567]:
        ratio = max_ratio(oracle, seed=seed)
        assert ratio <= math.exp(eps) * (1 + 1e-12)
        tight |= math.isclose(ratio, math.exp(eps), rel_tol=1e-9)
    assert tight  # some seed separates two values, and then the ratio is exactly e^ε


class UnderNoisedGRR(GRR):
    """GRR whose probabilities are computed from 2ε while claiming ε."""

    @property
    def p(self):
        return math.exp(2 * self.epsilon) / (math.exp(2 * self.epsilon) + self.domain_size - 1)

    @property
    def q(self):
        return 1.0 / (math.exp(2 * self.epsilon) + self.domain_size - 1)


class UnderNoisedOUE(OUE):
    @property
    def q(self):
        return 1.0 / (math.exp(2 * self.epsilon) + 1)


class UnderNoisedHR(HadamardResponse):
    @property
    def p(self):
        return math.exp(1.2 * self.epsilon) / (math.exp(1.2 * self.epsilon) + 1)


@pytest.mark.parametrize("oracle", [UnderNoisedGRR(5, 1.0), UnderNoisedOUE(4, 1.0), UnderNoisedHR(5, 1.0)])
def test_under_noised_variant_is_caught(oracle):
    assert not is_eps_ldp(oracle)


def test_under_noised_olh_is_caught():
    class Leaky(OLH):
        @property
        def q(self):
            return 1.0 / (math.exp(2 * self.epsilon) + self.g - 1)

        @property
        def p(self):
            return math.exp(2 * self.epsilon) / (math.exp(2 * self.epsilon) + self.g - 1)

    oracle = Leaky(6, 1.0)
    assert not all(is_eps_ldp(oracle, seed=s) for s in range(4))


def chi2_pvalue(observed_counts, probs) -> float:
    expected = probs * observed_counts.sum()
    return stats.chisquare(observed_counts, expected).pvalue


@pytest.mark.parametrize(
    "make,value",
    [
        (lambda: GRR(5, 1.0), 2),
        (lambda: BinaryRR(0.7), 1),
        (lambda: OUE(4, 1.0), 3),
        (lambda: HadamardResponse(6, 1.5), 4),
    ],
)
def test_encode_matches_output_probabilities(make, value):
    oracle = make()
    n = 40_000
    reports = oracle.encode_batch(np.full(n, value), rng=np.random.default_rng(11))
    probs = oracle.output_probabilities(value)
    col = next(iter(reports.values()))
    outputs = col[:, 0].astype(np.int64) if col.ndim == 2 else col  # OUE, d <= 8: the byte is the vector
    assert chi2_pvalue(np.bincount(outputs, minlength=probs.size), probs) > 1e-4


def test_encode_of_wrong_distribution_is_caught():
    """The chi-square check above rejects reports drawn at 2ε."""
    oracle = GRR(5, 1.0)
    reports = UnderNoisedGRR(5, 1.0).encode_batch(np.full(40_000, 2), rng=np.random.default_rng(11))
    assert chi2_pvalue(np.bincount(reports["value"], minlength=5), oracle.output_probabilities(2)) < 1e-6


def test_olh_encode_matches_conditional_probabilities():
    oracle = OLH(10, 1.0, g=4)
    value, n = 7, 40_000
    reports = oracle.encode_batch(np.full(n, value), rng=np.random.default_rng(5))
    hashed = olh_hash(reports["seed"], value, oracle.g)
    # the hash of a fresh seed is uniform on [g]
    assert chi2_pvalue(np.bincount(hashed, minlength=oracle.g), np.full(oracle.g, 1 / oracle.g)) > 1e-4
    # given the seed, the bucket is GRR over [g]: offset 0 w.p. p, each other offset w.p. q
    offset = (reports["bucket"] - hashed) % oracle.g
    probs = np.array([oracle.p] + [oracle.q] * (oracle.g - 1))
    assert chi2_pvalue(np.bincount(offset, minlength=oracle.g), probs) > 1e-4
    # and matches output_probabilities for a particular seed
    assert oracle.output_probabilities(value, seed=int(reports["seed"][0]))[hashed[0]] == pytest.approx(
        oracle.p
    )


def test_secure_default_encodes():
    """encode() with no rng uses the OS CSPRNG and returns well-formed reports."""
    for oracle in [OUE(12, 1.0), OLH(12, 1.0), HadamardResponse(12, 1.0)]:
        state = oracle.aggregate(oracle.encode(3))
        assert state.n == 1
