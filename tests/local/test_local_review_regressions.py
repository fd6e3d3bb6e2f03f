"""Regressions from the review of the local oracles: extreme ε, large OLH g, OUE's randomness use, big inputs."""

import math
from fractions import Fraction

import numpy as np
import pytest

from privstats.local import GRR, OLH, OUE, BinaryRR, HadamardResponse, best_oracle
from privstats.local.olh import olh_hash
from privstats.privacy.randomness import GeneratorSource

CLASSES = [GRR, OUE, OLH, HadamardResponse]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [800.0, 1e6])
def test_huge_epsilon_gives_the_truth_without_overflow(cls, eps):
    oracle = cls(16, eps)
    values = np.array([3] * 7 + [5] * 2)
    for state in (oracle.simulate(values, rng=0), oracle.aggregate(oracle.encode_batch(values, rng=1))):
        est = oracle.estimate(state)
        assert np.all(np.isfinite(est.value)) and np.all(np.isfinite(est.stderr))
        if cls in (GRR, OLH):  # these report the truth as ε → ∞ (OUE's own bit and HR's sets stay random)
            assert np.allclose(est.value, np.bincount(values, minlength=16), atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES)
def test_tiny_epsilon_variance_is_accurate(cls):
    """Worst-case variance (n = 1, nobody holds the item) against exact rationals: p − q must not cancel."""
    eps = 1e-12
    oracle = cls(16, eps)
    e = Fraction(eps)
    em1 = e + e**2 / 2 + e**3 / 6  # e^ε − 1, relative error ~1e-36
    if cls is GRR:
        q = 1 / (em1 + 16)
        var = q * (1 - q) / (em1 * q) ** 2
    elif cls is OLH:
        g = oracle.g
        r = Fraction(1, g)
        var = r * (1 - r) / ((g - 1) * em1 / (g * (em1 + g))) ** 2
    else:  # OUE: q = 1/(e^ε + 1); HR: 1/4 per user
        q = 1 / (em1 + 2)
        gap = em1 / (2 * (em1 + 2))
        var = (q * (1 - q) if cls is OUE else Fraction(1, 4)) / gap**2
    assert oracle.variance(1, np.zeros(16))[0] == pytest.approx(float(var), rel=1e-9)
    state = oracle.simulate(np.zeros(100, dtype=int), rng=0)
    assert np.all(np.isfinite(oracle.estimate(state).value))


def test_olh_large_epsilon_caps_g_and_stays_cheap():
    oracle = OLH(64, 30.0)  # e^30 ≈ 1e13 buckets would not fit in memory
    assert oracle.g == 2**32 - 1
    values = np.arange(64).repeat(3)
    est = oracle.estimate(oracle.aggregate(oracle.encode_batch(values, rng=2)))
    assert np.allclose(est.value, 3, atol=0.01)
    assert OLH(64, 20.0).g == round(math.exp(20.0)) + 1  # below the cap: the paper's g
    with pytest.raises(ValueError, match="g"):
        OLH(8, 1.0, g=2**32)
    assert best_oracle(1024, 25.0).name in {"grr", "oue", "olh", "hr"}


@pytest.mark.parametrize("g", [2, 3, 7, 1000, 65537, 2**31 + 11, 2**32 - 1])
def test_olh_hash_is_floor_of_mix_times_g(g):
    """H = floor(mix · g / 2^64), checked with Python integers, and the aggregator agrees for every g."""
    rng = np.random.default_rng(g)
    seeds = rng.integers(0, 2**64, 2000, dtype=np.uint64, endpoint=False)
    seeds[:2] = [0, 2**64 - 1]
    values = rng.integers(0, 50, 2000)
    mask = (1 << 64) - 1
    expected = []
    for s, v in zip(seeds.tolist(), values.tolist(), strict=False):
        z = (s + (v + 1) * 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        expected.append((z * g) >> 64)
    assert olh_hash(seeds, values, g).tolist() == expected
    oracle = OLH(50, 1.0, g=g)
    buckets = np.array(expected)
    naive = [(olh_hash(seeds, v, g) == buckets).sum() for v in range(50)]
    assert oracle.support_counts(seeds, buckets).tolist() == naive


class RecordingSource(GeneratorSource):
    """A seeded source that records every uint64 word it hands out."""

    def __init__(self, seed):
        super().__init__(np.random.default_rng(seed))
        self.words = []

    def uint64(self, size):
        w = super().uint64(size)
        self.words.append(w.copy())
        return w


def test_oue_encode_is_exactly_a_32_bit_threshold_comparison():
    """Every non-own bit is 1 iff the 32-bit uniform (top byte, then 24 low bits on a tie) is below T."""
    d, n = 300, 400
    oracle = OUE(d, 1.0)
    values = np.random.default_rng(1).integers(0, d, n)
    src = RecordingSource(5)
    bits = np.unpackbits(oracle.encode_batch(values, rng=src)["bits"], axis=1, count=d, bitorder="little")
    assert len(src.words) == 2  # one draw of bytes, one for the ties
    top = src.words[0].view(np.uint8)[: n * d].reshape(n, d).astype(np.int64)
    T = int(oracle._q_threshold)
    ties = np.flatnonzero(top.ravel() == T >> 24)
    assert ties.size > 100  # the tie path is exercised
    low = (src.words[1] >> np.uint64(40)).astype(np.int64)
    u = top.ravel() << 24
    u[ties] += low
    expected = (u < T).reshape(n, d)
    rows = np.arange(n)
    expected[rows, values] = top[rows, values] < 128
    assert np.array_equal(bits, expected)
    assert 0 <= T / 2**32 - oracle.q <= 2**-32


def test_oue_wide_domain_aggregate_equals_unpacked_sums():
    d = 5000  # > 4096: the unpacking path
    oracle = OUE(d, 1.0)
    reports = oracle.encode_batch(np.random.default_rng(0).integers(0, d, 300), rng=1)
    bits = np.unpackbits(reports["bits"], axis=1, count=d, bitorder="little")
    assert np.array_equal(oracle.aggregate(reports).counts, bits.sum(axis=0))


def test_values_that_would_wrap_in_int64_are_rejected_clearly():
    oracle = GRR(16, 1.0)
    with pytest.raises(ValueError, match=r"values must be in \[0, 16\): 1 value outside$"):
        oracle.encode_batch(np.array([2**63 + 5], dtype=np.uint64))
    with pytest.raises(ValueError, match="values must be in"):
        oracle.simulate([1e300], rng=0)


def test_numeric_types_of_epsilon_and_inputs_are_accepted_and_not_mutated():
    import pandas as pd

    oracle = GRR(np.int64(8), Fraction(1, 2))
    assert oracle.epsilon == 0.5 and BinaryRR(np.float32(0.5)).epsilon == 0.5
    series = pd.Series([1, 2, 3, 7], dtype="uint8")
    before = series.copy()
    assert (
        oracle.simulate(series, rng=0).n == 4 and oracle.aggregate(oracle.encode_batch(series, rng=0)).n == 4
    )
    pd.testing.assert_series_equal(series, before)


def test_default_encoding_uses_batched_os_csprng_and_never_numpy(monkeypatch):
    """rng=None: every oracle draws from os.urandom, a few calls per batch (not one per user), no numpy RNG."""
    import os

    from privstats.local import HierarchicalHistogram
    from privstats.privacy import randomness

    calls = []
    real = os.urandom

    def counting_urandom(k):
        calls.append(k)
        return real(k)

    def forbidden(*args, **kwargs):
        raise AssertionError("numpy's generator used on the secure path")

    monkeypatch.setattr(randomness.os, "urandom", counting_urandom)
    for name in ("default_rng", "random", "randint", "binomial", "multinomial"):
        monkeypatch.setattr(np.random, name, forbidden)
    for name in ("uint64", "integers", "random"):
        monkeypatch.setattr(GeneratorSource, name, forbidden)
    oracles = [
        GRR(12, 1.0),
        BinaryRR(1.0),
        OUE(12, 1.0),
        OLH(12, 1.0),
        HadamardResponse(12, 1.0),
        HierarchicalHistogram(12, 1.0, oracle="grr"),
        HierarchicalHistogram(12, 1.0, oracle="olh"),
    ]
    values = np.arange(5000) % 2
    for oracle in oracles:
        calls.clear()
        reports = oracle.encode_batch(values)
        assert oracle.aggregate(reports).n == 5000
        assert 1 <= len(calls) <= 10, (oracle, len(calls))  # batched: not one call per user
        calls.clear()
        assert oracle.aggregate(oracle.encode(1)).n == 1 and len(calls) >= 1
