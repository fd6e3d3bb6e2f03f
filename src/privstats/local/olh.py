"""Optimized local hashing (OLH; Wang et al. 2017).

Each user draws a public 64-bit hash seed s, hashes its value into ``[g]`` with
``H(s, x)`` and sends (s, GRR_g(H(s, x))): the bucket is kept with probability
p = e^ε/(e^ε + g − 1), else replaced by a uniform draw from ``[g]`` (so each
other bucket has probability 1/(e^ε + g − 1)).  Default g = round(e^ε) + 1.

The hash is splitmix64's finalizer ``mix`` applied to ``s + (v + 1)·γ`` (γ the
golden-ratio constant, arithmetic mod 2^64), mapped to a bucket by
``floor(mix · g / 2^64)``.  The aggregator counts the support of every item,
``C(v) = #{i : H(s_i, v) = bucket_i}``, vectorized over chunks of users (O(n·d)
work, bounded memory), and estimates ``n̂_v = (C(v) − n/g)/(p − 1/g)``.

Simulation.  In the random-hash model (the one OLH's analysis uses) the values
``H(s, 0), ..., H(s, d−1)`` of a fresh seed are independent and uniform on [g].
For a user with value x the support indicator of x is ``1[bucket = H(s, x)]``,
Bernoulli(p).  For v ≠ x, given the bucket, ``H(s, v)`` is uniform and
independent of ``(H(s, x), bucket)`` and of the other ``H(s, w)``, so
``1[H(s, v) = bucket]`` is Bernoulli(1/g), independent across v and of the
indicator of x.  Users are independent, hence the C(v) are independent with
``C(v) ~ Binomial(n_v, p) + Binomial(n − n_v, 1/g)``, which
:meth:`OLH.simulate_counts` draws in O(d).  The tests compare this with real
encoding through the real hash.

>>> from privstats.local import OLH
>>> oracle = OLH(32, epsilon=2.0)
>>> est = oracle.estimate(oracle.simulate([7] * 3000 + [9] * 2000, rng=0))
>>> bool(abs(est.value[7] - 3000) < 6 * est.stderr[7])
True
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from privstats.local.base import CountState, SupportOracle
from privstats.local.grr import KaryResponse
from privstats.privacy.randomness import RNGLike, as_generator, as_source, dyadic_threshold
from privstats.validation import as_domain_values, check_positive_int

__all__ = ["OLH", "olh_hash"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
# users per aggregation chunk are chosen so a chunk holds about this many (user, item) pairs
_PAIRS_PER_CHUNK = 1 << 18


def _mix_inplace(z: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer, in place on a uint64 array (``tmp`` is scratch of the same shape)."""
    np.right_shift(z, _S30, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _M1, out=z)
    np.right_shift(z, _S27, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _M2, out=z)
    np.right_shift(z, _S31, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    return z


_MAX_G = (1 << 32) - 1  # buckets; keeps the 64x32-bit products below in uint64
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _bucket_of(z: np.ndarray, g: int) -> np.ndarray:
    """``floor(z · g / 2^64)`` for uint64 ``z`` and g < 2^32, exactly (a 64x32-bit high product)."""
    gg = np.uint64(g)
    hi = (z >> _S32) * gg  # < 2^64 since g < 2^32
    lo = ((z & _LO32) * gg) >> _S32
    return ((hi + lo) >> _S32).astype(np.int64)  # hi + lo < 2^64: no wrap


def _bucket_bounds(b: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    """``(start, width)`` of buckets ``b``: start = ceil(b·2^64/g), width = start(b+1) − start(b) mod 2^64.

    With Q, R = divmod(2^64, g): b·2^64/g = b·Q + b·R/g and b·R < g² < 2^64, so everything is uint64.
    """
    q, r = divmod(1 << 64, g)
    qq, rr, gg = np.uint64(q), np.uint64(r), np.uint64(g)

    def start(x):
        return x * qq + (x * rr + gg - np.uint64(1)) // gg

    bb = b.astype(np.uint64)
    s = start(bb)
    return s, start(bb + np.uint64(1)) - s  # start(g) = 2^64 wraps to 0: width still exact


def olh_hash(seeds, values, g: int) -> np.ndarray:
    """``H(seed, value)`` in ``[0, g)`` elementwise (broadcasting), as int64."""
    s, v = np.broadcast_arrays(np.asarray(seeds, dtype=np.uint64), np.asarray(values, dtype=np.int64))
    z = np.atleast_1d(v).astype(np.uint64) + np.uint64(1)
    np.multiply(z, _GAMMA, out=z)  # arrays wrap mod 2^64 silently
    np.add(z, np.atleast_1d(s), out=z)
    z = _mix_inplace(z, np.empty_like(z))
    return _bucket_of(z, g).reshape(s.shape)


class OLH(KaryResponse, SupportOracle):
    """Optimized local hashing over ``domain_size`` values with ``g`` hash buckets."""

    name = "olh"
    report_fields: ClassVar[dict[str, str]] = {"seed": "uint64", "bucket": "int64"}

    def __init__(self, domain_size: int, epsilon: float, g: int | None = None):
        super().__init__(domain_size, epsilon)
        if g is None:  # round(e^ε) + 1, capped (huge ε: a bucket per hash value is as good as it gets)
            g = _MAX_G if self.epsilon > math.log(_MAX_G) else min(round(math.exp(self.epsilon)) + 1, _MAX_G)
        self.g = check_positive_int(g, "g", minimum=2)
        if self.g > _MAX_G:
            raise ValueError(f"g must be at most 2**32 - 1, got {g}")

    @property
    def params(self) -> dict:
        return {"domain_size": self.domain_size, "epsilon": self.epsilon, "g": self.g}

    @property
    def outcomes(self) -> int:
        """k-RR runs over the g buckets: p is the hashed value's bucket, q each other one."""
        return self.g

    @property
    def gap(self) -> float:
        """p − 1/g = (g − 1)(1 − e^−ε)/(g(1 + (g − 1)e^−ε)), accurate for tiny ε."""
        return (
            (self.g - 1)
            * -math.expm1(-self.epsilon)
            / (self.g * (1.0 + (self.g - 1) * math.exp(-self.epsilon)))
        )

    @property
    def bits_per_user(self) -> float:
        return 64 + self._bits(self.g)

    # ---- client -------------------------------------------------------------------
    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        seeds = src.uint64(values.size)
        bucket = olh_hash(seeds, values, self.g)
        # exact Bernoulli with an integer threshold, rounded up (more resampling: ratio <= e^ε)
        resample = src.bernoulli_dyadic(
            dyadic_threshold(min(1.0, self.g * self.q), round_up=True), values.size
        )
        bucket[resample] = src.integers(self.g, size=int(resample.sum()))
        return {"seed": seeds, "bucket": bucket}

    def output_probabilities(self, value: int, seed: int = 0) -> np.ndarray:
        """Distribution of the reported bucket over ``[g]`` given ``value`` and the public ``seed``."""
        value = int(as_domain_values([value], self.domain_size, name="value")[0])
        if self.g > 1 << 24:
            raise ValueError(f"g = {self.g} is too large to enumerate the output distribution")
        probs = np.full(self.g, self.q)
        probs[int(olh_hash(np.uint64(seed), value, self.g))] = self.p
        return probs

    # ---- aggregator -----------------------------------------------------------------
    def _accumulate(self, reports: dict[str, np.ndarray]) -> np.ndarray:
        seeds, bucket = reports["seed"], reports["bucket"]
        if seeds.dtype != np.uint64 or seeds.ndim != 1:
            raise ValueError(f"reports['seed'] must be a 1-d uint64 array, got {seeds.dtype} {seeds.shape}")
        if bucket.ndim != 1 or (
            bucket.size and (bucket.dtype.kind not in "iu" or bucket.min() < 0 or bucket.max() >= self.g)
        ):
            raise ValueError(f"reports['bucket'] must be integers in [0, {self.g})")
        return self.support_counts(seeds, bucket.astype(np.int64))

    def support_counts(self, seeds: np.ndarray, bucket: np.ndarray) -> np.ndarray:
        """``C(v) = #{i : H(seed_i, v) = bucket_i}`` for every item v, in chunks of users."""
        d = self.domain_size
        counts = np.zeros(d, dtype=np.int64)
        item_offsets = (np.arange(1, d + 1, dtype=np.uint64) * _GAMMA)[None, :]
        rows = max(1, _PAIRS_PER_CHUNK // d)
        z = np.empty((rows, d), dtype=np.uint64)
        tmp = np.empty((rows, d), dtype=np.uint64)
        for s in range(0, seeds.size, rows):
            m = min(rows, seeds.size - s)
            zz, tt = z[:m], tmp[:m]
            np.add(seeds[s : s + m, None], item_offsets, out=zz)
            _mix_inplace(zz, tt)
            start, width = _bucket_bounds(bucket[s : s + m], self.g)
            # H(seed, v) == b  <=>  mix - start[b] < width[b]  (unsigned, wrapping)
            np.subtract(zz, start[:, None], out=zz)
            counts += np.count_nonzero(zz < width[:, None], axis=0)
        return counts

    # ---- simulation -------------------------------------------------------------------
    def simulate_counts(self, true_counts, rng: RNGLike = None) -> CountState:
        """Support counts drawn directly: Binomial(n_v, p) + Binomial(n − n_v, 1/g), independent over v."""
        c = self._check_true_counts(true_counts)
        gen = as_generator(rng)
        n = int(c.sum())
        counts = gen.binomial(c, self.p) + gen.binomial(n - c, 1.0 / self.g)
        return CountState(self.name, self.params, n, counts.astype(np.int64))

    # ---- analyst ------------------------------------------------------------------------
    @property
    def support_probabilities(self) -> tuple[float, float]:
        """A report supports its own value w.p. p and any other value w.p. 1/g (random hash)."""
        return self.p, 1.0 / self.g

    def user_linear_variance(self, weights) -> np.ndarray:
        """Per value x: variance of one user's contribution to Σ_v w_v n̂_v (indicators independent)."""
        w = np.asarray(weights, dtype=float)
        p, r = self.p, 1.0 / self.g
        return (np.sum(w**2) * r * (1 - r) + w**2 * (p * (1 - p) - r * (1 - r))) / self.gap**2
