"""Field128 arithmetic on numpy arrays of 16-bit limbs, for preparing many reports at once.

An element x is held as 8 little-endian 16-bit limbs (last axis), which is also its VDAF byte encoding
read as ``<u2``. Products of limbs are exact in float64 (< 2^32), so sums of up to 2^20 of them stay
exact; batched dot products therefore run as float64 matrix products (BLAS), and :func:`reduce_cols`
brings any signed column vector back to canonical limbs using p = 2^128 - 28 * 2^64 + 1, i.e.
2^128 = 28 * 2^64 - 1 (mod p).

Example:
    >>> import numpy as np
    >>> from privstats.secure.vdaf.field import Field128
    >>> a = from_ints([3, Field128.MODULUS - 1])
    >>> to_ints(mul(a, a)) == [9, 1]
    True
"""

from __future__ import annotations

from itertools import repeat
from typing import Literal

import numpy as np

from privstats.secure.vdaf.field import Field128

__all__ = [
    "add",
    "all_in_range",
    "decode",
    "encode",
    "from_ints",
    "in_range",
    "matmul_const",
    "matvec",
    "mul",
    "reduce_cols",
    "sub",
    "to_ints",
    "to_limbs32",
]

P = Field128.MODULUS
NLIMB = 8
_MASK = 0xFFFF
_P_LIMBS = np.array([(P >> (16 * i)) & _MASK for i in range(NLIMB)], dtype=np.int64)


def decode(data: bytes, count: int) -> np.ndarray:
    """(count, 8) int64 limbs of ``count`` encoded elements (no range check)."""
    return np.frombuffer(data, dtype="<u2", count=count * NLIMB).reshape(count, NLIMB).astype(np.int64)


def encode(limbs: np.ndarray) -> bytes:
    """Little-endian encoding of canonical limbs (inverse of :func:`decode`)."""
    return limbs.astype("<u2").tobytes()


def in_range(limbs: np.ndarray) -> np.ndarray:
    """Boolean mask over elements: value < p (limbs canonical 16-bit)."""
    # p's limbs are (1, 0, 0, 0, 0xFFE4, 0xFFFF, 0xFFFF, 0xFFFF): x >= p iff the top 64 bits exceed
    # 2^64 - 28, or equal it while the low 64 bits are nonzero.
    top = limbs[..., 4:]
    high_eq = (top == _P_LIMBS[4:]).all(axis=-1)
    high_gt = (limbs[..., 7] == _MASK) & (limbs[..., 6] == _MASK) & (limbs[..., 5] == _MASK)
    high_gt &= limbs[..., 4] > _P_LIMBS[4]
    low_nonzero = (limbs[..., :4] != 0).any(axis=-1)
    return ~(high_gt | (high_eq & low_nonzero))


_HI_P = P >> 64


def all_in_range(data: bytes) -> bool:
    """True iff every 16-byte little-endian element of ``data`` is < p (fast, on 64-bit words)."""
    words = np.frombuffer(data, dtype="<u8").reshape(-1, 2)
    hi = words[:, 1]
    if not np.any(hi >= _HI_P):
        return True
    return not bool(np.any((hi > _HI_P) | ((hi == _HI_P) & (words[:, 0] != 0))))


_LITTLE: Literal["little"] = "little"


def from_ints(values: list[int]) -> np.ndarray:
    """(len, 8) limbs of Python ints in [0, p)."""
    raw = b"".join(map(int.to_bytes, values, repeat(16), repeat(_LITTLE)))
    return decode(raw, len(values))


def to_ints(limbs: np.ndarray) -> list[int]:
    """Python ints of canonical limbs (flattened over leading axes)."""
    words = limbs.reshape(-1, NLIMB).astype("<u2").view("<u8").reshape(-1, 2)
    lo, hi = words[:, 0].tolist(), words[:, 1].tolist()
    return [a | (b << 64) for a, b in zip(lo, hi, strict=True)]


# Temporaries are written in place into preallocated 2-D buffers: arrays of >= 128 KiB would otherwise
# each be a fresh mmap (glibc's threshold), which costs more than the arithmetic.


def _carry(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Propagate signed carries so every column is in [0, 2^16); the last column returned is the sign."""
    shape = np.broadcast_shapes(*(c.shape for c in cols))
    out = np.empty((len(cols) + 5, *shape), dtype=np.int64)  # int64 carries need <= 4 more limbs
    carry = np.right_shift(np.broadcast_to(cols[0], shape), 16)
    np.bitwise_and(cols[0], _MASK, out=out[0])
    for s, col in enumerate(cols[1:], 1):
        np.add(carry, col, out=carry)
        np.bitwise_and(carry, _MASK, out=out[s])
        np.right_shift(carry, 16, out=carry)
    s = len(cols)
    while np.any((carry != 0) & (carry != -1)):
        np.bitwise_and(carry, _MASK, out=out[s])
        np.right_shift(carry, 16, out=carry)
        s += 1
    out[s] = carry  # 0 or -1
    return list(out[: s + 1])


def reduce_cols(cols: np.ndarray) -> np.ndarray:
    """Canonical limbs of sum_s cols[..., s] * 2^(16 s) mod p (int64 columns, any number of them)."""
    return _reduce_list(list(np.moveaxis(cols.astype(np.int64, copy=False), -1, 0)))


def _reduce_list(cols: list[np.ndarray]) -> np.ndarray:
    c = _carry(cols)
    tmp = np.empty_like(c[0])
    while len(c) > NLIMB:
        if len(c) == NLIMB + 1 and not np.any(c[NLIMB]):
            c = c[:NLIMB]
            break
        # Fold limb s >= 8: 2^(16 s) = 2^(16 (s - 8)) * (28 * 2^64 - 1).
        for s in range(len(c) - 1, NLIMB - 1, -1):
            np.multiply(c[s], 28, out=tmp)
            c[s - 4] += tmp
            c[s - 8] -= c[s]
        c = _carry(c[:NLIMB])
    return np.stack(_final_sub(c), axis=-1)


def _final_sub(c: list[np.ndarray]) -> list[np.ndarray]:
    """Subtract p where the canonical 128-bit value is >= p."""
    shifted = list(c)
    shifted[0] = c[0] - 1
    shifted[4] = c[4] + 28
    # value + 28 * 2^64 - 1 reaches 2^128 exactly when value >= p; then keep the wrapped result.
    t = _carry(shifted)
    over = t[NLIMB] > 0
    if np.any(over):
        for i in range(NLIMB):
            np.copyto(c[i], t[i], where=over)
    return c


def _limb_list(a: np.ndarray) -> list[np.ndarray]:
    return list(np.moveaxis(a.astype(np.int64, copy=False), -1, 0))


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise product mod p (broadcasting over leading axes)."""
    al, bl = _limb_list(a), _limb_list(b)
    shape = np.broadcast_shapes(al[0].shape, bl[0].shape)
    cols = np.zeros((2 * NLIMB - 1, *shape), dtype=np.int64)
    tmp = np.empty(shape, dtype=np.int64)
    for i in range(NLIMB):
        for j in range(NLIMB):
            np.multiply(al[i], bl[j], out=tmp)
            cols[i + j] += tmp  # < 8 * 2^32: exact in int64
    return _reduce_list(list(cols))


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise sum mod p."""
    return reduce_cols(a.astype(np.int64) + b)


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise difference mod p."""
    return reduce_cols(a.astype(np.int64) - b)


def matvec(mat: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """Batched products: out[n, j, v] = sum_k mat[n, k, j] * vecs[n, k, v] mod p.

    ``mat`` has shape (N, K, J, 8) and ``vecs`` (N, K, V, 8) (canonical limbs); the result has shape
    (N, J, V, 8). The left factor is split in 16-bit limbs and the right one in 32-bit limbs, so a
    float64 matrix product over 32 terms stays below 2^53 (exact); blocks of 32 are summed in int64.
    """
    n, k, j, _ = mat.shape
    v = vecs.shape[2]
    left = np.empty((n, j, NLIMB, k), dtype=np.float64)
    left[...] = mat.astype(np.uint16, copy=False).transpose(0, 2, 3, 1)
    left2 = left.reshape(n, j * NLIMB, k)
    v64 = vecs.astype(np.int64)
    right = (v64[..., 0::2] + (v64[..., 1::2] << 16)).astype(np.float64).reshape(n, k, v * 4)
    cols = np.zeros((2 * NLIMB - 1, n, j, v), dtype=np.int64)  # limb-major: contiguous columns
    for k0 in range(0, k, 32):
        prod = np.matmul(left2[:, :, k0 : k0 + 32], right[:, k0 : k0 + 32]).reshape(n, j, NLIMB, v, 4)
        prod64 = prod.astype(np.int64).transpose(2, 4, 0, 1, 3)  # (a, b, n, j, v)
        for a in range(NLIMB):
            for b in range(4):
                cols[a + 2 * b] += prod64[a, b]
    return _reduce_list(list(cols))


def to_limbs32(limbs16: np.ndarray) -> np.ndarray:
    """float64 32-bit limbs (last axis 4) of canonical 16-bit limbs."""
    v = limbs16.astype(np.int64)
    return (v[..., 0::2] + (v[..., 1::2] << 16)).astype(np.float64)


def matmul_const(left: np.ndarray, right32: np.ndarray) -> np.ndarray:
    """out[n, j] = sum_k left[n, k] * right[k, j] mod p for a fixed right matrix.

    ``left`` holds canonical limbs, shape (N, K, 8); ``right32`` is :func:`to_limbs32` of the right
    matrix, shape (K, J, 4). All reports share one float64 matrix product per block of 32 terms.
    """
    n, k, _ = left.shape
    j = right32.shape[1]
    lf = np.empty((n, NLIMB, k), dtype=np.float64)
    lf[...] = left.transpose(0, 2, 1)
    lf2 = lf.reshape(n * NLIMB, k)
    cols = np.zeros((2 * NLIMB - 1, n, j), dtype=np.int64)  # limb-major: contiguous columns
    for k0 in range(0, k, 32):
        block = right32[k0 : k0 + 32].reshape(-1, j * 4)
        prod = (lf2[:, k0 : k0 + 32] @ block).reshape(n, NLIMB, j, 4).astype(np.int64).transpose(1, 3, 0, 2)
        for a in range(NLIMB):
            for b in range(4):
                cols[a + 2 * b] += prod[a, b]
    return _reduce_list(list(cols))
