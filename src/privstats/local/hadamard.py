"""Hadamard response (HR; Acharya, Sun and Zhang 2019).

Let K be the smallest power of two ≥ d + 1.  Value x uses Hadamard row x + 1
(row 0, all ones, is skipped) and its "positive" set
``C_x = {j ∈ [K] : popcount((x+1) & j) is even}`` of size K/2.  A user reports an
index j ∈ [K]: uniform on C_x with probability p = e^ε/(e^ε + 1), else uniform on
the complement.  So every output has probability 2p/K or 2(1 − p)/K and the ratio
between any two inputs is at most e^ε.

Client (O(1) per user): draw j uniform on [K] and the side (C_x w.p. p); if j lies
on the wrong side, flip the lowest set bit of x + 1 in j, which toggles the parity
and maps each side bijectively onto the other.  The report costs log2 K bits.

Aggregator: histogram h over [K].  Analyst: ``S_v = (n + (H h)_{v+1})/2`` counts the
reports in C_v (fast Walsh–Hadamard transform, O(K log K)); ``E[S_v] = n_v p +
(n − n_v)/2`` since for x ≠ v, C_v splits C_x and its complement in halves; hence
``n̂_v = (S_v − n/2)/(p − 1/2)`` with variance ``(n_v p(1−p) + (n − n_v)/4)/(p − 1/2)^2``.

>>> from privstats.local import HadamardResponse
>>> oracle = HadamardResponse(100, epsilon=1.0)
>>> est = oracle.estimate(oracle.simulate([4] * 6000 + [8] * 4000, rng=0))
>>> bool(abs(est.value[4] - 6000) < 6 * est.stderr[4])
True
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from privstats.local.base import CountState, SupportOracle
from privstats.privacy.randomness import RNGLike, as_generator, as_source, dyadic_threshold
from privstats.validation import as_domain_values

__all__ = ["HadamardResponse", "fwht"]

_SIM_CHUNK = 1 << 20


def parity(x: np.ndarray) -> np.ndarray:
    """popcount(x) mod 2 for non-negative int64 arrays, as int64."""
    x = np.asarray(x, dtype=np.int64)
    if hasattr(np, "bitwise_count"):
        return (np.bitwise_count(x) & 1).astype(np.int64)
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        x ^= x >> s
    return x & 1


def fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh–Hadamard transform along the last axis (length a power of two).

    ``fwht(a)[r] = Σ_j (−1)^{popcount(r & j)} a[j]``, in O(K log K).
    """
    a = np.array(a, copy=True)
    k = a.shape[-1]
    if k & (k - 1):
        raise ValueError(f"a must have a power-of-two length, got {k}")
    lead = a.shape[:-1]
    h = 1
    while h < k:
        v = a.reshape(*lead, k // (2 * h), 2, h)
        x, y = v[..., 0, :].copy(), v[..., 1, :]
        v[..., 0, :] += y
        v[..., 1, :] = x - y
        h *= 2
    return a


class HadamardResponse(SupportOracle):
    """Hadamard response over ``domain_size`` values: one index in [K], K = 2^ceil(log2(d+1))."""

    name = "hr"
    report_fields: ClassVar[dict[str, str]] = {"index": "int64"}

    @property
    def K(self) -> int:
        """Output alphabet size: the smallest power of two ≥ d + 1."""
        return 1 << math.ceil(math.log2(self.domain_size + 1))

    @property
    def state_size(self) -> int:
        return self.K

    @property
    def p(self) -> float:
        """Probability that the report lies in the user's own set C_x."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))  # e^ε/(e^ε + 1), no overflow

    @property
    def gap(self) -> float:
        """p − 1/2 = (1 − e^−ε)/(2(1 + e^−ε)), accurate for tiny ε."""
        return -math.expm1(-self.epsilon) / (2.0 * (1.0 + math.exp(-self.epsilon)))

    @property
    def bits_per_user(self) -> float:
        return math.log2(self.K)

    # ---- client -------------------------------------------------------------------
    def _draw(self, values: np.ndarray, uniform_index: np.ndarray, want_own_side: np.ndarray) -> np.ndarray:
        row = values + 1
        on_own_side = parity(row & uniform_index) == 0
        lowest_bit = row & -row
        return np.where(on_own_side == want_own_side, uniform_index, uniform_index ^ lowest_bit)

    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        j = src.integers(self.K, size=values.size)
        own = src.bernoulli_dyadic(dyadic_threshold(self.p, round_up=False), values.size)  # p rounded down
        return {"index": self._draw(values, np.asarray(j, dtype=np.int64), own)}

    def output_probabilities(self, value: int) -> np.ndarray:
        value = int(as_domain_values([value], self.domain_size, name="value")[0])
        in_set = parity((value + 1) & np.arange(self.K)) == 0
        return np.where(in_set, 2 * self.p / self.K, 2 * (1 - self.p) / self.K)

    # ---- aggregator -----------------------------------------------------------------
    def _accumulate(self, reports: dict[str, np.ndarray]) -> np.ndarray:
        j = reports["index"]
        if j.ndim != 1 or (j.size and (j.dtype.kind not in "iu" or j.min() < 0 or j.max() >= self.K)):
            raise ValueError(f"reports['index'] must be integers in [0, {self.K})")
        return np.bincount(j.astype(np.int64), minlength=self.K)

    # ---- simulation -------------------------------------------------------------------
    def simulate_counts(self, true_counts, rng: RNGLike = None) -> CountState:
        """Draws every user's report exactly as the client does (vectorized, in chunks of users)."""
        c = self._check_true_counts(true_counts)
        gen = as_generator(rng)
        n = int(c.sum())
        ends = np.cumsum(c)
        counts = np.zeros(self.K, dtype=np.int64)
        for s in range(0, n, _SIM_CHUNK):
            e = min(n, s + _SIM_CHUNK)
            values = np.searchsorted(ends, np.arange(s, e), side="right")
            j = gen.integers(0, self.K, size=e - s)
            own = gen.random(e - s) < self.p
            counts += np.bincount(self._draw(values, j, own), minlength=self.K)
        return CountState(self.name, self.params, n, counts)

    # ---- analyst ------------------------------------------------------------------------
    @property
    def support_probabilities(self) -> tuple[float, float]:
        """A report lies in C_v w.p. p if the value is v and w.p. 1/2 otherwise (orthogonal rows)."""
        return self.p, 0.5

    def _support_counts(self, state: CountState) -> np.ndarray:
        """S_v = #reports in C_v = (n + (H h)_{v+1})/2, by one fast Walsh–Hadamard transform."""
        transformed = fwht(state.counts.astype(np.int64))
        return (state.n + transformed[1 : self.domain_size + 1]) / 2

    def user_linear_variance(self, weights) -> np.ndarray:
        """Per value x: variance of one user's contribution to Σ_v w_v n̂_v.

        The indicators ``B_v = 1[j ∈ C_v]`` of one user with value x are pairwise independent
        except when (v+1) ⊕ (w+1) = x+1, where Cov(B_v, B_w) = (2p − 1)/4; those pairs are a
        XOR-convolution, computed for all x at once with the Walsh–Hadamard transform.
        """
        w = np.asarray(weights, dtype=float)
        p, K, d = self.p, self.K, self.domain_size
        omega = np.zeros(K)
        omega[1 : d + 1] = w
        pair_sums = fwht(fwht(omega) ** 2) / K  # Σ_{a ⊕ b = s} ω_a ω_b
        var = np.sum(w**2) / 4 + w**2 * (p * (1 - p) - 0.25) + (2 * p - 1) / 4 * pair_sums[1 : d + 1]
        return var / self.gap**2
