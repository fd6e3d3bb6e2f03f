"""Two-server validity check of a secret-shared one-hot contribution (malicious clients).

A client's contribution is a vector x over the prime field F_p (p = 2^61 - 1) made of
one or more *one-hot blocks* (a grid cell for an ECDF, a label-split cell for a ROC
curve).  The client splits x additively between a leader and a helper; neither server
may learn x, yet both must refuse an x that is not a valid contribution (an entry other
than 0/1, two ones in a block, no one, 1000 times a one-hot, a negative entry…), since a
client with a modified program could otherwise move a statistic by more than one
honest record.

The check is the sketching idea of Boneh, Boyle, Corrigan-Gibbs, Gilboa and Ishai
(*Lightweight Techniques for Private Heavy Hitters*, S&P 2021) with a polynomial
challenge.  For a block x_0..x_{N-1} let P(t) = Σ x_i t^i.  Then

    P(t)^2 = P(t^2)  as polynomials   ⇔   P = 0 or P = t^a   (a single 1),

(the lowest non-zero coefficient must be 1, and the next one, at t^{a+b}, appears
only on the left with coefficient 2 x_b), and Σ x_i = P(1) = 1 excludes P = 0.  The
servers draw a joint random t (from a verify key the client never sees and the report
id), compute shares of z = P(t) and z* = P(t^2) by linear algebra on their shares, and
need one multiplication z·z: the client attaches shares of a square pair (a, c = a^2)
and the servers open d = z - a (uniform, so it reveals nothing) and form shares of
d^2 + 2 d a + c = z^2.  A client that cheats on c (c = a^2 + Δ) only adds the constant Δ
to a polynomial that is non-constant whenever x is invalid.  All checks are folded into
one value with joint random weights λ_b, μ_b:

    W = Σ_b λ_b (z_b^2 - z*_b) + μ_b (Σ_i x_{b,i} - 1),

whose two shares the servers exchange; they accept iff the shares sum to 0.

**Soundness.**  For any invalid contribution (and any choice of the client's square
pair) W is a non-zero polynomial of total degree at most 2N - 1 in the joint
randomness (N = the longest block), so by Schwartz-Zippel it vanishes with probability
at most (2N - 1)/p: 2^-50.0 for N = 1025 and 2^-49.0 for N = 2050 with p = 2^61 - 1
(:func:`soundness_error`).  An honest contribution is always accepted.
**Zero knowledge** (honest but curious servers): each server sees its share, d (uniform)
and the other's share of W, which is minus its own for a valid x.

Everything is vectorized over a batch of reports (numpy uint64; products split in 32-bit
halves, reduced with 2^61 ≡ 1).  :class:`SmallField` runs the same check over a tiny
prime so that the soundness bound can be checked empirically.

>>> import numpy as np
>>> layout = OneHotLayout((4,))
>>> x = layout.one_hot(np.array([[2], [0]]))           # two honest reports
>>> x[1, 1] = 5                                          # ... and the second one cheats
>>> s0, s1 = share_contributions(x, layout, rng=0)
>>> key, rids = b"k" * 16, np.frombuffer(bytes(range(32)), dtype="S16")
>>> validate_shares(s0, s1, layout, key, b"task", rids).tolist()
[True, False]
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = [
    "FIELD",
    "P61",
    "Field61",
    "JointRandomness",
    "OneHotLayout",
    "PrepState",
    "SmallField",
    "check_value",
    "decide",
    "expand_field_seed",
    "expand_seeds",
    "joint_randomness",
    "prepare",
    "share_contributions",
    "soundness_error",
    "validate_shares",
]

P61 = (1 << 61) - 1
_M32 = np.uint64(0xFFFFFFFF)
_M29 = np.uint64((1 << 29) - 1)
_P = np.uint64(P61)
_S61 = np.uint64(61)
_S32 = np.uint64(32)
_S29 = np.uint64(29)


class Field61:
    """Arithmetic in F_p, p = 2^61 - 1, on numpy uint64 arrays (elements in [0, p))."""

    p = P61
    bits = 61

    @staticmethod
    def reduce(a: Any) -> np.ndarray:
        """Any uint64 (< 2^64) to [0, p)."""
        a = np.asarray(a, dtype=np.uint64)
        s = (a & _P) + (a >> _S61)
        return np.where(s >= _P, s - _P, s)

    @staticmethod
    def add(a: Any, b: Any) -> np.ndarray:
        s = np.asarray(a, dtype=np.uint64) + np.asarray(b, dtype=np.uint64)
        return np.where(s >= _P, s - _P, s)

    @staticmethod
    def sub(a: Any, b: Any) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        b = np.asarray(b, dtype=np.uint64)
        return np.where(a >= b, a - b, a + (_P - b))

    @staticmethod
    def neg(a: Any) -> np.ndarray:
        a = np.asarray(a, dtype=np.uint64)
        return np.where(a == 0, a, _P - a)

    @staticmethod
    def mul(a: Any, b: Any) -> np.ndarray:
        """a·b mod p: 32-bit halves (a1 < 2^29), 2^64 ≡ 8 and 2^61 ≡ 1 (mod p)."""
        a = np.asarray(a, dtype=np.uint64)
        b = np.asarray(b, dtype=np.uint64)
        a0, a1 = a & _M32, a >> _S32
        b0, b1 = b & _M32, b >> _S32
        lo = a0 * b0  # < 2^64
        cross = a1 * b0 + a0 * b1  # < 2^62
        hi = a1 * b1  # < 2^58
        total = (hi << np.uint64(3)) + (cross >> _S29) + ((cross & _M29) << _S32) + (lo & _P) + (lo >> _S61)
        return Field61.reduce(total)  # total < 2^63

    @staticmethod
    def dot(x: Any, y: Any) -> np.ndarray:
        """Σ_i x_i y_i along the last axis (products split in 32-bit halves before summing)."""
        prod = Field61.mul(x, y)
        if prod.shape[-1] >= 1 << 31:
            raise ValueError("dot products are limited to 2^31 terms")
        lo = np.sum(prod & _M32, axis=-1, dtype=np.uint64)  # < 2^63
        hi = np.sum(prod >> _S32, axis=-1, dtype=np.uint64)  # < 2^60
        return Field61.add(Field61.reduce(lo), Field61.mul(Field61.reduce(hi), np.uint64(1 << 32)))

    @staticmethod
    def matmul(x: Any, r: Any) -> np.ndarray:
        """X (B, n) @ R (n, k) over F_p with float64 BLAS, exactly.

        Both sides are split in three 21-bit limbs; a limb product is < 2^42, so a sum of
        2048 of them is < 2^53 and exact in float64.  Longer rows are summed in chunks.
        """
        x = np.asarray(x, dtype=np.uint64)
        r = np.asarray(r, dtype=np.uint64)
        B, n = x.shape
        k = r.shape[1]
        m21 = np.uint64((1 << 21) - 1)
        out = np.zeros((B, k), dtype=np.uint64)
        for c0 in range(0, n, 2048):
            xc, rc = x[:, c0 : c0 + 2048], r[c0 : c0 + 2048]
            r_l = np.concatenate(
                [((rc >> np.uint64(21 * b)) & m21).astype(np.float64) for b in range(3)], axis=1
            )
            for a in range(3):
                xa = ((xc >> np.uint64(21 * a)) & m21).astype(np.float64)
                prod = (xa @ r_l).astype(np.uint64)  # (B, 3k), exact
                for b in range(3):
                    term = Field61.reduce(prod[:, b * k : (b + 1) * k])
                    term = Field61.mul(term, np.uint64(pow(2, 21 * (a + b), P61)))
                    out = Field61.add(out, term)
        return out

    @staticmethod
    def from_int64(v: np.ndarray) -> np.ndarray:
        """Signed integers (|v| < p) to field elements."""
        v = np.asarray(v, dtype=np.int64)
        return np.where(v >= 0, v, v + np.int64(P61)).astype(np.uint64)

    @staticmethod
    def to_int64(a: np.ndarray) -> np.ndarray:
        """Field elements to the centred representative in (-p/2, p/2)."""
        a = np.asarray(a, dtype=np.uint64)
        return np.where(a > _P >> np.uint64(1), a.astype(np.int64) - np.int64(P61), a.astype(np.int64))

    @staticmethod
    def from_words(words: np.ndarray) -> np.ndarray:
        """Uniform uint64 words to (almost) uniform field elements: low 61 bits, p mapped to 0
        (statistical distance 2^-61 per element)."""
        w = np.asarray(words, dtype=np.uint64) & _P
        return np.where(w == _P, np.uint64(0), w)


class SmallField:
    """F_q for a small prime q < 2^31 (products fit in uint64): for testing the soundness bound."""

    bits = 31

    def __init__(self, q: int):
        if not 2 < q < 1 << 31:
            raise ValueError(f"q must be a prime in (2, 2^31), got {q}")
        self.p = int(q)
        self._q = np.uint64(q)

    def reduce(self, a):
        return np.asarray(a, dtype=np.uint64) % self._q

    def add(self, a, b):
        return (np.asarray(a, dtype=np.uint64) + np.asarray(b, dtype=np.uint64)) % self._q

    def sub(self, a, b):
        return (np.asarray(a, dtype=np.uint64) + self._q - np.asarray(b, dtype=np.uint64)) % self._q

    def neg(self, a):
        return (self._q - np.asarray(a, dtype=np.uint64)) % self._q

    def mul(self, a, b):
        return (np.asarray(a, dtype=np.uint64) * np.asarray(b, dtype=np.uint64)) % self._q

    def dot(self, x, y):
        return np.sum(self.mul(x, y), axis=-1, dtype=np.uint64) % self._q

    def matmul(self, x, r):
        x = np.asarray(x, dtype=np.uint64)
        r = np.asarray(r, dtype=np.uint64)
        return np.sum(self.mul(x[:, :, None], r[None, :, :]), axis=1, dtype=np.uint64) % self._q

    def from_int64(self, v):
        return (np.asarray(v, dtype=np.int64) % self.p).astype(np.uint64)

    def to_int64(self, a):
        a = np.asarray(a, dtype=np.int64)
        return np.where(a > self.p // 2, a - self.p, a)

    def from_words(self, words):
        return np.asarray(words, dtype=np.uint64) % self._q


FIELD = Field61()


@dataclass(frozen=True)
class OneHotLayout:
    """A contribution made of one-hot blocks of the given sizes, followed by the proof.

    Each report's share vector has ``length + 2 * n_blocks`` field elements: the
    contribution (``length`` = Σ sizes) and, per block, the client's shares of a
    square pair (a_b, c_b = a_b^2).
    """

    sizes: tuple[int, ...]

    def __post_init__(self):
        if not self.sizes or any(not isinstance(s, (int, np.integer)) or s < 1 for s in self.sizes):
            raise ValueError(f"sizes must be a non-empty tuple of positive ints, got {self.sizes!r}")

    @property
    def n_blocks(self) -> int:
        return len(self.sizes)

    @property
    def length(self) -> int:
        return int(sum(self.sizes))

    @property
    def share_length(self) -> int:
        return self.length + 2 * self.n_blocks

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    def one_hot(self, cells) -> np.ndarray:
        """(B, length) int64 contributions from (B, n_blocks) cell indices (block-relative)."""
        c = np.asarray(cells)
        if c.ndim == 1 and self.n_blocks == 1:
            c = c[:, None]
        if c.ndim != 2 or c.shape[1] != self.n_blocks:
            raise ValueError(f"cells must have shape (n_reports, {self.n_blocks})")
        if c.dtype.kind not in "iu":
            raise TypeError("cells must be integers")
        sizes = np.asarray(self.sizes)
        if np.any(c < 0) or np.any(c >= sizes):
            raise ValueError(f"cells out of range for block sizes {self.sizes}")
        x = np.zeros((c.shape[0], self.length), dtype=np.int64)
        rows = np.repeat(np.arange(c.shape[0]), self.n_blocks)
        x[rows, (c + self.offsets[:-1]).ravel()] = 1
        return x


_PRG_KEY = hashlib.sha256(b"privstats/validity/prg/v1").digest()[:16]


def expand_seeds(seeds, n_words: int, *, chunk_bytes: int = 1 << 24) -> np.ndarray:
    """(B, n_words) uint64: each 16-byte seed expanded by fixed-key AES-128 (vectorized).

    Word pair i of seed s is pi(sigma(s XOR i)) XOR sigma(s XOR i), pi = AES-128 under a fixed public key
    and sigma(a||b) = (a XOR b)||a: the tweakable correlation-robust hash of Guo, Katz, Wang and
    Yu (S&P 2020), the construction behind VDAF's fixed-key AES XOF.  One cipher call
    per chunk of reports, no per-report Python work.
    """
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    raw = b"".join(bytes(x) for x in seeds) if not isinstance(seeds, bytes) else seeds
    if len(raw) % 16:
        raise ValueError("seeds must be 16-byte values")
    B = len(raw) // 16
    m = (n_words + 1) // 2
    s = np.frombuffer(raw, dtype="<u8").reshape(B, 1, 2)
    out = np.empty((B, 2 * m), dtype=np.uint64)
    rows = max(1, chunk_bytes // (16 * max(m, 1)))
    ctr = np.arange(m, dtype=np.uint64)
    enc = Cipher(algorithms.AES(_PRG_KEY), modes.ECB()).encryptor()
    for start in range(0, B, rows):
        blk = np.repeat(s[start : start + rows], m, axis=1)  # (b, m, 2)
        y0 = blk[:, :, 0] ^ ctr[None, :]
        y1 = blk[:, :, 1]
        sig = np.stack([y0 ^ y1, y0], axis=2).astype("<u8")
        pi = np.frombuffer(enc.update(sig.tobytes()), dtype="<u8").reshape(sig.shape)
        out[start : start + rows] = (pi ^ sig).reshape(-1, 2 * m)
    return out[:, :n_words]


def expand_field_seed(seed: bytes, n: int, field: Any = FIELD) -> np.ndarray:
    """A server's share from a 16-byte seed (:func:`expand_seeds` mapped to the field)."""
    return field.from_words(expand_seeds([seed], n)[0])


def share_contributions(
    x,
    layout: OneHotLayout,
    *,
    rng: RNGLike = None,
    field: Any = FIELD,
    square_error=None,
    seeds: list[bytes] | None = None,
):
    """Leader and helper shares (each ``(B, share_length)`` uint64) of contributions ``x``.

    ``x`` is any (B, length) integer array: an honest client passes a one-hot, tests pass
    anything.  The proof part holds shares of (a_b, a_b^2 + square_error_b) with a_b
    uniform (``square_error`` is for tests of a cheating client; default 0).  With
    ``seeds`` (one 16-byte seed per report) the helper's share is ``expand_field_seed``
    of its seed, so the client sends the helper 16 bytes.
    """
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != layout.length:
        raise ValueError(f"x must have shape (n_reports, {layout.length})")
    B = x.shape[0]
    src = as_source(rng)
    a = field.from_words(src.uint64((B, layout.n_blocks)))
    c = field.mul(a, a)
    if square_error is not None:
        c = field.add(c, field.from_int64(np.broadcast_to(np.asarray(square_error, dtype=np.int64), c.shape)))
    xf = (
        x.astype(np.uint64)
        if x.dtype.kind in "iu" and x.size and x.min() >= 0 and x.max() < field.p
        else field.from_int64(x)
    )
    full = np.concatenate([xf, a, c], axis=1)
    if seeds is None:
        helper = field.from_words(src.uint64((B, layout.share_length)))
    else:
        if len(seeds) != B:
            raise ValueError("one seed per report is needed")
        helper = field.from_words(expand_seeds(seeds, layout.share_length))
    return field.sub(full, helper), helper


@dataclass(frozen=True)
class JointRandomness:
    """The servers' challenge for one verification job: t (shared by the job's reports),
    and per-report weights lam, mu (B, n_blocks)."""

    t: int
    lam: np.ndarray
    mu: np.ndarray


def _prf_key(verify_key: bytes, task_id: bytes) -> bytes:
    if len(verify_key) < 16:
        raise ValueError("verify_key must have at least 16 bytes")
    return hmac.new(verify_key, b"privstats/validity/v1" + bytes(task_id), hashlib.sha256).digest()


def joint_randomness(
    verify_key: bytes, task_id: bytes, report_ids, n_blocks: int, field: Any = FIELD, *, job_id: bytes = b""
) -> JointRandomness:
    """Challenges both servers derive from their shared ``verify_key`` (never given to clients).

    t = HMAC-SHA256(K, "t" ‖ job_id) for the verification job (one evaluation point for all
    its reports, so the sketch is a matrix product), with K = HMAC-SHA256(verify_key,
    task_id); the per-report weights are AES-128 (keyed by K) of the report id, then of
    that block XOR a counter, vectorized over the batch.  Clients never see the verify
    key, so t, λ and μ are unpredictable to them when they commit their shares, whatever
    job their report lands in.
    """
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = _prf_key(verify_key, task_id)
    if isinstance(report_ids, np.ndarray) and report_ids.dtype == np.dtype("S16"):
        raw, B = report_ids.tobytes(), report_ids.shape[0]
    else:
        ids = [bytes(r) for r in report_ids]
        if any(len(r) != 16 for r in ids):
            raise ValueError("report_ids must be 16-byte values")
        raw, B = b"".join(ids), len(ids)
    t_word = int.from_bytes(hmac.new(key, b"t" + bytes(job_id), hashlib.sha256).digest()[:8], "little")
    t = int(field.from_words(np.array([t_word], dtype=np.uint64))[0])
    enc = Cipher(algorithms.AES(key[:16]), modes.ECB()).encryptor()
    s = np.frombuffer(enc.update(raw), dtype="<u8").reshape(B, 2)
    m = 2 * n_blocks
    blocks = np.repeat(s[:, None, :], m, axis=1).copy()
    blocks[:, :, 1] ^= np.arange(m, dtype=np.uint64)[None, :]
    enc2 = Cipher(algorithms.AES(key[16:]), modes.ECB()).encryptor()
    out = np.frombuffer(enc2.update(blocks.astype("<u8").tobytes()), dtype="<u8").reshape(B, m, 2)[:, :, 0]
    w = field.from_words(out.astype(np.uint64))
    return JointRandomness(t=t, lam=w[:, :n_blocks], mu=w[:, n_blocks:])


def _challenge_matrix(t: int, n: int, p: int) -> np.ndarray:
    """(n, 3): columns t^i, t^{2i} and 1, i = 0..n-1, mod p (once per job, not per report)."""
    col = np.empty((n, 3), dtype=np.uint64)
    v, w, t2 = 1, 1, t * t % p
    for i in range(n):
        col[i, 0], col[i, 1] = v, w
        v, w = v * t % p, w * t2 % p
    col[:, 2] = 1
    return col


@dataclass
class PrepState:
    """One server's state between the two verification messages."""

    party: int
    d_share: np.ndarray  # (B, n_blocks): its share of z - a (sent to the other server)
    a: np.ndarray
    c: np.ndarray
    zs: np.ndarray
    sums: np.ndarray
    rand: JointRandomness


def prepare(
    shares: np.ndarray, party: int, layout: OneHotLayout, rand: JointRandomness, field: Any = FIELD
) -> PrepState:
    """First step on one server (``party`` 0 = leader, 1 = helper): shares of z - a, z*, Σx."""
    sh = np.asarray(shares, dtype=np.uint64)
    if sh.ndim != 2 or sh.shape[1] != layout.share_length:
        raise ValueError(f"shares must have shape (n_reports, {layout.share_length})")
    if party not in (0, 1):
        raise ValueError("party must be 0 (leader) or 1 (helper)")
    nb, off = layout.n_blocks, layout.offsets
    if rand.lam.shape != (sh.shape[0], nb):
        raise ValueError("the joint randomness does not match the batch")
    ch = _challenge_matrix(rand.t, max(layout.sizes), field.p)
    z = np.empty((sh.shape[0], nb), dtype=np.uint64)
    zs = np.empty_like(z)
    sums = np.empty_like(z)
    for b, size in enumerate(layout.sizes):  # a few blocks; the arithmetic is over the batch
        res = field.matmul(sh[:, off[b] : off[b + 1]], ch[:size])
        z[:, b], zs[:, b], sums[:, b] = res[:, 0], res[:, 1], res[:, 2]
    a = sh[:, layout.length : layout.length + nb]
    c = sh[:, layout.length + nb :]
    return PrepState(party, field.sub(z, a), a, c, zs, sums, rand)


def check_value(state: PrepState, other_d: np.ndarray, field: Any = FIELD) -> np.ndarray:
    """Second step: this server's share of W, given the other server's d shares. (B,) uint64."""
    d = field.add(state.d_share, np.asarray(other_d, dtype=np.uint64))
    sq = field.add(field.mul(field.add(d, d), state.a), state.c)  # 2 d a + c
    if state.party == 0:
        sq = field.add(sq, field.mul(d, d))  # + d^2 once
    one = np.uint64(1 if state.party == 0 else 0)
    w = field.add(
        field.mul(state.rand.lam, field.sub(sq, state.zs)),
        field.mul(state.rand.mu, field.sub(state.sums, one)),
    )
    out = w[:, 0]
    for b in range(1, w.shape[1]):
        out = field.add(out, w[:, b])
    return out


def decide(w_leader: np.ndarray, w_helper: np.ndarray, field: Any = FIELD) -> np.ndarray:
    """Accept mask: the two shares of W sum to zero."""
    return field.add(np.asarray(w_leader, dtype=np.uint64), np.asarray(w_helper, dtype=np.uint64)) == 0


def validate_shares(
    leader: np.ndarray,
    helper: np.ndarray,
    layout: OneHotLayout,
    verify_key: bytes,
    task_id: bytes,
    report_ids,
    field: Any = FIELD,
    *,
    job_id: bytes = b"",
) -> np.ndarray:
    """Run both servers' steps in process; returns the (B,) accept mask.

    >>> lay = OneHotLayout((3,))
    >>> s0, s1 = share_contributions(lay.one_hot(np.array([1])), lay, rng=1)
    >>> validate_shares(s0, s1, lay, bytes(16), b"t", [bytes(16)]).tolist()
    [True]
    """
    rand = joint_randomness(verify_key, task_id, report_ids, layout.n_blocks, field, job_id=job_id)
    st0 = prepare(leader, 0, layout, rand, field)
    st1 = prepare(helper, 1, layout, rand, field)
    return decide(check_value(st0, st1.d_share, field), check_value(st1, st0.d_share, field), field)


def soundness_error(layout: OneHotLayout, p: int = P61) -> float:
    """Upper bound on the probability that an invalid contribution is accepted: (2N - 1)/p.

    >>> round(float(np.log2(soundness_error(OneHotLayout((1025,))))), 1)
    -50.0
    """
    return (2 * max(layout.sizes) - 1) / p
