"""Additive secret sharing over Z_2^64 and an AES-CTR pseudorandom generator.

A value v is split into m shares that are uniform and sum to v modulo 2^64; any
m - 1 of them are independent of v.  ``share_with_seeds`` replaces the first m - 1
shares by 16-byte PRG seeds (AES-128-CTR from ``cryptography``), so a party sends
one vector and m - 1 seeds.

>>> import numpy as np
>>> shares = share(np.array([5, -3]), 3, rng=0)
>>> reconstruct(shares).tolist()
[5, -3]
"""

from __future__ import annotations

import os

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = ["expand_seed_shares", "new_seed", "prg_expand", "reconstruct", "share", "share_with_seeds"]


def _as_u64(values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind == "i":
        return a.astype(np.int64).view(np.uint64)
    return a.astype(np.uint64)


def share(values, n_shares: int, rng: RNGLike = None) -> list[np.ndarray]:
    """m uniform uint64 shares of ``values`` (ints, taken mod 2^64); CSPRNG by default."""
    if n_shares < 2:
        raise ValueError(f"n_shares must be >= 2, got {n_shares}")
    v = _as_u64(values)
    src = as_source(rng)
    out = [
        np.asarray(src.uint64(v.shape if v.shape else 1), dtype=np.uint64).reshape(v.shape)
        for _ in range(n_shares - 1)
    ]
    last = v.copy()
    for s in out:
        last -= s
    return [*out, last]


def reconstruct(shares) -> np.ndarray:
    """Sum of shares mod 2^64, read as signed int64."""
    total = np.zeros_like(np.asarray(shares[0], dtype=np.uint64))
    for s in shares:
        total += np.asarray(s, dtype=np.uint64)
    return total.view(np.int64)


def new_seed(rng: RNGLike = None) -> bytes:
    """A 16-byte PRG seed (OS CSPRNG unless a simulation rng is given)."""
    if rng is None:
        return os.urandom(16)
    return as_source(rng).uint64(2).astype("<u8").tobytes()


def prg_expand(seed: bytes, n_words: int) -> np.ndarray:
    """AES-128-CTR keystream under key ``seed``, as ``n_words`` uint64 values."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if len(seed) != 16:
        raise ValueError("seed must be 16 bytes")
    enc = Cipher(algorithms.AES(seed), modes.CTR(b"\x00" * 16)).encryptor()
    return np.frombuffer(enc.update(b"\x00" * (8 * n_words)), dtype="<u8").astype(np.uint64)


def share_with_seeds(values, n_shares: int, rng: RNGLike = None) -> tuple[list[bytes], np.ndarray]:
    """Seeds for servers 0..m-2 and the explicit share for server m-1."""
    v = _as_u64(values).ravel()
    seeds = [new_seed(rng) for _ in range(n_shares - 1)]
    last = v.copy()
    for s in seeds:
        last -= prg_expand(s, v.size)
    return seeds, last


def expand_seed_shares(seeds: list[bytes], n_words: int) -> np.ndarray:
    """Sum of the PRG expansions of several seeds (a server's aggregate of seed shares)."""
    total = np.zeros(n_words, dtype=np.uint64)
    for s in seeds:
        total += prg_expand(s, n_words)
    return total
