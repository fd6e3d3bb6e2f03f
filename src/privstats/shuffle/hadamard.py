"""Private-coin multi-message Hadamard-response protocol (Ghazi et al., Algorithm 1).

Item x ∈ [0, B) is Hadamard index j = x + 1; a user holding a set S (|S| ≤ k) pads it
to exactly k indices with B+1..B+k and, for each index j, sends a τ-tuple drawn
uniformly from C_j^τ, C_j = {v ∈ [0, B') : popcount(v AND j) even}; then ρ blanket
tuples uniform over [0, B')^τ.  ρ is calibrated by the exact swap accounting of
:mod:`privstats.shuffle.calibrate` (the paper's Chernoff constant is ``calibration="chernoff"``).

Wire format.  The analyzer only needs, per tuple, the set of j with tuple ∈ C_j^τ,
which is the null space K = {j : ⟨ι_s, j⟩ = 0 ∀s} of the τ × log₂B' bit matrix.
Clients send K (its unique reduced-echelon basis, ``1 + d`` uint32 words for
dim K = d) instead of the tuple.  K is a deterministic function of the tuple, so
the shuffled multiset of K's is a post-processing of Algorithm 1's shuffled
multiset and has the same (ε, δ) guarantee — while the analyzer becomes a
span enumeration plus a bincount (no Gaussian elimination), and messages shrink
from τ·log₂B' bits to 8 + 32·d (d is 1 or 2 for most messages).

>>> proto = HadamardMultiMessage(16, n=256, epsilon=1.0, delta=1e-6)
>>> state = proto.simulate(np.zeros(256, dtype=int), rng=0)
>>> est = proto.estimate(state)
>>> bool(abs(est.value[0] - 256) < 6 * est.stderr[0])
True
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Unpack

import numpy as np

from privstats.estimate import Estimate
from privstats.local.base import CountState
from privstats.privacy.guarantees import ApproxDP
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.shuffle.arrived import arrived_guarantee
from privstats.shuffle.calibrate import group_delta_factor, hadamard_blanket, hadamard_swap_delta
from privstats.shuffle.common import FrequencyProtocol, PublicCounts, base_params, shuffle_estimate
from privstats.validation import (
    as_domain_values,
    check_array,
    check_choice,
    check_positive_int,
)

SIMULATE_MAX_MESSAGES = 1 << 26
"""Guard (issue 18): message-level simulation above this many messages would run for minutes."""
__all__ = [
    "HadamardMultiMessage",
    "canonical_basis",
    "kernels_from_tuples",
    "messages_from_bytes",
    "messages_to_bytes",
]


# ------------------------------------------------------------------ F2 linear algebra (vectorized over rows) ---


def _leading_bit(v: np.ndarray) -> np.ndarray:
    """Mask of the highest set bit of each uint32 (0 for 0)."""
    x = v.astype(np.uint32)
    for s in (1, 2, 4, 8, 16):
        x = x | (x >> np.uint32(s))
    return x ^ (x >> np.uint32(1))


def canonical_basis(basis: np.ndarray) -> np.ndarray:
    """Reduced row-echelon form (pivots = leading bits, descending) of each row's d independent vectors.

    ``basis`` has shape (N, d); the result is the unique basis of the spanned subspace.
    """
    B = np.array(basis, dtype=np.uint32, copy=True)
    N, d = B.shape
    rows = np.arange(N)
    for i in range(d):
        j = np.argmax(B[:, i:], axis=1) + i
        top = B[rows, j].copy()
        B[rows, j] = B[:, i]
        B[:, i] = top
        lead = _leading_bit(top)
        for o in range(d):
            if o != i:
                B[:, o] ^= np.where((B[:, o] & lead) != 0, top, np.uint32(0))
    return B


def kernels_from_tuples(tuples: np.ndarray, m: int) -> np.ndarray:
    """Null spaces of tuples (shape (N, τ), entries < 2^m) as message rows [d, basis…] (uint32)."""
    T = np.asarray(tuples, dtype=np.uint32)
    N, tau = T.shape
    slots = np.zeros((N, m), dtype=np.uint32)  # slot b holds the basis vector with leading bit b
    for s in range(tau):
        v = T[:, s].copy()
        for b in range(m - 1, -1, -1):
            has = ((v >> np.uint32(b)) & np.uint32(1)).astype(bool)
            slot = slots[:, b]
            occ = slot != 0
            place = has & ~occ
            slots[:, b] = np.where(place, v, slot)
            v = np.where(place, np.uint32(0), np.where(has & occ, v ^ slot, v))
    for b in range(m):  # full reduction: clear pivot b from higher slots
        piv = slots[:, b]
        nz = piv != 0
        for b2 in range(b + 1, m):
            hit = nz & (((slots[:, b2] >> np.uint32(b)) & np.uint32(1)) != 0)
            slots[:, b2] = np.where(hit, slots[:, b2] ^ piv, slots[:, b2])
    free = slots == 0
    kern = np.zeros((N, m), dtype=np.uint32)
    for f in range(m):
        v = np.full(N, np.uint32(1) << np.uint32(f), dtype=np.uint32)
        for b in range(m):
            v |= (((slots[:, b] >> np.uint32(f)) & np.uint32(1)) << np.uint32(b)).astype(np.uint32)
        kern[:, f] = v
    d = free.sum(axis=1)
    order = np.argsort(~free, axis=1, kind="stable")
    kern = np.take_along_axis(kern, order, axis=1)
    return _pack(d, kern)


def _pack(d: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Rows [d, canonical basis (d vectors), zero padding]."""
    N = d.size
    dmax = int(d.max()) if N else 1
    out = np.zeros((N, 1 + max(dmax, 1)), dtype=np.uint32)
    out[:, 0] = d
    for dd in np.unique(d):
        if dd == 0:
            continue
        idx = np.nonzero(d == dd)[0]
        out[idx, 1 : 1 + dd] = canonical_basis(basis[idx, :dd])
    return out


def messages_to_bytes(messages: np.ndarray) -> list[bytes]:
    """Wire form of message rows: one byte d, then d little-endian uint32 basis vectors."""
    return [bytes([int(r[0])]) + r[1 : 1 + int(r[0])].astype("<u4").tobytes() for r in np.asarray(messages)]


def messages_from_bytes(blobs: list[bytes]) -> np.ndarray:
    """Inverse of :func:`messages_to_bytes` (raises ValueError on a malformed message)."""
    dims = []
    for b in blobs:
        if len(b) < 1 or len(b) != 1 + 4 * b[0]:
            raise ValueError("messages contain a malformed Hadamard message")
        dims.append(b[0])
    dmax = max(dims) if dims else 1
    out = np.zeros((len(blobs), 1 + max(dmax, 1)), dtype=np.uint32)
    for i, b in enumerate(blobs):
        out[i, 0] = b[0]
        out[i, 1 : 1 + b[0]] = np.frombuffer(b[1:], dtype="<u4")
    return out


@lru_cache(maxsize=256)
def _rank_pmf(rows: int, dim: int) -> np.ndarray:
    """P(rank = r), r = 0..min(rows, dim), of ``rows`` i.i.d. uniform vectors in F2^dim."""
    top = min(rows, dim)
    out = np.zeros(top + 1)
    for r in range(top + 1):
        lp = -rows * dim * math.log(2)
        for i in range(r):
            lp += math.log(2.0**rows - 2.0**i) + math.log(2.0**dim - 2.0**i) - math.log(2.0**r - 2.0**i)
        out[r] = math.exp(lp)
    return out / out.sum()


def _span(basis: np.ndarray) -> np.ndarray:
    """All 2^d elements of each row's span, shape (N, 2^d)."""
    span = np.zeros((basis.shape[0], 1), dtype=np.uint32)
    for i in range(basis.shape[1]):
        span = np.concatenate([span, span ^ basis[:, i : i + 1]], axis=1)
    return span


# ------------------------------------------------------------------------------------------ protocol -----------


class HadamardMultiMessage(FrequencyProtocol):
    """Algorithm 1 over the domain [0, B) for n users holding sets of at most k items."""

    name = "shuffle-hadamard"

    def __init__(
        self,
        domain_size: int,
        *,
        k: int = 1,
        rho: int | None = None,
        tau: int | None = None,
        calibration: str = "exact",
        **public: Unpack[PublicCounts],
    ):
        super().__init__(domain_size, **public)
        self.k = check_positive_int(k, "k")
        check_choice(calibration, "calibration", ("exact", "chernoff"))
        if self.domain_size + self.k + 1 > 1 << 31:  # indices 1..B+k on 31-bit words
            raise ValueError(
                f"domain_size + k = {self.domain_size} + {self.k} is too large for the Hadamard protocol "
                "(domain_size + k + 1 must be at most 2^31)"
            )
        self.b_prime = 1 << math.ceil(math.log2(self.domain_size + self.k + 1))
        self.m = int(math.log2(self.b_prime))
        if rho is None:
            rho, self.accounting = hadamard_blanket(
                self.n, self.epsilon, self.delta, k=self.k, tau=tau, method=calibration
            )
            tau = self.accounting["tau"]
        else:
            rho = check_positive_int(rho, "rho", minimum=0)
            tau = max(1, math.floor(math.log2(self.n))) if tau is None else check_positive_int(tau, "tau")
            self.accounting = {"tau": tau, "calibration": "given"}
        self.rho, self.tau = int(rho), int(tau)

    # ---- description ------------------------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        return base_params(self, k=self.k, rho=self.rho, tau=self.tau, b_prime=self.b_prime)

    @property
    def messages_per_user(self) -> int:
        return self.k + self.rho

    def expected_dims(self) -> tuple[float, float]:
        """Expected kernel dimension of a real and of a blanket message."""
        real = _rank_pmf(self.tau, self.m - 1)
        blank = _rank_pmf(self.tau, self.m)
        return (
            float(np.sum((self.m - np.arange(real.size)) * real)),
            float(np.sum((self.m - np.arange(blank.size)) * blank)),
        )

    @property
    def bits_per_user(self) -> float:
        dr, db = self.expected_dims()
        return self.k * (8 + 32 * dr) + self.rho * (8 + 32 * db)

    # ---- client -----------------------------------------------------------------------------------------------
    def _indices(self, sets) -> np.ndarray:
        """(n, k) Hadamard indices, padded with B+1..B+k."""
        arr = check_array(sets, "sets", kind="any", ndim=None)
        if arr.ndim == 1:
            arr = as_domain_values(arr, self.domain_size)[:, None]
        if arr.ndim != 2 or arr.shape[1] > self.k:
            raise ValueError(f"sets must be an (n, <= {self.k}) array of items (-1 for none)")
        arr = arr.astype(np.int64)
        if arr.size and (arr.max() >= self.domain_size or arr.min() < -1):
            raise ValueError(f"sets must hold items in [0, {self.domain_size}) or -1 for none")
        idx = np.where(arr >= 0, arr + 1, 0)
        full = np.zeros((arr.shape[0], self.k), dtype=np.int64)
        full[:, : arr.shape[1]] = idx
        pad = self.domain_size + 1 + np.arange(self.k)
        full = np.where(full == 0, pad[None, :], full)
        return full

    def encode(self, items, rng: RNGLike = None) -> np.ndarray:
        """One user's k + ρ messages (rows [d, basis…]) for an item or a set of ≤ k items; CSPRNG by default."""
        items = np.atleast_1d(np.asarray(items))
        sets = np.full((1, self.k), -1, dtype=np.int64)
        if items.size > self.k:
            raise ValueError(f"items: a user holds at most k={self.k} items, this set has more")
        sets[0, : items.size] = items
        return self.encode_batch(sets, rng)

    def encode_batch(self, sets, rng: RNGLike = None) -> np.ndarray:
        """Messages of many users, as real tuples drawn exactly and reduced to their null spaces.

        The rows are in user order; pass them through a shuffler before an analyzer sees them.
        """
        idx = self._indices(sets)
        src = as_source(rng)
        j = idx.ravel().astype(np.uint32)
        n_users = idx.shape[0]
        real = src.integers(self.b_prime, size=(j.size, self.tau)).astype(np.uint32)
        odd = (np.bitwise_count(real & j[:, None]) & 1).astype(bool)
        low = (j & (~j + np.uint32(1))).astype(np.uint32)  # lowest set bit of j: flips the parity
        real = np.where(odd, real ^ low[:, None], real)
        blank = src.integers(self.b_prime, size=(n_users * self.rho, self.tau)).astype(np.uint32)
        return kernels_from_tuples(np.concatenate([real, blank]), self.m)

    # ---- aggregator -------------------------------------------------------------------------------------------
    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        """Fold message rows (any order, any batch size) into the counts c_j of the B items."""
        state = self.new_state() if state is None else state
        self.check_state(state)
        msgs = np.asarray(messages)
        if msgs.ndim != 2 or msgs.shape[1] < 2 or msgs.dtype.kind not in "iu":
            raise ValueError("messages must be a 2-d integer array of rows [d, basis...]")
        d = msgs[:, 0]
        if msgs.size and (
            (msgs.dtype.kind == "i" and msgs.min() < 0)
            or d.max() > min(self.m, msgs.shape[1] - 1)
            or msgs.max() >= self.b_prime
        ):  # column 0 holds d <= m < B', so max() checks the basis
            raise ValueError("messages contain a malformed Hadamard message")
        counts = self._count_span_items(msgs, d)
        return CountState(self.name, self.params, state.n + msgs.shape[0], state.counts + counts)

    def _count_span_items(self, msgs: np.ndarray, d: np.ndarray) -> np.ndarray:
        """c_j for the B items: every nonzero element j of each message's span counts once.

        One pass covers the span {b1, b2, b1^b2} of the first two basis vectors of every
        row at once (a vector beyond a row's dimension d is masked to 0, and 0 is Hadamard
        index 0, which is no item); only rows with d >= 3 (a few percent) enumerate the rest
        of their span.  Bincounts run over all B' indices, so no filtering pass is needed.
        """
        bins = self.b_prime
        if msgs.shape[0] == 0:
            return np.zeros(self.domain_size, dtype=np.int64)
        parts = [np.where(d >= 1, msgs[:, 1], 0).astype(np.uint32, copy=False)]
        if msgs.shape[1] > 2:
            has2 = d >= 2
            parts.append(np.where(has2, msgs[:, 2], 0).astype(np.uint32, copy=False))
            parts.append(np.where(has2, parts[0] ^ parts[1], np.uint32(0)))
            big = msgs[np.flatnonzero(d >= 3)]  # a few percent of the rows
            for dd in range(3, min(int(d.max()), msgs.shape[1] - 1) + 1):
                rows = big[big[:, 0] == dd, 1 : 1 + dd].astype(np.uint32, copy=False)
                if rows.shape[0]:
                    parts.append(_span(rows)[:, 4:].ravel())  # span elements that use b3…
        total = np.bincount(np.concatenate(parts), minlength=bins)
        return total[1 : 1 + self.domain_size]
        zero = np.uint32(0)
        b1 = np.where(d >= 1, msgs[:, 1], 0).astype(np.uint32, copy=False)
        total += np.bincount(b1, minlength=bins)
        if msgs.shape[1] > 2:
            has2 = d >= 2
            b2 = np.where(has2, msgs[:, 2], 0).astype(np.uint32, copy=False)
            total += np.bincount(b2, minlength=bins)
            total += np.bincount(np.where(has2, b1 ^ b2, zero), minlength=bins)
            for dd in range(3, min(int(d.max()), msgs.shape[1] - 1) + 1):
                rows = msgs[d == dd, 1 : 1 + dd].astype(np.uint32, copy=False)
                if rows.shape[0]:
                    total += np.bincount(_span(rows)[:, 4:].ravel(), minlength=bins)  # elements using b3…
        return total[1 : 1 + self.domain_size]  # Hadamard index j is item j − 1

    # ---- simulation ---------------------------------------------------------------------------------------------
    def sample_messages(self, indices: np.ndarray, n_blanket: int, rng: RNGLike = None) -> np.ndarray:
        """Message rows drawn directly from their exact law (simulation; numpy Generator).

        A real tuple for j has rows uniform in j^⊥, so its null space is a uniform subspace
        containing j whose dimension is m − rank; blanket tuples give a uniform subspace of
        dimension m − rank of τ uniform vectors in F2^m.  Subspaces are drawn as uniform
        ordered bases (each new vector uniform outside the current span), then canonicalized.
        """
        g = as_generator(rng)
        j = np.asarray(indices, dtype=np.uint32).ravel()
        nr, nb = j.size, int(n_blanket)
        pr, pb = _rank_pmf(self.tau, self.m - 1), _rank_pmf(self.tau, self.m)
        d_real = (self.m - np.searchsorted(np.cumsum(pr), g.random(nr) * pr.sum(), side="right")).astype(
            np.int64
        )
        d_blank = (self.m - np.searchsorted(np.cumsum(pb), g.random(nb) * pb.sum(), side="right")).astype(
            np.int64
        )
        dmax = max(1, int(d_real.max(initial=0)), int(d_blank.max(initial=0)))
        out = np.zeros((nr + nb, 1 + dmax), dtype=np.uint32)
        out[:nr, 0] = d_real
        out[nr:, 0] = d_blank
        for dd in range(1, dmax + 1):
            for offset, dsel, seeded in ((0, d_real, True), (nr, d_blank, False)):
                rows = np.flatnonzero(dsel == dd)
                if rows.size == 0:
                    continue
                B = np.zeros((rows.size, dd), dtype=np.uint32)
                if seeded:
                    B[:, 0] = j[rows]
                else:
                    B[:, 0] = g.integers(1, self.b_prime, size=rows.size, dtype=np.uint32)
                for i in range(1, dd):
                    span = _span(B[:, :i])
                    todo = np.arange(rows.size)
                    while todo.size:
                        cand = g.integers(0, self.b_prime, size=todo.size, dtype=np.uint32)
                        bad = np.any(span[todo] == cand[:, None], axis=1)
                        B[todo[~bad], i] = cand[~bad]
                        todo = todo[bad]
                out[offset + rows, 1 : 1 + dd] = canonical_basis(B) if dd > 1 else B
        return out

    def simulate(self, sets, rng: RNGLike = None, *, chunk_users: int | None = None) -> CountState:
        """Aggregator state for the whole population (message-level, chunked; exact law).

        Chunks hold about 2^21 messages (``chunk_users`` overrides), so memory stays bounded
        however large ρ is; time grows with the n(k + ρ) messages.
        """
        idx = self._indices(sets)
        total = idx.shape[0] * self.messages_per_user
        if total > SIMULATE_MAX_MESSAGES:  # ~6.7e7 messages take ~10 s; 2.3e9 (n = 2^20, ε = 1, k = 7) ~6 min
            raise ValueError(
                f"epsilon={self.epsilon} needs rho={self.rho} blanket messages per user: simulating "
                f"{total:.3g} shuffled messages (n={idx.shape[0]}, k={self.k}) exceeds "
                f"{SIMULATE_MAX_MESSAGES:.3g} and would run for minutes; use a larger epsilon or "
                "fewer users per run"
            )
        g = as_generator(rng)
        state = self.new_state()
        if chunk_users is None:
            chunk_users = max(1, (1 << 21) // self.messages_per_user)
        for s in range(0, idx.shape[0], chunk_users):
            part = idx[s : s + chunk_users]
            state = self.aggregate(self.sample_messages(part, part.shape[0] * self.rho, g), state)
        return state

    # ---- analyst -------------------------------------------------------------------------------------------------
    def estimate(self, state: CountState) -> Estimate:
        """Unbiased counts x̂_j = (c_j − N 2^−τ)/(1 − 2^−τ) for the B items, N = messages received."""
        self.check_state(state)
        p = 2.0**-self.tau
        c = state.counts.astype(np.float64)
        value = (c - state.n * p) / (1 - p)
        var = np.maximum(state.n - np.clip(value, 0, state.n), 0) * p / (1 - p)
        users = state.n // self.messages_per_user  # every user sends exactly k + ρ messages
        guarantee, arrived = self.arrived_guarantee(users)
        return shuffle_estimate(
            self,
            value,
            np.sqrt(var),
            guarantee,
            users,
            {"accounting": self.accounting, "paper_bits_per_message": self.tau * self.m, **arrived},
        )

    def arrived_guarantee(self, users: int) -> tuple[ApproxDP, dict]:
        """The guarantee for the ``users`` who sent their k + ρ messages: the exact swap accountant
        with their users·ρ blanket tuples and group privacy over k swaps, when fewer than n came."""

        def delta_of_eps(eps: float) -> float:
            return hadamard_swap_delta(eps / self.k, users * self.rho, self.tau) * group_delta_factor(
                self.k, eps / self.k
            )

        return arrived_guarantee(self.epsilon, self.delta, self.n, users, delta_of_eps, stacklevel=4)

    def variance(self, true_counts) -> np.ndarray:
        """Exact Var(x̂_j) = (N − x_j) 2^−τ/(1 − 2^−τ), N = n(k + ρ)."""
        p = 2.0**-self.tau
        N = self.n * (self.k + self.rho)
        return (N - np.asarray(true_counts, dtype=float)) * p / (1 - p)
