"""Distributed discrete Laplace noise that holds against a server that knows its own share.

The threat: every server knows the noise share it added and sees the opened output,
so it can subtract its own share.  What protects the data against server j is the
noise of the *other* servers only.  The default design therefore gives every
server's share the full noise:

* :func:`server_noise_share` — server ``j`` of ``m`` draws an independent discrete
  Laplace vector with the mechanism's ``scale`` (P(z) ∝ exp(-|z|/scale)), using the
  exact CKS sampler (:func:`privstats.privacy.samplers.discrete_laplace`: integer
  arithmetic only) fed by the OS CSPRNG when ``rng`` is None.  Any m - 1 servers
  that pool their shares still face one full discrete Laplace, so the mechanism's
  ε holds against every coalition of up to m - 1 servers that also see the output
  (post-processing of an ε-DP release with independent extra noise).
* The cost: the opened noise is the sum of m independent discrete Laplaces, so its
  variance is m times the central variance (:func:`opened_noise_variance`,
  :func:`noise_variance_factor`).  For m = 2: twice the variance, √2 times the
  standard error.

``tolerate = t < m - 1`` (simulation and research only) reproduces the cheaper
infinitely-divisible design: each server draws NB(r) - NB(r) with r = 1/(m - t), so
any m - t shares sum to one full discrete Laplace and the opened noise has variance
m/(m - t) times the central one.  It only protects against coalitions of at most t
servers, and numpy's negative binomial with fractional shape is a floating-point
sampler: with ``rng=None`` only the exact default ``t = m - 1`` is accepted.

Every batch draws its shares once (see :class:`privstats.secure.aggregation.AggregationServer`):
the service that holds a server's share must release the batch once and close it.

>>> share = server_noise_share(4.0, 15, server=0, n_servers=2, rng=0)   # server 0's share, 15 tree nodes
>>> share.dtype.name, share.shape
('int64', (15,))
>>> round(opened_noise_variance(4.0, 2) / opened_noise_variance(4.0, 1), 6)  # m = 2 doubles the variance
2.0
"""

from __future__ import annotations

import numpy as np

from privstats.privacy.randomness import GeneratorSource, RandomSource, RNGLike, as_source

__all__ = [
    "discrete_laplace_shares",
    "noise_variance_factor",
    "opened_noise_variance",
    "server_noise_share",
    "share_generator",
]


def share_generator(rng: RNGLike = None) -> np.random.Generator:
    """A numpy Generator for *simulation* only (seeded paths); ``None`` is refused.

    Real-data paths draw from the OS CSPRNG through exact samplers
    (:func:`server_noise_share` with ``rng=None``); this helper only derives
    reproducible child seeds for seeded simulations.
    """
    if rng is None:
        raise ValueError("share_generator is for seeded simulation; rng=None must use the OS CSPRNG directly")
    if isinstance(rng, GeneratorSource):
        return rng.generator
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    if isinstance(rng, RandomSource):
        return np.random.default_rng(rng.uint64(4).tolist())
    raise TypeError("rng must be None, an int seed, a numpy Generator or a RandomSource")


def _check(n_servers: int, tolerate: int | None, scale) -> int:
    if isinstance(n_servers, bool) or not isinstance(n_servers, (int, np.integer)) or n_servers < 1:
        raise ValueError(f"n_servers must be an integer >= 1, got {n_servers!r}")
    t = int(n_servers) - 1 if tolerate is None else tolerate
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < n_servers:
        raise ValueError(f"tolerate must be an integer in [0, {n_servers - 1}], got {tolerate!r}")
    try:
        ok = float(scale) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    return int(t)


def noise_variance_factor(n_servers: int, tolerate: int | None = None) -> float:
    """Variance of the opened distributed noise over the central noise variance: m / (m - t).

    The default ``tolerate = m - 1`` (each share carries the full noise) gives m.

    >>> noise_variance_factor(2), noise_variance_factor(3, tolerate=1)
    (2.0, 1.5)
    """
    t = _check(n_servers, tolerate, 1.0)
    return n_servers / (n_servers - t)


def opened_noise_variance(scale, n_servers: int, tolerate: int | None = None) -> float:
    """Exact variance of one coordinate of the opened noise (sum of all m shares).

    >>> round(opened_noise_variance(1.0, 1), 6)      # one discrete Laplace, scale 1: 2a/(1-a)^2
    1.841347
    """
    from privstats.central import discrete_laplace_variance

    return noise_variance_factor(n_servers, tolerate) * discrete_laplace_variance(float(scale))


def server_noise_share(scale, size: int, *, server: int, n_servers: int, rng: RNGLike = None) -> np.ndarray:
    """Server ``server``'s exact integer noise share (int64, shape ``(size,)``): a full discrete Laplace.

    Drawn by the exact sampler from the OS CSPRNG when ``rng`` is None (each server calls
    this itself, once per batch, and never reveals the result).  The shares of different
    servers are independent; their sum has variance :func:`opened_noise_variance`.

    >>> server_noise_share(2.0, 3, server=1, n_servers=2, rng=5).shape
    (3,)
    """
    from privstats.privacy.samplers import discrete_laplace

    _check(n_servers, None, scale)
    if isinstance(server, bool) or not isinstance(server, (int, np.integer)) or not 0 <= server < n_servers:
        raise ValueError(f"server must be an integer in [0, {n_servers - 1}], got {server!r}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    return np.asarray(discrete_laplace(scale, size=int(size), rng=rng), dtype=np.int64)


def discrete_laplace_shares(
    scale, size: int, n_shares: int, *, tolerate: int | None = None, rng: RNGLike = None
) -> np.ndarray:
    """int64 array (n_shares, size): every server's noise shares (for in-process simulation).

    Default ``tolerate = n_shares - 1``: each row is an independent exact discrete Laplace
    (:func:`server_noise_share`).  A smaller ``tolerate`` (seeded ``rng`` only) draws the
    infinitely divisible NB(1/(m - t)) - NB(1/(m - t)) shares described in the module docstring.

    >>> discrete_laplace_shares(3.0, 4, 2, rng=0).shape
    (2, 4)
    """
    t = _check(n_shares, tolerate, scale)
    if t == n_shares - 1:
        src = as_source(rng)
        return np.stack(
            [server_noise_share(scale, size, server=j, n_servers=n_shares, rng=src) for j in range(n_shares)]
        ).reshape(n_shares, size)
    if rng is None:
        raise ValueError(
            f"tolerate={t} < n_shares - 1 uses a floating-point negative-binomial sampler "
            "and is for seeded simulation only; with rng=None use the default "
            "tolerate = n_shares - 1"
        )
    gen = share_generator(rng)
    p = -np.expm1(-1.0 / float(scale))  # 1 - a
    r = 1.0 / (n_shares - t)
    pos = gen.negative_binomial(r, p, size=(n_shares, size))
    neg = gen.negative_binomial(r, p, size=(n_shares, size))
    return (pos - neg).astype(np.int64)
