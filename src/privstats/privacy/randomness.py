"""The randomness policy: where every random bit in privstats comes from.

Two sources implement one small interface (:class:`RandomSource`):

* :class:`SecureSource` reads the operating system's CSPRNG (``os.urandom``) in
  batches.  It is the default wherever real data is protected: client encoding,
  server noise, the shuffler.
* :class:`GeneratorSource` wraps a seeded :class:`numpy.random.Generator` for
  reproducible simulation.

All integer draws are exact (rejection sampling, no modulo bias), so exact
samplers built on them (see :mod:`privstats.privacy.samplers`) inherit
exactness from the source.

>>> src = as_source(7)                 # seeded simulation source
>>> int(src.integers(10, size=3).max()) < 10
True
>>> as_source(None).secure             # the default is the OS CSPRNG
True
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, TypeAlias

import numpy as np

__all__ = [
    "GeneratorSource",
    "RNGLike",
    "RandomSource",
    "SecureSource",
    "as_generator",
    "as_source",
    "dyadic_threshold",
]

_U64_MAX = np.uint64(np.iinfo(np.uint64).max)


#: The ``size`` argument of the draws: None for one value, an int or a shape.
Size: TypeAlias = int | tuple[int, ...] | None


class RandomSource(ABC):
    """Uniform random bits, and exact uniform integers built from them."""

    secure: bool = False

    @abstractmethod
    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniform 64-bit words."""

    def integers(self, high: Any, size: Size = None) -> np.ndarray:
        """Exactly uniform integers in ``[0, high)``; ``high`` may be an array (broadcast with size)."""
        high_arr = np.asarray(high, dtype=np.uint64)
        if np.any(high_arr == 0):
            raise ValueError("high must be positive")
        shape = np.broadcast_shapes(high_arr.shape, () if size is None else _as_shape(size))
        high_b = np.broadcast_to(high_arr, shape).ravel()
        out = np.empty(high_b.size, dtype=np.uint64)
        # accept x < limit where limit is the largest multiple of high <= 2^64-1
        limit = (_U64_MAX // high_b) * high_b
        todo = np.arange(high_b.size)
        while todo.size:
            x = self.uint64(todo.size)
            ok = x < limit[todo]
            out[todo[ok]] = x[ok] % high_b[todo[ok]]
            todo = todo[~ok]
        res = (
            out.reshape(shape).astype(np.int64)
            if np.all(high_b <= np.iinfo(np.int64).max)
            else out.reshape(shape)
        )
        return res if shape else res[()]

    def random(self, size: Size = None) -> np.ndarray:
        """Uniform floats on the 2^-53 grid of [0, 1)."""
        n = 1 if size is None else size
        x = (self.uint64(n) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
        return x[0] if size is None else x

    def bernoulli(self, p: Any, size: Size = None) -> np.ndarray:
        """Bernoulli(p) for float ``p`` (resolution 2^-53; for randomized response)."""
        p = np.asarray(p, dtype=np.float64)
        shape = np.broadcast_shapes(p.shape, () if size is None else _as_shape(size))
        u = self.random(int(np.prod(shape)) if shape else None)
        u = np.asarray(u).reshape(shape)
        return np.asarray(u < p)

    def bernoulli_dyadic(self, threshold: int, size: int | tuple[int, ...]) -> np.ndarray:
        """Exact Bernoulli(threshold / 2^64): a uniform 64-bit word below an integer threshold.

        ``threshold`` comes from :func:`dyadic_threshold` (an int in [0, 2^64]).
        """
        t = int(threshold)
        if not 0 <= t <= 1 << 64:
            raise ValueError("threshold must be in [0, 2**64]")
        shape = _as_shape(size)
        if t == 1 << 64:
            return np.ones(shape, dtype=bool)
        return self.uint64(shape) < np.uint64(t)

    def bernoulli_rational(self, num: Any, den: Any, size: Size = None) -> np.ndarray:
        """Exact Bernoulli(num/den) for non-negative integers num <= den."""
        num = np.asarray(num, dtype=np.int64)
        den = np.asarray(den, dtype=np.int64)
        if np.any(num < 0) or np.any(num > den):
            raise ValueError("need 0 <= num <= den")
        return self.integers(den, size=size) < np.broadcast_to(
            num, np.broadcast_shapes(num.shape, den.shape, () if size is None else _as_shape(size))
        )

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of ``range(n)``.

        Sorts i.i.d. uniform 64-bit keys and redraws all keys if any two tie, so
        the result is exactly uniform (ties have probability about n^2/2^65).
        """
        while True:
            keys = self.uint64(n)
            order = np.argsort(keys, kind="stable")
            sk = keys[order]
            if n < 2 or not np.any(sk[1:] == sk[:-1]):
                return order


class SecureSource(RandomSource):
    """The OS CSPRNG, read in batches of ``buffer_bytes`` to amortise system calls."""

    secure = True

    def __init__(self, buffer_bytes: int = 1 << 16):
        self._buffer_bytes = int(buffer_bytes)
        self._buf = b""
        self._pos = 0

    def _bytes(self, k: int) -> bytes:
        if k > self._buffer_bytes:
            return os.urandom(k)
        if self._pos + k > len(self._buf):
            self._buf = os.urandom(self._buffer_bytes)
            self._pos = 0
        out = self._buf[self._pos : self._pos + k]
        self._pos += k
        return out

    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        shape = _as_shape(size)
        n = int(np.prod(shape))
        return np.frombuffer(self._bytes(8 * n), dtype="<u8").astype(np.uint64).reshape(shape)


class GeneratorSource(RandomSource):
    """A seeded :class:`numpy.random.Generator` (simulation and reproducible experiments only)."""

    secure = False

    def __init__(self, generator: np.random.Generator):
        self.generator = generator

    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        return self.generator.integers(0, _U64_MAX, size=_as_shape(size), dtype=np.uint64, endpoint=True)

    def integers(self, high: Any, size: Size = None) -> np.ndarray:
        high_arr = np.asarray(high)
        if np.any(high_arr <= 0):
            raise ValueError("high must be positive")
        return self.generator.integers(0, high_arr, size=size)

    def random(self, size: Size = None) -> np.ndarray:
        return self.generator.random(size)

    def permutation(self, n: int) -> np.ndarray:
        return self.generator.permutation(n)


RNGLike: TypeAlias = int | np.random.Generator | RandomSource | None


def _seed(rng: int | np.integer) -> int:
    """An integer seed >= 0 (numpy's own error for a negative one does not name ``rng``)."""
    if rng < 0:
        raise ValueError(f"rng seed must be an integer >= 0, got {rng}")
    return int(rng)


def as_source(rng: RNGLike = None) -> RandomSource:
    """Resolve the ``rng`` argument of a function that draws.

    ``None`` means the OS CSPRNG (the safe default for anything that protects real
    data); an ``int`` seeds a numpy Generator; a Generator or a source is used as is.
    """
    if rng is None:
        return SecureSource()
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return GeneratorSource(np.random.default_rng(_seed(rng)))
    raise TypeError(
        f"rng must be None, an int seed, a numpy Generator or a RandomSource, not {type(rng).__name__}"
    )


def as_generator(rng: RNGLike = None) -> np.random.Generator:
    """A numpy Generator for vectorized simulation paths.

    ``None`` gives a Generator seeded from OS entropy; a :class:`SecureSource` is
    refused, since simulation draws aggregates with numpy's (non-cryptographic) PCG64.
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, GeneratorSource):
        return rng.generator
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(_seed(rng))
    raise TypeError(
        "rng must be None, an int seed or a numpy Generator for simulation "
        f"(got {type(rng).__name__}; simulation is not a path for protecting real data)"
    )


_MARGIN = 2.0**-50  # covers the float64 error of a probability computed from exp/log (a few ulp of 1)


def dyadic_threshold(p: float, *, round_up: bool) -> int:
    """The integer T in [0, 2^64] of an exact Bernoulli(T / 2^64) rounded to the safe side of ``p``.

    ``round_up=True`` gives T/2^64 >= p + 2^-50 (capped at 1), ``False`` gives T/2^64 <= p - 2^-50
    (floored at 0): the 2^-50 margin absorbs the float error of ``p``, so a randomizer whose
    privacy ratio is monotone in the probability keeps its e^ε bound exactly.

    >>> dyadic_threshold(0.5, round_up=True) > 2**63 > dyadic_threshold(0.5, round_up=False)
    True
    """
    import math
    from fractions import Fraction

    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be a probability, got {p!r}")
    if round_up:
        return min(1 << 64, math.ceil((Fraction(float(p)) + Fraction(_MARGIN)) * (1 << 64)))
    return max(0, math.floor((Fraction(float(p)) - Fraction(_MARGIN)) * (1 << 64)))


def _as_shape(size: int | tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)
