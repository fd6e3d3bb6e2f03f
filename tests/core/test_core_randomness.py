"""The randomness policy: exact uniform draws from both sources; the secure path is the OS CSPRNG."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.privacy.randomness import GeneratorSource, SecureSource, as_generator, as_source


@pytest.mark.parametrize("make", [lambda: SecureSource(), lambda: as_source(12345)])
def test_integers_are_uniform(make):
    src = make()
    high = 7
    draws = src.integers(high, size=70_000)
    assert draws.min() >= 0 and draws.max() < high
    counts = np.bincount(draws, minlength=high)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_integers_with_array_highs_respects_each_bound():
    src = SecureSource()
    highs = np.array([1, 2, 3, 1 << 40, (1 << 62) + 3])
    draws = np.stack([src.integers(highs) for _ in range(2000)])
    assert np.all(draws >= 0) and np.all(draws < highs)
    assert np.all(draws[:, 0] == 0)
    assert set(np.unique(draws[:, 2])) == {0, 1, 2}


def test_secure_uniform_detects_modulo_bias_free():
    # high = 3 * 2^62 makes naive `x % high` put 2/3 extra mass on [0, 2^62); rejection must not.
    src = SecureSource()
    high = 3 * (1 << 62)
    draws = src.integers(high, size=30_000).astype(np.uint64)
    low_third = np.mean(draws < np.uint64(1 << 62))
    assert abs(low_third - 1 / 3) < 5 * math.sqrt(2 / 9 / 30_000)


def test_random_floats_in_unit_interval_and_uniform():
    u = SecureSource().random(50_000)
    assert u.min() >= 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def test_permutation_is_uniform_over_all_orders():
    n, reps = 4, 24_000
    index = {}
    sec = SecureSource()
    codes = [tuple(sec.permutation(n)) for _ in range(reps)]
    for c in codes:
        index[c] = index.get(c, 0) + 1
    assert len(index) == math.factorial(n)
    assert stats.chisquare(list(index.values())).pvalue > 1e-4


def test_secure_source_never_uses_numpy_generator(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("numpy Generator used on the secure path")

    monkeypatch.setattr(np.random, "default_rng", boom)
    for name in ("uint64", "integers", "random", "permutation", "__init__"):
        monkeypatch.setattr(GeneratorSource, name, boom)
    src = as_source(None)
    assert src.secure
    src.integers(10, size=5)
    src.random(5)
    src.permutation(5)


def test_resolution_of_rng_arguments():
    g = np.random.default_rng(1)
    assert isinstance(as_source(g), GeneratorSource) and as_source(g).generator is g
    assert as_generator(g) is g
    assert not as_source(5).secure
    with pytest.raises(TypeError, match="rng"):
        as_source("seed")
    with pytest.raises(TypeError, match="simulation"):
        as_generator(SecureSource())
    with pytest.raises(ValueError, match="high"):
        SecureSource().integers(0, size=3)


def test_seeded_sources_are_reproducible():
    a = as_source(99).integers(1000, size=10)
    b = as_source(99).integers(1000, size=10)
    assert np.array_equal(a, b)
