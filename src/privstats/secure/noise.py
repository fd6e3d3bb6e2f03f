"""Distributed discrete Laplace noise: each of m servers draws one share.

Discrete Laplace with P(z) ∝ a^|z|, a = exp(-1/scale), is the difference of two
geometric variables, and a geometric is a sum of k i.i.d. negative binomials
NB(1/k, 1 - a) (infinitely divisible).  Each server draws NB(r) - NB(r) with
r = 1 / (m - t): the m shares sum to at least a full discrete Laplace among any
m - t servers, so up to ``tolerate`` = t servers may collude (or drop out and have
their shares excluded) and the honest noise alone still has scale ``scale``; with
t = 0 the opened sum has exactly the central distribution.

Negative binomials with a fractional shape are drawn by numpy's gamma-Poisson
mixture (floating point inside the sampler; the shares themselves are integers).
With ``rng=None`` the generator is seeded from 256 bits of OS entropy per call.

>>> import numpy as np
>>> s = discrete_laplace_shares(4.0, size=50_000, n_shares=3, rng=0)
>>> s.shape
(3, 50000)
>>> bool(abs(s.sum(axis=0).var() - 2 * np.exp(-0.25) / (1 - np.exp(-0.25)) ** 2) < 1.5)
True
"""

from __future__ import annotations

import os

import numpy as np

from privstats.privacy.randomness import GeneratorSource, RNGLike

__all__ = ["discrete_laplace_shares", "share_generator"]


def share_generator(rng: RNGLike = None) -> np.random.Generator:
    """A numpy Generator for noise shares: fresh OS entropy when ``rng`` is None."""
    if rng is None:
        return np.random.Generator(np.random.PCG64(int.from_bytes(os.urandom(32), "little")))
    if isinstance(rng, GeneratorSource):
        return rng.generator
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError("rng must be None, an int seed or a numpy Generator")


def discrete_laplace_shares(scale: float, size: int, n_shares: int, *, tolerate: int = 0,
                            rng: RNGLike = None) -> np.ndarray:
    """int64 array (n_shares, size): server j's shares of ``size`` discrete Laplace variables."""
    if n_shares < 1:
        raise ValueError(f"n_shares must be >= 1, got {n_shares}")
    if not 0 <= tolerate < n_shares:
        raise ValueError(f"tolerate must be in [0, {n_shares - 1}], got {tolerate}")
    scale = float(scale)
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    gen = share_generator(rng)
    p = -np.expm1(-1.0 / scale)                 # 1 - a
    r = 1.0 / (n_shares - tolerate)
    pos = gen.negative_binomial(r, p, size=(n_shares, size))
    neg = gen.negative_binomial(r, p, size=(n_shares, size))
    return (pos - neg).astype(np.int64)


