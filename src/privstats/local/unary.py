"""Optimized unary encoding (OUE; Wang et al. 2017).

A user with value x sends d bits: bit x is 1 with probability p = 1/2, every
other bit is 1 with probability q = 1/(e^ε + 1), independently.  The report is
the bit vector packed with ``np.packbits(..., bitorder="little")``, shape
``(n, ceil(d/8))``; padding bits must be zero.

The aggregator sums the bit columns.  Column v's sum is a sum of independent
Bernoullis, ``Binomial(n_v, 1/2) + Binomial(n − n_v, q)``, and the bits of one
user are independent across columns, so the column sums are independent across
v: :meth:`OUE.simulate_counts` draws them directly in O(d).

>>> from privstats.local import OUE
>>> oracle = OUE(16, epsilon=1.0)
>>> est = oracle.estimate(oracle.simulate([3] * 4000 + [5] * 6000, rng=0))
>>> bool(abs(est.value[3] - 4000) < 6 * est.stderr[3])
True
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from privstats.local.base import CountState, SupportOracle
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.validation import as_domain_values

__all__ = ["OUE"]

# rows per chunk when unpacking or drawing bits (bounded memory: ~chunk * d bytes)
_CHUNK_BITS = 1 << 22


def _bit_table() -> np.ndarray:
    """(256, 8) table: row b holds the 8 bits of byte b, least significant first."""
    return np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.int64)


_BITS_OF_BYTE = _bit_table()


class OUE(SupportOracle):
    """Optimized unary encoding over ``domain_size`` values: d bits per user."""

    name = "oue"
    report_fields: ClassVar[dict[str, str]] = {"bits": "uint8"}

    @property
    def p(self) -> float:
        """Probability that the user's own bit is 1."""
        return 0.5

    @property
    def q(self) -> float:
        """Probability that any other bit is 1."""
        return math.exp(-self.epsilon) / (1.0 + math.exp(-self.epsilon))  # 1/(e^ε + 1), no overflow

    @property
    def gap(self) -> float:
        """p − q = (1 − e^−ε)/(2(1 + e^−ε)), accurate for tiny ε."""
        return -math.expm1(-self.epsilon) / (2.0 * (1.0 + math.exp(-self.epsilon)))

    @property
    def width(self) -> int:
        """Bytes per packed report."""
        return (self.domain_size + 7) // 8

    @property
    def bits_per_user(self) -> float:
        return self.domain_size

    @property
    def _q_threshold(self) -> np.uint32:
        # bit = (u32 < T) with T = ceil(q 2^32): realised q' = T / 2^32 ∈ [q, q + 2^-32], and
        # (1 - q') / q' <= e^ε, so rounding keeps the ε-LDP guarantee.
        return np.uint32(math.ceil(self.q * 2.0**32))

    # ---- client -------------------------------------------------------------------
    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """Reports of many users; one random byte per bit (plus 3 more bytes for 1 bit in 256).

        Bit v ≠ x is ``U < T`` for a 32-bit uniform U = (B << 24) | L: decided by the byte B
        alone unless B equals T's top byte, and only then are the 24 low bits L drawn.  The own
        bit is ``B < 128``, exactly 1/2.  Same distribution as comparing full 32-bit words, with
        a quarter of the secure random bytes.
        """
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        d, n = self.domain_size, values.size
        out = np.empty((n, self.width), dtype=np.uint8)
        threshold = int(self._q_threshold)
        t_hi, t_lo = np.uint8(threshold >> 24), np.uint64(threshold & 0xFFFFFF)
        rows = max(1, _CHUNK_BITS // d)
        for s in range(0, n, rows):
            e = min(n, s + rows)
            m = e - s
            u = src.uint64(-(-m * d // 8)).view(np.uint8)[: m * d].reshape(m, d)
            bits = u < t_hi
            ties = np.flatnonzero(u.reshape(-1) == t_hi)
            if ties.size:
                bits.reshape(-1)[ties] = (src.uint64(ties.size) >> np.uint64(40)) < t_lo
            r = np.arange(m)
            bits[r, values[s:e]] = u[r, values[s:e]] < 128  # own bit: exactly 1/2
            out[s:e] = np.packbits(bits, axis=1, bitorder="little")
        return {"bits": out}

    def output_probabilities(self, value: int) -> np.ndarray:
        """Probability of each of the 2^d bit vectors (index = the vector read as little-endian bits).

        Only for small domains (d <= 16); the bits are independent, so this is a product.
        """
        d = self.domain_size
        if d > 16:
            raise ValueError(f"domain_size must be <= 16 to enumerate 2^d outputs, got {d}")
        value = int(as_domain_values([value], d, name="value")[0])
        vectors = (np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1
        ones = np.full(d, self.q)
        ones[value] = self.p
        return np.prod(np.where(vectors == 1, ones, 1 - ones), axis=1)

    # ---- aggregator -----------------------------------------------------------------
    def _accumulate(self, reports: dict[str, np.ndarray]) -> np.ndarray:
        bits = reports["bits"]
        d, w = self.domain_size, self.width
        if bits.dtype != np.uint8 or bits.ndim != 2 or bits.shape[1] != w:
            raise ValueError(
                f"reports['bits'] must be a uint8 array of shape (n, {w}), got {bits.dtype} {bits.shape}"
            )
        if d % 8 and bits.size and np.any(bits[:, -1] >> np.uint8(d % 8)):
            raise ValueError(f"reports['bits'] has non-zero padding bits beyond domain_size={d}")
        return self.column_sums(bits)

    def column_sums(self, bits: np.ndarray) -> np.ndarray:
        """Number of users with each bit set, from packed reports, in chunks of bounded memory.

        Narrow reports: one bincount of (column, byte) pairs, then bytes to bits (O(w·256) once).
        Wide reports (d > 4096): unpack each chunk and sum its columns (the byte table would be big).
        """
        d, w = self.domain_size, self.width
        if w > 512:
            counts = np.zeros(d, dtype=np.int64)
            rows = max(1, _CHUNK_BITS // d)
            for s in range(0, bits.shape[0], rows):
                counts += np.unpackbits(bits[s : s + rows], axis=1, count=d, bitorder="little").sum(
                    axis=0, dtype=np.int64
                )
            return counts
        byte_counts = np.zeros(w * 256, dtype=np.int64)
        offsets = (np.arange(w, dtype=np.int64) * 256)[None, :]
        rows = max(1, _CHUNK_BITS // (8 * w))
        for s in range(0, bits.shape[0], rows):
            idx = bits[s : s + rows].astype(np.int64) + offsets
            byte_counts += np.bincount(idx.ravel(), minlength=w * 256)
        # counts of each byte value per column -> counts of each bit per column
        per_bit = byte_counts.reshape(w, 256) @ _BITS_OF_BYTE
        return per_bit.ravel()[:d]

    # ---- simulation -------------------------------------------------------------------
    def simulate_counts(self, true_counts, rng: RNGLike = None) -> CountState:
        """Column sums drawn directly: Binomial(n_v, 1/2) + Binomial(n − n_v, q), independent over v."""
        c = self._check_true_counts(true_counts)
        g = as_generator(rng)
        n = int(c.sum())
        counts = g.binomial(c, self.p) + g.binomial(n - c, self.q)
        return CountState(self.name, self.params, n, counts.astype(np.int64))

    # ---- analyst ------------------------------------------------------------------------
    @property
    def support_probabilities(self) -> tuple[float, float]:
        return self.p, self.q

    def user_linear_variance(self, weights) -> np.ndarray:
        """Per value x: variance of one user's contribution to Σ_v w_v n̂_v (bits independent)."""
        w = np.asarray(weights, dtype=float)
        p, q = self.p, self.q
        return (np.sum(w**2) * q * (1 - q) + w**2 * (p * (1 - p) - q * (1 - q))) / self.gap**2
