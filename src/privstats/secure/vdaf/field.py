"""Prime fields of VDAF-08 (Field64, Field128) and polynomial helpers over their roots of unity.

Elements are plain Python ints in ``[0, MODULUS)``; vectors are ``list[int]``. Both fields are
FFT-friendly: ``GEN`` generates a subgroup of order ``GEN_ORDER`` (a power of two), so polynomials of
degree < P (P a power of two dividing ``GEN_ORDER``) are interpolated by an inverse NTT.

Example:
    >>> from privstats.secure.vdaf.field import Field64
    >>> Field64.decode_vec(Field64.encode_vec([1, Field64.MODULUS - 1]))
    [1, 18446744069414584320]
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privstats.secure.vdaf.errors import VdafError

__all__ = ["Field", "Field64", "Field128", "batch_inv", "inv_ntt", "next_power_of_2", "ntt", "poly_eval"]


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


class Field:
    """A prime field; subclasses set the VDAF-08 parameters (little-endian encoding)."""

    MODULUS: ClassVar[int]
    ENCODED_SIZE: ClassVar[int]
    GEN: ClassVar[int]
    GEN_ORDER: ClassVar[int]
    NAME: ClassVar[str]

    def __init_subclass__(cls, *, two_adicity: int, cofactor: int, **kwargs: Any) -> None:
        """p = 2^two_adicity * cofactor + 1, generator 7^cofactor of the order-2^two_adicity subgroup."""
        super().__init_subclass__(**kwargs)
        cls.MODULUS = 2**two_adicity * cofactor + 1
        cls.ENCODED_SIZE = (cls.MODULUS.bit_length() + 7) // 8
        cls.GEN_ORDER = 2**two_adicity
        cls.GEN = pow(7, cofactor, cls.MODULUS)
        cls.NAME = cls.__name__

    @classmethod
    def encode_vec(cls, vec: list[int]) -> bytes:
        """Concatenated little-endian encodings of the elements."""
        size = cls.ENCODED_SIZE
        return b"".join(x.to_bytes(size, "little") for x in vec)

    @classmethod
    def decode_vec_unchecked(cls, data: bytes) -> list[int]:
        """Little-endian integers of ``data`` (length a multiple of ENCODED_SIZE), not range-checked."""
        words = np.frombuffer(data, dtype="<u8").reshape(-1, cls.ENCODED_SIZE // 8)
        out: list[int] = words[:, 0].tolist()
        if cls.ENCODED_SIZE == 16:
            out = [lo | (hi << 64) for lo, hi in zip(out, words[:, 1].tolist(), strict=False)]
        return out

    @classmethod
    def decode_vec(cls, data: bytes) -> list[int]:
        """Inverse of :meth:`encode_vec`; raises VdafError on a bad length or an element >= MODULUS."""
        size = cls.ENCODED_SIZE
        if len(data) % size:
            raise VdafError(f"{cls.NAME} vector encoding has length {len(data)}, not a multiple of {size}")
        out = cls.decode_vec_unchecked(data)
        p = cls.MODULUS
        if any(x >= p for x in out):
            raise VdafError(f"{cls.NAME} element out of range (>= modulus)")
        return out

    @classmethod
    def to_signed(cls, x: int) -> int:
        """Representative of x in (-p/2, p/2], e.g. for a noisy count that may be negative.

        Example:
            >>> Field64.to_signed(Field64.MODULUS - 3)
            -3
        """
        x %= cls.MODULUS
        return x - cls.MODULUS if x > cls.MODULUS // 2 else x

    @classmethod
    def inv(cls, x: int) -> int:
        """Multiplicative inverse (x != 0)."""
        return pow(x, cls.MODULUS - 2, cls.MODULUS)

    @classmethod
    def root(cls, order: int) -> int:
        """A primitive ``order``-th root of unity (``order`` a power of two dividing GEN_ORDER)."""
        if order < 1 or cls.GEN_ORDER % order:
            raise ValueError(f"order={order} does not divide {cls.NAME}.GEN_ORDER")
        return pow(cls.GEN, cls.GEN_ORDER // order, cls.MODULUS)

    @classmethod
    def bits_to_int(cls, bits: list[int]) -> int:
        """Field element sum_l 2^l bits[l] (decode_from_bit_vector of the draft)."""
        p = cls.MODULUS
        return sum(b << i for i, b in enumerate(bits)) % p


class Field64(Field, two_adicity=32, cofactor=4294967295):
    """p = 2^32 * 4294967295 + 1 (VDAF-08 Field64, 8-byte elements)."""


class Field128(Field, two_adicity=66, cofactor=4611686018427387897):
    """p = 2^66 * 4611686018427387897 + 1 (VDAF-08 Field128, 16-byte elements)."""


def ntt(coeffs: list[int], root: int, p: int) -> list[int]:
    """Evaluate the polynomial ``coeffs`` at ``root**k`` for k < len(coeffs) (a power of two)."""
    n = len(coeffs)
    if n == 1:
        return list(coeffs)
    levels = n.bit_length() - 1
    a = [coeffs[int(format(i, f"0{levels}b")[::-1], 2)] for i in range(n)]
    size = 2
    while size <= n:
        half = size // 2
        w_step = pow(root, n // size, p)
        tw = [1] * half
        for j in range(1, half):
            tw[j] = tw[j - 1] * w_step % p
        for start in range(0, n, size):
            for j in range(half):
                u = a[start + j]
                v = a[start + j + half] * tw[j] % p
                a[start + j] = (u + v) % p
                a[start + j + half] = (u - v) % p
        size *= 2
    return a


def inv_ntt(values: list[int], root: int, p: int) -> list[int]:
    """Coefficients of the polynomial taking ``values[k]`` at ``root**k`` (inverse of :func:`ntt`)."""
    n = len(values)
    out = ntt(values, pow(root, p - 2, p), p)
    n_inv = pow(n, p - 2, p)
    return [x * n_inv % p for x in out]


def poly_eval(coeffs: list[int], x: int, p: int) -> int:
    """Horner evaluation of ``coeffs`` (lowest degree first) at x."""
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % p
    return acc


def batch_inv(values: list[int], p: int) -> list[int]:
    """Inverses of nonzero ``values`` with one exponentiation (Montgomery's trick)."""
    prefix = [1] * (len(values) + 1)
    for i, v in enumerate(values):
        prefix[i + 1] = prefix[i] * v % p
    inv = pow(prefix[-1], p - 2, p)
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        out[i] = prefix[i] * inv % p
        inv = inv * values[i] % p
    return out
