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

import numpy as np

from privstats.secure.vdaf.field import Field128

__all__ = [
    "add",
    "all_in_range",
    "decode",
    "encode",
    "from_ints",
    "in_range",
    "matvec",
    "mul",
    "reduce_cols",
    "sub",
    "to_ints",
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


def from_ints(values: list[int]) -> np.ndarray:
    """(len, 8) limbs of Python ints in [0, p)."""
    raw = b"".join(v.to_bytes(16, "little") for v in values)
    return decode(raw, len(values))


def to_ints(limbs: np.ndarray) -> list[int]:
    """Python ints of canonical limbs (flattened over leading axes)."""
    words = limbs.reshape(-1, NLIMB).astype("<u2").view("<u8").reshape(-1, 2)
    lo, hi = words[:, 0].tolist(), words[:, 1].tolist()
    return [a | (b << 64) for a, b in zip(lo, hi, strict=True)]


def _carry(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Propagate signed carries so every column is in [0, 2^16); the last column returned is the sign."""
    out = [cols[0] & _MASK]
    carry = cols[0] >> 16
    for col in cols[1:]:
        t = col + carry
        out.append(t & _MASK)
        carry = t >> 16
    while np.any((carry != 0) & (carry != -1)):
        out.append(carry & _MASK)
        carry = carry >> 16
    out.append(carry)  # 0 or -1
    return out


def reduce_cols(cols: np.ndarray) -> np.ndarray:
    """Canonical limbs of sum_s cols[..., s] * 2^(16 s) mod p (int64 columns, any number of them)."""
    return _reduce_list(
        [np.ascontiguousarray(x) for x in np.moveaxis(cols.astype(np.int64, copy=False), -1, 0)]
    )


def _reduce_list(cols: list[np.ndarray]) -> np.ndarray:
    c = _carry(cols)
    while len(c) > NLIMB:
        if len(c) == NLIMB + 1 and not np.any(c[NLIMB]):
            c = c[:NLIMB]
            break
        # Fold limb s >= 8: 2^(16 s) = 2^(16 (s - 8)) * (28 * 2^64 - 1).
        for s in range(len(c) - 1, NLIMB - 1, -1):
            c[s - 4] = c[s - 4] + 28 * c[s]
            c[s - 8] = c[s - 8] - c[s]
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
    if not np.any(over):
        return c
    return [np.where(over, t[i], c[i]) for i in range(NLIMB)]


def _limb_list(a: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(x) for x in np.moveaxis(a.astype(np.int64, copy=False), -1, 0)]


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise product mod p (broadcasting over leading axes)."""
    al, bl = _limb_list(a), _limb_list(b)
    cols: list[np.ndarray] = [np.zeros(1, dtype=np.int64)] * (2 * NLIMB - 1)
    for i in range(NLIMB):
        for j in range(NLIMB):
            cols[i + j] = cols[i + j] + al[i] * bl[j]  # < 8 * 2^32: exact in int64
    return _reduce_list(cols)


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise sum mod p."""
    return reduce_cols(a.astype(np.int64) + b)


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise difference mod p."""
    return reduce_cols(a.astype(np.int64) - b)


def matvec(mat: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """Batched products: out[n, j, v] = sum_k mat[n, k, j] * vecs[n, k, v] mod p.

    ``mat`` has shape (N, K, J, 8) and ``vecs`` (N, K, V, 8) (canonical limbs, K <= 2^16); the result
    has shape (N, J, V, 8). The limb convolution is folded into the contraction: the right factor is
    the Toeplitz expansion T[(a, k), (v, s)] = vecs[k, v, s - a], so one float64 matmul per report
    yields the 15 product columns directly.
    """
    n, k, j, _ = mat.shape
    v = vecs.shape[2]
    left = np.empty((n, j, NLIMB, k), dtype=np.float64)
    left[...] = mat.astype(np.uint16, copy=False).transpose(0, 2, 3, 1)
    right = np.zeros((n, NLIMB, k, v, 2 * NLIMB - 1), dtype=np.float64)
    vf = vecs.astype(np.float64)
    for a in range(NLIMB):
        right[:, a, :, :, a : a + NLIMB] = vf
    cols = np.matmul(left.reshape(n, j, NLIMB * k), right.reshape(n, NLIMB * k, v * (2 * NLIMB - 1)))
    return reduce_cols(cols.reshape(n, j, v, 2 * NLIMB - 1).astype(np.int64))
