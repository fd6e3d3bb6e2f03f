"""Exact samplers: goodness of fit against the exact pmf, the secure path, input errors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privstats.privacy.randomness import GeneratorSource, SecureSource
from privstats.privacy.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace, gaussian, laplace

N = 200_000
P_MIN = 1e-4


def chisq_pvalue(samples: np.ndarray, lo: int, hi: int, pmf: np.ndarray) -> float:
    """Chi-square p-value of integer ``samples`` against ``pmf`` on [lo, hi]; the rest is one cell."""
    samples = np.asarray(samples)
    n = samples.size
    exp = n * pmf
    obs = np.bincount(samples[(samples >= lo) & (samples <= hi)] - lo, minlength=hi - lo + 1).astype(float)
    keep = exp >= 5
    e = np.append(exp[keep], n - exp[keep].sum())
    o = np.append(obs[keep], n - obs[keep].sum())
    if e[-1] < 1e-9:  # nothing outside: drop the empty cell
        e, o = e[:-1], o[:-1]
    return float(stats.chisquare(o, e * o.sum() / e.sum()).pvalue)


def dlap_pmf(scale, lo, hi):
    x = np.arange(lo, hi + 1)
    a = math.exp(-1 / float(scale))
    return (1 - a) / (1 + a) * np.exp(-np.abs(x) / float(scale))


def dgauss_pmf(sigma, lo, hi):
    s2 = float(sigma) ** 2
    w = math.ceil(40 * math.sqrt(s2)) + 10
    allx = np.arange(-w, w + 1)
    z = np.exp(-(allx.astype(float) ** 2) / (2 * s2)).sum()
    x = np.arange(lo, hi + 1)
    return np.exp(-(x.astype(float) ** 2) / (2 * s2)) / z


@pytest.mark.parametrize("scale", [1, 10, Fraction(7, 3), 0.5, 0.1])
def test_discrete_laplace_fits_pmf(scale):
    x = discrete_laplace(scale, size=N, rng=11)
    w = int(30 * float(scale)) + 5
    assert chisq_pvalue(x, -w, w, dlap_pmf(scale, -w, w)) > P_MIN


@pytest.mark.parametrize("sigma", [0.5, 1, 3.7, 10, Fraction(5, 2)])
def test_discrete_gaussian_fits_pmf(sigma):
    x = discrete_gaussian(sigma, size=N, rng=12)
    w = int(10 * float(sigma)) + 5
    assert chisq_pvalue(x, -w, w, dgauss_pmf(sigma, -w, w)) > P_MIN


@pytest.mark.parametrize("gamma", [0, Fraction(1, 3), 0.5, 1, Fraction(7, 3), 2.5, 4])
def test_bernoulli_exp_fits(gamma):
    x = bernoulli_exp(gamma, size=N, rng=13)
    p = math.exp(-float(gamma))
    k = int(x.sum())
    if p == 1:
        assert k == N
        return
    assert stats.binomtest(k, N, p).pvalue > P_MIN


def test_goodness_of_fit_rejects_wrong_scale():
    """The same tests fail for a sampler whose scale is 10% off (they have power)."""
    x = discrete_laplace(11, size=N, rng=11)
    assert chisq_pvalue(x, -305, 305, dlap_pmf(10, -305, 305)) < P_MIN
    y = discrete_gaussian(3.3, size=N, rng=12)
    assert chisq_pvalue(y, -35, 35, dgauss_pmf(3, -35, 35)) < P_MIN
    b = bernoulli_exp(Fraction(7, 3) * Fraction(11, 10), size=N, rng=13)
    assert stats.binomtest(int(b.sum()), N, math.exp(-7 / 3)).pvalue < P_MIN


def test_huge_parameters_take_the_exact_big_integer_path():
    # γ with a denominator beyond int64: multi-word uniform integers
    g = Fraction(2**70 + 1, 2**70)
    x = bernoulli_exp(g, size=50_000, rng=5)
    assert stats.binomtest(int(x.sum()), x.size, math.exp(-float(g))).pvalue > P_MIN
    # σ so large that v² overflows int64: Python-int arithmetic, still the right shape
    sigma = 100_000
    y = discrete_gaussian(sigma, size=5_000, rng=6)
    assert stats.kstest(y / sigma, "norm").pvalue > P_MIN


def test_secure_path_never_touches_numpy_generator(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("numpy Generator used on the secure path")

    class NoGenerator:
        def __init__(self, *a, **k):
            boom()

    monkeypatch.setattr(np.random, "default_rng", boom)
    monkeypatch.setattr(np.random, "Generator", NoGenerator)
    for meth in ("uint64", "integers", "random", "permutation"):
        monkeypatch.setattr(GeneratorSource, meth, boom)
    calls = []
    orig = SecureSource.uint64

    def counting(self, size):
        calls.append(size)
        return orig(self, size)

    monkeypatch.setattr(SecureSource, "uint64", counting)
    assert isinstance(discrete_laplace(3, rng=None), int)
    assert discrete_laplace(Fraction(1, 3), size=1000).shape == (1000,)
    assert discrete_gaussian(2.5, size=(10, 10)).shape == (10, 10)
    assert bernoulli_exp(Fraction(5, 2), size=100).dtype == bool
    assert isinstance(bernoulli_exp(0.3), bool)
    assert calls, "the OS CSPRNG was not used"


def test_shapes_and_scalars():
    assert isinstance(discrete_laplace(2, rng=1), int)
    assert isinstance(discrete_gaussian(2, rng=1), int)
    assert discrete_laplace(2, size=(3, 4), rng=1).shape == (3, 4)
    assert discrete_laplace(2, size=(3, 4), rng=1).dtype == np.int64
    assert discrete_gaussian(2, size=0, rng=1).shape == (0,)
    assert np.array_equal(discrete_laplace(5, size=100, rng=3), discrete_laplace(5, size=100, rng=3))
    assert isinstance(laplace(1.0, rng=1), float)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: discrete_laplace(0), "scale"),
        (lambda: discrete_laplace(-1), "scale"),
        (lambda: discrete_laplace(float("nan")), "scale"),
        (lambda: discrete_laplace("1"), "scale"),
        (lambda: discrete_gaussian(0), "sigma"),
        (lambda: discrete_gaussian(float("inf")), "sigma"),
        (lambda: bernoulli_exp(-0.5), "gamma"),
        (lambda: bernoulli_exp(True), "gamma"),
        (lambda: discrete_laplace(1, size=-1), "size"),
        (lambda: laplace(-1.0, rng=1), "scale"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("fn", [laplace, gaussian])
def test_continuous_samplers_refuse_secure_use(fn):
    for rng in (None, SecureSource()):
        with pytest.raises(ValueError, match="floating.point.*simulation"):
            fn(1.0, size=3, rng=rng)
    assert fn(1.0, size=3, rng=np.random.default_rng(0)).shape == (3,)
    assert fn(1.0, size=3, rng=GeneratorSource(np.random.default_rng(0))).shape == (3,)


def test_conservative_rounding_of_float_sigma():
    from privstats.privacy.samplers import _sigma2_rational

    s2 = _sigma2_rational(3.7)
    exact = Fraction(3.7) ** 2
    assert s2 >= exact and float((s2 - exact) / exact) < 2**-20
    assert s2.denominator <= 2**22
