"""Two-party kernels: public specs, each party's encoding of its own values, the in-circuit programs.

Every comparison is exact for every pair of finite float64 values.  SPU compares secret integers by
the sign bit of their difference in the ring Z_{2^64}, which is wrong when the two numbers are 2^63 or
more apart (opposite signs, large magnitudes: the reported bug).  A party therefore encodes each value
by its order-preserving int64 image ``e`` (:func:`encode_sortable`) split into ``h = e >> 1`` (in
[−2^62, 2^62), so ``h_a − h_b`` never wraps) and the low bit ``l = e & 1``, and the circuit computes::

    [a < b] = msb(h_a − h_b − (1 − l_a)·l_b)

(``h_a < h_b``, or ``h_a = h_b`` and ``l_a < l_b``; the argument stays in (−2^63, 2^63)): one secure
comparison and one multiplication.  Grid kernels (``absdiff``) work on integers in
``[0, 2^grid_bits]``, far below the ring width, so their differences never wrap either.

>>> spec = kernel_spec("greater")
>>> spec.reference(np.array([2.0, -2.0, 1e10]), np.array([-2.0, 2.0, -1e10])).tolist()
[1, 0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privstats.validation import check_positive_int

__all__ = ["SPECS", "KernelSpec", "encode", "encode_sortable", "kernel_bool", "kernel_spec", "kernel_units"]

SPECS = ("greater", "greater_half", "sign_product", "not_equal_0", "not_equal_1", "equal", "absdiff")


@dataclass(frozen=True)
class KernelSpec:
    """A kernel the parties compile themselves: values ``lo + unit·v`` with integer v in [0, units]."""

    name: str
    columns: int  # input columns per user (Kendall: 2)
    lo: float
    unit: float
    units: int  # kernel range width Δ in grid units
    encoding: str  # "sortable" (exact order/equality) or "grid"
    grid_bits: int = 0

    @property
    def hi(self) -> float:
        return self.lo + self.unit * self.units

    @property
    def width(self) -> int:
        """int64 words per user and column on the wire: (code >> 1, code & 1) or (grid value,)."""
        return 2 if self.encoding == "sortable" else 1

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The plain computation of the kernel on the parties' encoded values (grid units, int64)."""
        ea, eb = encode(self, a), encode(self, b)
        return np.asarray(kernel_units(self, ea, eb, np), dtype=np.int64)


def kernel_spec(name: str, grid_bits: int = 10) -> KernelSpec:
    """The public spec of a named kernel (``grid_bits``: the ``absdiff`` grid of [0, 1])."""
    if name == "greater":
        return KernelSpec(name, 1, 0.0, 1.0, 1, "sortable")
    if name == "greater_half":
        return KernelSpec(name, 1, 0.0, 0.5, 2, "sortable")
    if name == "sign_product":
        return KernelSpec(name, 2, -1.0, 1.0, 2, "sortable")
    if name in ("not_equal_0", "not_equal_1"):
        return KernelSpec(name, 2, 0.0, 1.0, 1, "sortable")
    if name == "equal":
        return KernelSpec(name, 1, 0.0, 1.0, 1, "sortable")
    if name == "absdiff":
        g = check_positive_int(grid_bits, "grid_bits")
        if g > 30:
            raise ValueError(f"grid_bits must be at most 30, got {g}")
        return KernelSpec(name, 1, 0.0, 2.0**-g, 2**g, "grid", g)
    if name == "raw_less":  # benchmark baseline only: SPU's plain a < b on the codes (wraps; not exact)
        return KernelSpec(name, 1, 0.0, 1.0, 1, "sortable")
    raise ValueError(f"unknown SPU kernel {name!r}; choose from {sorted(SPECS)}")


def encode_sortable(x: np.ndarray) -> np.ndarray:
    """Order-preserving int64 image of float64 values (−0.0 = 0.0): ``a < b ⟺ enc(a) < enc(b)``.

    >>> v = encode_sortable(np.array([-2.5, -0.0, 0.0, 1e-300, 3.0]))
    >>> bool(np.all(np.diff(v) >= 0) and v[1] == v[2])
    True
    """
    bits = (np.asarray(x, dtype=np.float64) + 0.0).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


def encode(spec: KernelSpec, x: np.ndarray) -> np.ndarray:
    """Party-side encoding of its own values (m, columns) → int64 (m, columns, width).

    Sortable kernels: ``(code >> 1, code & 1)`` per value; grid kernels: the value on the grid of [0, 1].

    >>> e = encode(kernel_spec("greater"), np.array([-1.0, 2.0]))[:, 0]
    >>> (2 * e[:, 0] + e[:, 1]).tolist() == encode_sortable(np.array([-1.0, 2.0])).tolist()
    True
    """
    a = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    if a.shape[1] != spec.columns:
        raise ValueError(f"kernel {spec.name!r} takes {spec.columns} value(s) per user, got {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ValueError("values must be finite")
    if spec.encoding == "grid":
        return np.rint(np.clip(a, 0.0, 1.0) * 2**spec.grid_bits).astype(np.int64)[:, :, None]
    code = encode_sortable(a)
    return np.stack([code >> 1, code & 1], axis=2)


class _Order:
    """Exact order of column k of a vs b; each secure comparison computed at most once (numpy or SPU jax)."""

    def __init__(self, a, b, xp):
        self.a, self.b, self.xp = a, b, xp
        self.cache: dict = {}

    def less_bool(self, k: int, flip: bool = False):
        """[a_k < b_k] (``flip``: [b_k < a_k]) as a boolean, exact for all finite values."""
        if (flip, k) not in self.cache:
            a, b = (self.b, self.a) if flip else (self.a, self.b)
            diff = a[:, k, 0] - b[:, k, 0] - (1 - a[:, k, 1]) * b[:, k, 1]  # in (−2^63, 2^63): no wrap
            self.cache[flip, k] = diff < 0
        return self.cache[flip, k]

    def less(self, k: int, flip: bool = False):
        return self.less_bool(k, flip).astype(self.xp.int64)

    def lt_gt(self, k: int):
        return self.less(k), self.less(k, flip=True)


def kernel_bool(spec: KernelSpec, order: _Order):
    """The kernel as a boolean when it is one secure comparison (randomized response XORs its coin in)."""
    if spec.name == "greater":
        return order.less_bool(0, flip=True)
    if spec.name == "raw_less":
        return order.a[:, 0, 0] < order.b[:, 0, 0]
    return None


def kernel_units(spec: KernelSpec, a, b, xp, order: _Order | None = None):
    """Kernel in grid units on encoded inputs (m, columns, width); ``xp`` is numpy or jax.numpy.

    ``order`` shares the comparisons between several kernels evaluated on the same pairs.
    """
    if spec.encoding == "grid":
        d = a[:, 0, 0] - b[:, 0, 0]
        return xp.where(d >= 0, d, -d)
    if spec.name == "raw_less":  # the codes' halves only: SPU's plain comparison, for the benchmark
        return (a[:, 0, 0] < b[:, 0, 0]).astype(xp.int64)
    o = order if order is not None else _Order(a, b, xp)
    if spec.name == "greater":
        return o.less(0, flip=True)
    if spec.name == "greater_half":
        lt, gt = o.lt_gt(0)
        return 1 + gt - lt
    if spec.name == "sign_product":
        lt0, gt0 = o.lt_gt(0)
        lt1, gt1 = o.lt_gt(1)
        return (gt0 - lt0) * (gt1 - lt1) + 1
    if spec.name in ("not_equal_0", "not_equal_1"):
        lt, gt = o.lt_gt(int(spec.name[-1]))
        return lt + gt
    if spec.name == "equal":
        lt, gt = o.lt_gt(0)
        return 1 - lt - gt
    raise ValueError(spec.name)  # pragma: no cover
