"""Bit-sliced circuits: 64 pairs per word, so that each gate of a job is one bitwise operation on words.

Pair ``p`` lives in bit ``p % 64`` of word ``p // 64``.  The parties' joint random bits enter the
computation already in this layout (each party's own random words are its 64-bit boolean shares), and
the per-pair bits of the secure comparisons are packed by local operations (shifts and XORs of boolean
shares: free).  The coins' AND trees, the exact comparisons' top-bit fixes and the ties kernels'
equality trees (on bit rows each party transposes locally) then run as ANDs of words
in one :class:`~.bits.Circuit` (one AND call per level, the fixes in the coins' first level), and the
results are unpacked (shifts and masks: free) into per-pair bits only where a release needs them.  The
gates are the same as pair by pair, so every output bit has the same law; only the layout changes.

>>> x = np.array([1, 0, 1, 1] * 20, dtype=np.int64)
>>> w = pack(np, x, x.size)
>>> w.shape, bool(np.array_equal(unpack(np, w[None, :], x.size)[0], x))
((2,), True)
"""

from __future__ import annotations

import numpy as np

from .bits import Circuit, Node
from .kernels import KernelSpec

__all__ = [
    "WORD",
    "PackedOrder",
    "bit_rows",
    "equal_node",
    "kernel_nodes",
    "order_needs",
    "pack",
    "unpack",
    "words",
]

WORD = 64
_SHIFTS = np.arange(WORD, dtype=np.int64)


def words(m: int) -> int:
    """Words holding m pairs' bits."""
    return (m + WORD - 1) // WORD


def _fold(xp, x):
    """XOR of the columns of x (n, k) → (n,) (a tree of local XORs)."""
    while x.shape[1] > 1:
        h = x.shape[1] // 2
        y = x[:, :h] ^ x[:, h : 2 * h]
        x = xp.concatenate([y, x[:, 2 * h :]], axis=1) if x.shape[1] % 2 else y
    return x[:, 0]


def pack(xp, bits, m: int):
    """(m,) bits (bool or 0/1 int64, boolean shares) → (words(m),) int64 words (local operations)."""
    x = bits.astype(xp.int64)
    full = m // WORD
    parts = []
    if full:
        parts.append(_fold(xp, x[: full * WORD].reshape(full, WORD) << _SHIFTS[None, :]))
    if m % WORD:
        parts.append(_fold(xp, (x[full * WORD :] << _SHIFTS[: m % WORD])[None, :]))
    return parts[0] if len(parts) == 1 else xp.concatenate(parts)


_MASKS = {j: sum(1 << b for b in range(WORD) if not b & j) for j in (32, 16, 8, 4, 2, 1)}


def bit_rows(xp, x, m: int):
    """(m,) int64 words (64-bit boolean shares) → (64, words(m)) packed bit rows: row i holds bit i of
    every pair's word, pair p in bit p % 64 of word p // 64 (the 64×64 bit-matrix transpose of each
    block of 64 pairs in six swap stages of shifts, masks and XORs: all local).

    >>> x = np.arange(70, dtype=np.int64) * 3
    >>> rows = bit_rows(np, x, 70)
    >>> rows.shape, bool(np.array_equal(unpack(np, rows, 70)[5], (x >> 5) & 1))
    ((64, 2), True)
    """
    n = words(m)
    if n * WORD > m:  # the last block's missing pairs: public zeros (trimmed on unpacking)
        x = xp.concatenate([x, xp.zeros(n * WORD - m, dtype=xp.int64)])
    a = x.reshape(n, WORD)
    for j in (32, 16, 8, 4, 2, 1):  # swap the off-diagonal j×j blocks: rows k (k & j = 0) and k + j
        b = a.reshape(n, WORD // (2 * j), 2, j)
        lo, hi = b[:, :, 0, :], b[:, :, 1, :]
        t = ((lo >> j) ^ hi) & np.int64(_MASKS[j])  # bit 63 of every mask is 0: >> may be arithmetic
        a = xp.stack([lo ^ (t << j), hi ^ t], axis=2).reshape(n, WORD)
    return a.T


def equal_node(c: Circuit, xa, xb) -> Node:
    """[a = b] for 64-bit words given as packed bit rows (:func:`bit_rows`, boolean shares; the parties
    transpose their own contributions locally: the transpose is XOR-linear): the AND of the 64 bits
    of ¬(a ⊕ b), a balanced tree of 63 one-bit ANDs in 6 levels (no arithmetic equality test)."""
    rows = xa ^ xb
    level: list[Node] = [c.not_(c.leaf(rows[i])) for i in range(WORD)]
    while len(level) > 1:
        level = [c.and_(level[i], level[i + 1]) for i in range(0, len(level), 2)]  # type: ignore[misc]
    return level[0]


def unpack(xp, w, m: int):
    """(n, words) int64 words → (n, m) int64 bits 0/1 (local: shifts and a mask)."""
    return ((w[:, :, None] >> _SHIFTS) & 1).reshape(w.shape[0], -1)[:, :m]


def order_needs(spec: KernelSpec) -> list[tuple[int, bool]]:
    """The comparisons (column k, flip: [b_k < a_k] instead of [a_k < b_k]) a sortable kernel reads."""
    if spec.name == "greater":
        return [(0, True)]
    if spec.name == "raw_less":
        return [(0, False)]
    if spec.name == "sign_product":
        return [(0, False), (0, True), (1, False), (1, True)]
    k = int(spec.name[-1]) if spec.name.startswith("not_equal") else 0
    return [(k, False), (k, True)]


class PackedOrder:
    """Exact comparisons as circuit nodes on packed words: all the job's comparisons of the low 63-bit
    words in **one** secure comparison call, each top-bit fix ``(t_a ⊕ t_b) ∧ (lt63 ⊕ t_b)`` an AND
    node (level 1: evaluated with the coins' first level; see :mod:`.kernels` for the formula).  A
    column read in both directions gets ``[a < b]`` from the comparison and ``[a = b]`` from an AND tree
    on the full words' bits (:func:`equal_node`, its levels beside the coins'), and ``[b < a]`` as
    ``¬([a < b] ⊕ [a = b])`` (exclusive): no second comparison and no arithmetic equality test.

    ``w``: (m, 2, columns) low words (arithmetic shares); ``x``: (2, columns, 64, words(m)) the full
    order-preserving words' packed bit rows (64-bit boolean shares; row 63 holds the top bits).
    """

    def __init__(self, c: Circuit, xp, w, x, m: int, needs: list[tuple[int, bool]]):
        self.c = c
        cols = sorted({k for k, _ in needs})
        pairs = [k for k in cols if (k, False) in needs and (k, True) in needs]  # both directions
        ones = [(k, f) for k, f in needs if k not in pairs]
        d = {k: w[:, 0, k] - w[:, 1, k] for k in cols}  # both in [0, 2^63): no wrap
        rows = [d[k] for k in pairs] + [-d[k] if f else d[k] for k, f in ones]
        lt63 = xp.stack(rows) < 0  # one comparison call
        self.low = {key: c.leaf(pack(xp, lt63[len(pairs) + i], m)) for i, key in enumerate(ones)}
        self.top = {(s, k): c.leaf(x[s, k, WORD - 1]) for s in (0, 1) for k in cols}
        self.cache: dict[tuple[int, bool], Node] = {}
        for i, k in enumerate(pairs):  # [b < a] from [a < b] and the equality tree
            self.low[k, False] = c.leaf(pack(xp, lt63[i], m))
            lt = self.less(k)
            self.cache[k, True] = c.not_(c.xor(lt, equal_node(c, x[0, k], x[1, k])))  # type: ignore[arg-type]

    def less(self, k: int, flip: bool = False) -> Node:
        """[a_k < b_k] (``flip``: [b_k < a_k]), exact for all finite values."""
        if (k, flip) not in self.cache:
            c, low = self.c, self.low[k, flip]
            ta, tb = self.top[0, k], self.top[1, k]
            fix = c.and_(c.xor(ta, tb), c.xor(low, ta if flip else tb))
            self.cache[k, flip] = c.xor(low, fix)  # type: ignore[assignment]  # never public
        return self.cache[k, flip]


def kernel_nodes(spec: KernelSpec, order: PackedOrder) -> tuple[Node, Node | None]:
    """A sortable kernel in grid units in binary, ``K = low + 2·high``, as circuit nodes (packed)."""
    c = order.c
    if spec.name == "raw_less":  # benchmark baseline only: the low words' comparison, no fix
        return order.low[0, False], None
    if spec.name == "greater":
        return order.less(0, flip=True), None
    if spec.name == "sign_product":  # 1 + sign(a0 − b0)·sign(a1 − b1) = [tie] + 2·[no tie, same sign]
        lt0, gt0, lt1, gt1 = order.less(0), order.less(0, True), order.less(1), order.less(1, True)
        both = c.and_(c.xor(lt0, gt0), c.xor(lt1, gt1))  # no tie
        agree = c.and_(both, c.not_(c.xor(lt0, lt1)))  # type: ignore[arg-type]  # no tie, same sign
        return c.not_(both), agree  # type: ignore[arg-type]
    k = int(spec.name[-1]) if spec.name.startswith("not_equal") else 0
    lt, gt = order.less(k), order.less(k, flip=True)
    ne = c.xor(lt, gt)  # the two are exclusive: [a ≠ b]
    if spec.name == "greater_half":  # 1 + [a > b] − [a < b] = [a = b] + 2·[a > b]
        return c.not_(ne), gt  # type: ignore[arg-type]
    if spec.name == "equal":
        return c.not_(ne), None  # type: ignore[arg-type]
    return ne, None  # type: ignore[return-value]
