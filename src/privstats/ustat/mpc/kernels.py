"""Two-party kernels: public specs, each party's encoding of its own values, the in-circuit programs.

Every comparison is exact for every pair of finite float64 values.  SPU compares secret integers by
the sign bit of their difference in the ring Z_{2^64}, which is wrong when the two numbers are 2^63 or
more apart (opposite signs, large magnitudes: the reported bug).  A party therefore encodes each value
by its order-preserving image ``E = e ⊕ 2^63`` as an unsigned 64-bit word (``e``:
:func:`encode_sortable`) split into its top bit ``t`` and its low 63 bits ``w`` (so ``w_a − w_b`` never
wraps), and the circuit computes, with one secure comparison and one AND of two secret bits::

    lt63 = msb(w_a − w_b);   [a < b] = lt63 ⊕ ((t_a ⊕ t_b) ∧ (lt63 ⊕ t_b))

(equal top bits: the low words decide; different top bits: ``b`` is larger exactly when ``t_b = 1``).
``w`` enters the circuit in arithmetic sharing and ``t`` in boolean sharing (XOR is free), so the
only nonlinear operations are the comparison and a one-bit AND.  Grid kernels (``absdiff``) work on
integers in ``[0, 2^grid_bits]``, far below the ring width, so their differences never wrap either.

>>> spec = kernel_spec("greater")
>>> spec.reference(np.array([2.0, -2.0, 1e10]), np.array([-2.0, 2.0, -1e10])).tolist()
[1, 0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privstats.validation import check_positive_int

__all__ = [
    "SPECS",
    "KernelSpec",
    "encode",
    "encode_sortable",
    "kernel_bool",
    "kernel_spec",
    "kernel_units",
    "reference_units",
]

LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)
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
        """int64 words per user and column: (low 63 bits, top bit) or (grid value,)."""
        return 2 if self.encoding == "sortable" else 1

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The plain computation of the kernel on the parties' encoded values (grid units, int64)."""
        return reference_units(self, encode(self, a), encode(self, b))


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
    if name == "raw_less":  # benchmark baseline only: SPU's plain a < b on the low words (not exact)
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

    Sortable kernels: ``(w, t)`` per value (low 63 bits and top bit of the unsigned order-preserving
    word); grid kernels: the value on the grid of [0, 1].

    >>> e = encode(kernel_spec("greater"), np.array([-1.0, 0.0, 2.0]))[:, 0]
    >>> [int(w) + (int(t) << 63) - 2**63 for w, t in e] == encode_sortable(np.array([-1.0, 0.0, 2.0])).tolist()
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
    return np.stack([code & LOW63, (code >= 0).astype(np.int64)], axis=2)


class _Order:
    """Exact order of column k of a vs b; each secure comparison computed at most once (numpy or SPU jax).

    ``wa``, ``wb``: (m, columns) low 63-bit words; ``ta``, ``tb``: (m, columns) top bits as booleans.
    """

    def __init__(self, wa, ta, wb, tb, xp):
        self.wa, self.ta, self.wb, self.tb, self.xp = wa, ta, wb, tb, xp
        self.cache: dict = {}

    @classmethod
    def of_codes(cls, a, b, xp):
        """From :func:`encode` outputs (m, columns, 2) of both sides (numpy reference)."""
        return cls(a[:, :, 0], a[:, :, 1] != 0, b[:, :, 0], b[:, :, 1] != 0, xp)

    def less_bool(self, k: int, flip: bool = False):
        """[a_k < b_k] (``flip``: [b_k < a_k]) as a boolean, exact for all finite values."""
        if (flip, k) not in self.cache:
            wa, ta, wb, tb = (
                (self.wb, self.tb, self.wa, self.ta) if flip else (self.wa, self.ta, self.wb, self.tb)
            )
            lt63 = (wa[:, k] - wb[:, k]) < 0  # both in [0, 2^63): no wrap
            self.cache[flip, k] = lt63 ^ ((ta[:, k] ^ tb[:, k]) & (lt63 ^ tb[:, k]))
        return self.cache[flip, k]

    def both(self, k: int):
        """([a_k < b_k], [b_k < a_k]) with the two comparisons in one secure call on [d, −d] and the two
        top-bit fixes in one AND (fewer rounds than two separate calls)."""
        if (False, k) not in self.cache or (True, k) not in self.cache:
            xp = self.xp
            d = self.wa[:, k] - self.wb[:, k]
            c = xp.stack([d, -d]) < 0  # [lt63, gt63], one comparison call
            ta, tb = self.ta[:, k], self.tb[:, k]
            x = ta ^ tb
            fix = xp.stack([x, x]) & xp.stack([c[0] ^ tb, c[1] ^ ta])  # one AND call
            self.cache[False, k], self.cache[True, k] = c[0] ^ fix[0], c[1] ^ fix[1]
        return self.cache[False, k], self.cache[True, k]

    def less(self, k: int, flip: bool = False):
        return self.less_bool(k, flip).astype(self.xp.int64)

    def lt_gt(self, k: int):
        self.both(k)
        return self.less(k), self.less(k, flip=True)


def kernel_bool(spec: KernelSpec, order: _Order):
    """The kernel as a boolean when it is a function of comparisons' bits (randomized response XORs its
    coin in; the bits of [a < b] and [a > b] are exclusive, so ``lt ⊕ gt`` is [a ≠ b])."""
    if spec.name == "greater":
        return order.less_bool(0, flip=True)
    if spec.name == "raw_less":
        return (order.wa[:, 0] - order.wb[:, 0]) < 0
    if spec.name in ("not_equal_0", "not_equal_1"):
        lt, gt = order.both(int(spec.name[-1]))
        return lt ^ gt
    if spec.name == "equal":
        lt, gt = order.both(0)
        return ~(lt ^ gt)
    return None


def kernel_units(spec: KernelSpec, a, b, xp, order: _Order | None = None):
    """Kernel in grid units; ``a``, ``b``: (m, columns) grid values (grid kernels) and ``order`` the
    comparisons (sortable kernels; it shares them between several kernels on the same pairs)."""
    if spec.encoding == "grid":
        d = a[:, 0] - b[:, 0]
        return xp.where(d >= 0, d, -d)
    o = order
    if o is None:
        raise ValueError("sortable kernels need the comparisons (order)")
    kb = kernel_bool(spec, o)
    if kb is not None:
        return kb.astype(xp.int64)
    if spec.name == "greater_half":
        lt, gt = o.lt_gt(0)
        return 1 + gt - lt
    if spec.name == "sign_product":  # 1 + sign(a0 − b0)·sign(a1 − b1) with two ANDs of bits, no product
        (lt0, gt0), (lt1, gt1) = o.both(0), o.both(1)
        both = (lt0 ^ gt0) & (lt1 ^ gt1)  # no tie
        agree = both & ~(lt0 ^ lt1)  # no tie, same sign
        return 1 + 2 * agree.astype(xp.int64) - both.astype(xp.int64)
    raise ValueError(spec.name)  # pragma: no cover


def reference_units(spec: KernelSpec, ea: np.ndarray, eb: np.ndarray) -> np.ndarray:
    """The plain kernel (grid units, int64) on both sides' :func:`encode` outputs (m, columns, width)."""
    if spec.encoding == "grid":
        return np.asarray(kernel_units(spec, ea[:, :, 0], eb[:, :, 0], np), dtype=np.int64)
    return np.asarray(kernel_units(spec, None, None, np, _Order.of_codes(ea, eb, np)), dtype=np.int64)
