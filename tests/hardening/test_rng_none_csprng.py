"""Leak 4: with ``rng=None`` every draw comes from the OS CSPRNG, never from numpy's generators.

numpy's Generator / RandomState entry points and ``default_rng`` are patched to raise, then every
public statistic is called under every trust model it supports with ``rng=None``.  Before the fix
the secure ECDF seeded PCG64 from urandom and drew numpy negative binomials, and frequencies /
range_counts / heavy_hitters (local, shuffle) drew the aggregate with ``np.random.default_rng()``.
"""

import numpy as np
import pytest

import privstats


@pytest.fixture
def no_numpy_random(monkeypatch):
    """numpy's Generator type is immutable, so every way to *make* a numpy generator is patched
    (``default_rng()`` without a public seed and the bit generators; the classes stay, scipy uses
    them in annotations) plus the legacy global-state functions.  scipy modules used lazily are
    imported first."""
    import scipy.fft
    import scipy.special
    import scipy.stats  # noqa: F401

    def boom(*a, **k):
        raise AssertionError("numpy random generator used on an rng=None path")

    real_default_rng = np.random.default_rng

    def public_seed_only(seed=None):
        # a deterministic generator from an explicit public seed (e.g. count-min's public hash
        # functions) is allowed; default_rng() (OS entropy, a simulation stream) is the leak
        if seed is None:
            boom()
        return real_default_rng(seed)

    monkeypatch.setattr(np.random, "default_rng", public_seed_only)
    for name in (
        "PCG64",
        "PCG64DXSM",
        "MT19937",
        "Philox",
        "SFC64",
        "SeedSequence",
        "random",
        "randint",
        "rand",
        "randn",
        "normal",
        "binomial",
        "laplace",
        "permutation",
        "choice",
        "shuffle",
        "uniform",
        "seed",
        "multinomial",
        "negative_binomial",
    ):
        monkeypatch.setattr(np.random, name, boom)
    yield


def _d(model):
    return 1e-6 if model == "shuffle" else None


_R = np.random.default_rng(0)
N = 600
ITEMS = _R.integers(0, 8, N)
X = _R.uniform(0, 1, N)
Y = (_R.uniform(size=N) < 0.4).astype(int)
P = np.clip(_R.uniform(0.1, 0.9, N), 0, 1)

CASES = [
    *[
        (
            f"frequencies-{m}",
            lambda m=m: privstats.frequencies(ITEMS, domain=8, epsilon=1.0, model=m, delta=_d(m)),
        )
        for m in ("central", "local", "shuffle")
    ],
    *[
        (
            f"frequencies-shuffle-{p}",
            lambda p=p: privstats.frequencies(
                ITEMS, domain=8, epsilon=1.0, protocol=p, model="shuffle", delta=1e-6
            ),
        )
        for p in ("single-rr", "single-rappor", "multi-hadamard")
    ],
    *[
        (
            f"frequencies-local-{p}",
            lambda p=p: privstats.frequencies(ITEMS, domain=8, epsilon=1.0, model="local", protocol=p),
        )
        for p in ("grr", "oue", "olh", "hr")
    ],
    *[
        (
            f"range_counts-{m}",
            lambda m=m: privstats.range_counts(
                ITEMS, [(0, 4), (2, 7)], domain=8, epsilon=1.0, model=m, delta=_d(m)
            ),
        )
        for m in ("central", "local", "shuffle")
    ],
    *[
        (
            f"heavy_hitters-{m}",
            lambda m=m: privstats.heavy_hitters(ITEMS, domain=8, epsilon=1.0, model=m, delta=_d(m)),
        )
        for m in ("central", "local", "shuffle")
    ],
    *[
        (f"ecdf-{m}", lambda m=m: privstats.ecdf(X, epsilon=1.0, bounds=(0, 1), grid=16, model=m))
        for m in ("central", "local", "secure")
    ],
    (
        "ecdf-secure-fss",
        lambda: privstats.ecdf(X, epsilon=1.0, bounds=(0, 1), grid=16, model="secure", protocol="fss"),
    ),
    *[
        (
            f"quantiles-{meth}",
            lambda meth=meth: privstats.quantiles(
                X, [0.25, 0.5], epsilon=1.0, bounds=(0, 1), grid=16, method=meth
            ),
        )
        for meth in ("independent", "joint", "tree")
    ],
    *[
        (
            f"quantiles-{m}",
            lambda m=m: privstats.quantiles(
                X,
                [0.5],
                epsilon=1.0,
                bounds=(0, 1),
                grid=16,
                model=m,
                **({"delta": 1e-6} if m == "shuffle" else {}),
            ),
        )
        for m in ("central", "secure", "local", "shuffle")
    ],
    *[
        (
            f"roc_curve-{m}",
            lambda m=m: privstats.roc_curve(Y, X, epsilon=1.0, bounds=(0, 1), grid=16, model=m),
        )
        for m in ("central", "secure", "local")
    ],
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_rng_none_never_touches_numpy_random(no_numpy_random, name, call):
    est = call()
    assert est is not None


def test_hosmer_lemeshow_noise_is_drawn_without_numpy(monkeypatch):
    """Every noise draw of hosmer_lemeshow uses the CSPRNG; only its p-value bootstrap, which
    post-processes the released noisy counts, builds a numpy Generator (seeded from the CSPRNG)."""
    import scipy.stats  # noqa: F401

    from privstats.stats.distribution import calibration as distribution

    def boom(*a, **k):
        raise AssertionError("numpy random generator used on an rng=None path")

    calls = []
    real_uncertainty = distribution.hl_pooled_uncertainty

    def spy(*a, **k):
        calls.append(k.get("rng"))
        return real_uncertainty(*a, **k)

    for name in ("PCG64", "MT19937", "Philox", "SFC64", "random", "normal", "binomial", "laplace"):
        monkeypatch.setattr(np.random, name, boom)
    monkeypatch.setattr(distribution, "hl_pooled_uncertainty", spy)
    est = privstats.hosmer_lemeshow(Y, P, epsilon=4.0)
    assert est is not None and len(calls) == 1
