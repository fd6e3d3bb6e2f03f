"""Distributed comparison functions (Boyle et al. 2021, Fig. 1; BGI tree construction)
with a fixed-key AES pseudorandom generator from ``cryptography``.

``gen_lt(alphas, L)`` gives, for every party at once (vectorized), two keys whose
evaluations at x in [0, 2^L) sum (mod 2^64) to 1 if x < alpha else 0.  Each key
alone is pseudorandom.  The ECDF protocol (§4.2 of the paper) uses
g(t) = 1[alpha <= t] = 1 - f(t): server 0 reports n - sum, server 1 reports -sum.

PRG: G(s) = AES_k(s xor c_j) xor s xor c_j for j = 0..3 (fixed public key k,
Matyas-Meyer-Oseas, correlation robust), giving seeds s_L, s_R (128 bits), values
v_L, v_R (64 bits) and control bits t_L, t_R.

>>> import numpy as np
>>> k0, k1 = gen_lt(np.array([3, 0, 7]), 3, rng=0)
>>> (full_domain_eval(k0) + full_domain_eval(k1)).astype(np.int64).tolist()[0]
[1, 1, 1, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = ["DCFKeys", "FSSECDFServer", "evaluate", "fss_ecdf_keys", "full_domain_eval", "gen_lt"]

_FIXED_KEY = bytes(range(16))
_CONSTS = np.array([[i + 1, 0x5A5A5A5A5A5A5A5A] for i in range(4)], dtype=np.uint64)
_ECB = None


def _aes_blocks(blocks: np.ndarray) -> np.ndarray:
    """Fixed-key AES-128 on (k, 2) uint64 blocks (ECB over the whole batch)."""
    global _ECB
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if _ECB is None:
        _ECB = Cipher(algorithms.AES(_FIXED_KEY), modes.ECB())
    enc = _ECB.encryptor()
    out = enc.update(np.ascontiguousarray(blocks, dtype="<u8").tobytes()) + enc.finalize()
    return np.frombuffer(out, dtype="<u8").astype(np.uint64).reshape(-1, 2)


def _prg(seeds: np.ndarray):
    """seeds (k, 2) -> sL, sR (k, 2), vL, vR (k,), tL, tR (k,) uint64 0/1."""
    k = seeds.shape[0]
    x = (seeds[:, None, :] ^ _CONSTS[None, :, :]).reshape(-1, 2)
    y = (_aes_blocks(x) ^ x).reshape(k, 4, 2)
    one = np.uint64(1)
    return y[:, 0], y[:, 1], y[:, 2, 0], y[:, 2, 1], y[:, 3, 0] & one, (y[:, 3, 0] >> one) & one


def _neg_if(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(-1)^t * v mod 2^64."""
    return np.where(t.astype(bool), np.uint64(0) - v, v)


@dataclass(frozen=True)
class DCFKeys:
    """One server's keys for many parties: party b in {0, 1}, seeds (n, 2), correction words."""

    party: int
    depth: int
    seeds: np.ndarray  # (n, 2)
    cw_seed: np.ndarray  # (n, L, 2)
    cw_value: np.ndarray  # (n, L)
    cw_tl: np.ndarray  # (n, L)
    cw_tr: np.ndarray  # (n, L)
    cw_last: np.ndarray  # (n,)

    @property
    def n_keys(self) -> int:
        return self.seeds.shape[0]

    def key_bytes(self) -> int:
        """Size of one key: seed + L (seed, value, 2 bits) + final word."""
        return 16 + self.depth * (16 + 8 + 1) + 8

    def to_bytes(self) -> bytes:
        head = np.array([self.party, self.depth, self.n_keys], dtype="<u8").tobytes()
        parts = [self.seeds, self.cw_seed, self.cw_value, self.cw_tl, self.cw_tr, self.cw_last]
        return head + b"".join(np.ascontiguousarray(p, dtype="<u8").tobytes() for p in parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> DCFKeys:
        party, L, n = (int(v) for v in np.frombuffer(data[:24], dtype="<u8"))
        arr = np.frombuffer(data[24:], dtype="<u8").astype(np.uint64)
        sizes = [n * 2, n * L * 2, n * L, n * L, n * L, n]
        if arr.size != sum(sizes):
            raise ValueError("DCF key bytes have the wrong length")
        chunks, pos = [], 0
        for s in sizes:
            chunks.append(arr[pos : pos + s])
            pos += s
        return cls(
            party,
            L,
            chunks[0].reshape(n, 2),
            chunks[1].reshape(n, L, 2),
            chunks[2].reshape(n, L),
            chunks[3].reshape(n, L),
            chunks[4].reshape(n, L),
            chunks[5],
        )


def gen_lt(alphas: np.ndarray, depth: int, beta: int = 1, rng: RNGLike = None) -> tuple[DCFKeys, DCFKeys]:
    """Keys for f_alpha(x) = beta * 1[x < alpha] over x in [0, 2^depth), one pair per alpha."""
    alphas = np.asarray(alphas, dtype=np.uint64)
    n, L = alphas.size, int(depth)
    src = as_source(rng)
    s0 = np.asarray(src.uint64((n, 2)), dtype=np.uint64).reshape(n, 2)
    s1 = np.asarray(src.uint64((n, 2)), dtype=np.uint64).reshape(n, 2)
    root0, root1 = s0.copy(), s1.copy()
    t0 = np.zeros(n, dtype=np.uint64)
    t1 = np.ones(n, dtype=np.uint64)
    v_alpha = np.zeros(n, dtype=np.uint64)
    beta = np.uint64(beta % (1 << 64))  # type: ignore[assignment]  # the int becomes a uint64 word
    cw_s = np.zeros((n, L, 2), dtype=np.uint64)
    cw_v = np.zeros((n, L), dtype=np.uint64)
    cw_tl = np.zeros((n, L), dtype=np.uint64)
    cw_tr = np.zeros((n, L), dtype=np.uint64)
    one = np.uint64(1)
    for i in range(L):
        bit = (alphas >> np.uint64(L - 1 - i)) & one  # MSB first
        sL0, sR0, vL0, vR0, tL0, tR0 = _prg(s0)
        sL1, sR1, vL1, vR1, tL1, tR1 = _prg(s1)
        keep_right = bit.astype(bool)
        s_lose0 = np.where(keep_right[:, None], sL0, sR0)
        s_lose1 = np.where(keep_right[:, None], sL1, sR1)
        v_lose0, v_lose1 = np.where(keep_right, vL0, vR0), np.where(keep_right, vL1, vR1)
        v_keep0, v_keep1 = np.where(keep_right, vR0, vL0), np.where(keep_right, vR1, vL1)
        s_cw = s_lose0 ^ s_lose1
        v_cw = _neg_if(t1, v_lose1 - v_lose0 - v_alpha)
        v_cw = v_cw + np.where(
            keep_right, _neg_if(t1, np.full(n, beta, dtype=np.uint64)), np.uint64(0)
        )  # Lose = L
        v_alpha = v_alpha - v_keep1 + v_keep0 + _neg_if(t1, v_cw)
        t_cw_l = tL0 ^ tL1 ^ bit ^ one
        t_cw_r = tR0 ^ tR1 ^ bit
        cw_s[:, i], cw_v[:, i], cw_tl[:, i], cw_tr[:, i] = s_cw, v_cw, t_cw_l, t_cw_r
        s_keep0 = np.where(keep_right[:, None], sR0, sL0)
        s_keep1 = np.where(keep_right[:, None], sR1, sL1)
        t_keep0, t_keep1 = np.where(keep_right, tR0, tL0), np.where(keep_right, tR1, tL1)
        t_cw_keep = np.where(keep_right, t_cw_r, t_cw_l)
        s0 = s_keep0 ^ (s_cw * t0[:, None])
        s1 = s_keep1 ^ (s_cw * t1[:, None])
        t0n = t_keep0 ^ (t0 * t_cw_keep)
        t1n = t_keep1 ^ (t1 * t_cw_keep)
        t0, t1 = t0n, t1n
    cw_last = _neg_if(t1, s1[:, 0] - s0[:, 0] - v_alpha)
    k0 = DCFKeys(0, L, root0, cw_s, cw_v, cw_tl, cw_tr, cw_last)
    k1 = DCFKeys(1, L, root1, cw_s.copy(), cw_v.copy(), cw_tl.copy(), cw_tr.copy(), cw_last.copy())
    return k0, k1


def _expand(keys: DCFKeys, idx: np.ndarray, s: np.ndarray, t: np.ndarray, level: int):
    """Both children of nodes (party index idx, seed s, bit t) at ``level``."""
    sL, sR, vL, vR, tL, tR = _prg(s)
    cs = keys.cw_seed[idx, level] * t[:, None]
    sL, sR = sL ^ cs, sR ^ cs
    tL = tL ^ (t * keys.cw_tl[idx, level])
    tR = tR ^ (t * keys.cw_tr[idx, level])
    corr = t * keys.cw_value[idx, level]
    return (sL, tL, vL + corr), (sR, tR, vR + corr)


def evaluate(keys: DCFKeys, x) -> np.ndarray:
    """Share of f at point x (scalar or one point per key), for every key: uint64 (n,)."""
    n, L = keys.n_keys, keys.depth
    x = np.broadcast_to(np.asarray(x, dtype=np.uint64), (n,))
    idx = np.arange(n)
    s, t = keys.seeds.copy(), np.full(n, keys.party, dtype=np.uint64)
    V = np.zeros(n, dtype=np.uint64)
    one = np.uint64(1)
    for i in range(L):
        left, right = _expand(keys, idx, s, t, i)
        go_right = ((x >> np.uint64(L - 1 - i)) & one).astype(bool)
        s = np.where(go_right[:, None], right[0], left[0])
        t = np.where(go_right, right[1], left[1])
        V += np.where(go_right, right[2], left[2])
    V += s[:, 0] + t * keys.cw_last
    return V if keys.party == 0 else np.uint64(0) - V


def full_domain_eval(keys: DCFKeys, chunk: int = 256) -> np.ndarray:
    """Shares at every x in [0, 2^L) for every key: uint64 (n, 2^L), one tree expansion per key."""
    n, L = keys.n_keys, keys.depth
    out = np.empty((n, 1 << L), dtype=np.uint64)
    for start in range(0, n, chunk):
        sl = slice(start, min(n, start + chunk))
        m = sl.stop - sl.start
        idx = np.arange(sl.start, sl.stop)
        s, t, V = keys.seeds[sl].copy(), np.full(m, keys.party, dtype=np.uint64), np.zeros(m, dtype=np.uint64)
        for i in range(L):
            left, right = _expand(keys, idx, s, t, i)
            s = np.stack([left[0], right[0]], axis=1).reshape(-1, 2)
            t = np.stack([left[1], right[1]], axis=1).ravel()
            V = np.repeat(V, 2) + np.stack([left[2], right[2]], axis=1).ravel()
            idx = np.repeat(idx, 2)
        V = V + s[:, 0] + t * keys.cw_last[idx]
        out[sl] = V.reshape(m, 1 << L)
    return out if keys.party == 0 else np.uint64(0) - out


def fss_ecdf_keys(cells: np.ndarray, depth: int, rng: RNGLike = None) -> tuple[DCFKeys, DCFKeys]:
    """Each party's keys for 1[x < cell] over the 2^depth grid points (the paper's §4.2 upload)."""
    return gen_lt(np.asarray(cells, dtype=np.uint64), depth, rng=rng)


class FSSECDFServer:
    """One of two FSS servers for one batch: holds every party's DCF key and its own noise share.

    ``cumulative_share()`` is its share of C(t) = #{cell <= t} for all t (full-domain
    evaluation); ``partial()`` adds its noise share, like
    :class:`privstats.secure.aggregation.AggregationServer`: a full discrete Laplace per
    tree node (:func:`privstats.secure.noise.server_noise_share`, exact, OS CSPRNG when
    ``rng`` is None), so the guarantee holds against either server even though it knows its
    own share and sees the output; the opened noise has twice the central variance.  The keys
    are fixed at construction and the first ``partial()`` releases the batch: later keys go to
    a new server object with fresh noise.  The grid has 2^L points (a power of two).
    """

    def __init__(self, keys: DCFKeys, mechanism, *, rng: RNGLike = None):
        if mechanism.n_points != 1 << keys.depth:
            raise ValueError("the FSS grid must have 2^L points, matching the keys' depth")
        self._keys, self.mechanism, self._rng = keys, mechanism, rng
        self._noise: np.ndarray | None = None
        self._released: np.ndarray | None = None

    @property
    def keys(self) -> DCFKeys:
        """The batch's keys (read-only: a batch cannot grow after it is created)."""
        return self._keys

    @property
    def closed(self) -> bool:
        return self._released is not None

    def cumulative_share(self) -> np.ndarray:
        lt = full_domain_eval(self.keys).sum(axis=0, dtype=np.uint64)  # shares of #{t < cell}
        if self.keys.party == 0:
            return np.uint64(self.keys.n_keys) - lt
        return np.uint64(0) - lt

    def point_share(self, t: int) -> np.uint64:
        """Share of C(t) for one threshold index t (one key evaluation per party; not noised)."""
        lt = evaluate(self.keys, t).sum(dtype=np.uint64)
        with np.errstate(over="ignore"):
            return np.uint64(self.keys.n_keys) - lt if self.keys.party == 0 else np.uint64(0) - lt

    def noise_shares(self) -> np.ndarray:
        """This server's per-node noise share (int64), drawn once."""
        if self._noise is None:
            from privstats.secure.noise import server_noise_share

            self._noise = server_noise_share(
                self.mechanism.scale,
                self.mechanism.n_nodes,
                server=self.keys.party,
                n_servers=2,
                rng=self._rng,
            )
        return self._noise

    def partial(self) -> np.ndarray:
        """Share of the noisy tree statistic (uint64); the same array on every call (released once)."""
        if self._released is None:
            stat = np.asarray(self.mechanism.statistic(self.cumulative_share()), dtype=np.uint64)
            self._released = stat + self.mechanism.noise_to_statistic(self.noise_shares().view(np.uint64))
        return self._released.copy()
