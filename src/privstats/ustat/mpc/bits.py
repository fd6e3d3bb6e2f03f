"""A lazy boolean circuit over secret bit rows: XOR and NOT are free, ANDs run level by level.

Every AND gets the level ``1 + max(level of its operands)`` (XOR/NOT keep the level), and all ANDs of
one level, across every coin and every pair, go into **one** vectorised AND call: a circuit of depth
D costs D rounds whatever its width.  Only gates an output depends on are evaluated.  ``None`` stands
for the public bit 0 (an AND with it is skipped).  The same code counts gates symbolically (no
values), which the noise plans use to price their coins.

>>> import numpy as np
>>> c = Circuit(np)
>>> x, y = c.leaf(np.array([True, True, False])), c.leaf(np.array([True, False, True]))
>>> c.run([c.xor(c.and_(x, y), y)])[0].tolist()
[False, False, True]
>>> coin_cost(551, 11)  # the randomized-response coin at ε = 1: 13 ANDs in 4 levels
(13, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Circuit", "Node", "add_small", "coin_bits", "coin_cost", "less_than"]


class Node:
    __slots__ = ("a", "b", "level", "op", "value")

    def __init__(self, op: str, a: Any = None, b: Any = None, level: int = 0, value: Any = None):
        self.op, self.a, self.b, self.level, self.value = op, a, b, level, value


class Circuit:
    """Gates over boolean arrays of one shape (numpy, or SPU's traced jax arrays); ``xp`` None: count."""

    def __init__(self, xp):
        self.xp = xp

    def leaf(self, value, level: int = 0) -> Node:
        return Node("leaf", level=level, value=value)

    def xor(self, a: Node | None, b: Node | None) -> Node | None:
        if a is None or b is None:
            return b if a is None else a
        return Node("xor", a, b, max(a.level, b.level))

    def not_(self, a: Node) -> Node:
        return Node("not", a, level=a.level)

    def and_(self, a: Node | None, b: Node | None) -> Node | None:
        if a is None or b is None:
            return None
        return Node("and", a, b, 1 + max(a.level, b.level))

    @staticmethod
    def gates(outputs: Sequence[Node | None]) -> list[Node]:
        """The AND gates the outputs depend on (each once)."""
        seen: set[int] = set()
        out: list[Node] = []
        stack = [o for o in outputs if o is not None]
        while stack:
            n = stack.pop()
            if id(n) in seen or n.op == "leaf":
                continue
            seen.add(id(n))
            if n.op == "and":
                out.append(n)
            stack.extend(x for x in (n.a, n.b) if x is not None)
        return out

    def _value(self, n: Node):
        while n.value is None:  # XOR / NOT chains (ANDs and leaves already hold values)
            stack = [n]
            while stack:
                top = stack[-1]
                pending = [x for x in (top.a, top.b) if x is not None and x.value is None]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                top.value = top.a.value ^ top.b.value if top.op == "xor" else ~top.a.value
        return n.value

    def run(self, outputs: Sequence[Node | None]) -> list:
        """The outputs' values: one stacked AND call per level (``None`` outputs stay public 0)."""
        xp = self.xp
        ands = self.gates(outputs)
        for level in sorted({g.level for g in ands}):
            row = [g for g in ands if g.level == level]
            prod = xp.stack([self._value(g.a) for g in row]) & xp.stack([self._value(g.b) for g in row])
            for i, g in enumerate(row):
                g.value = prod[i]
        return [None if o is None else self._value(o) for o in outputs]


def less_than(c: Circuit, rows: list[Node], T: int, k: int) -> Node:
    """[u < T] for the k-bit u whose bits from T's lowest set bit up are ``rows`` (u's lower bits
    cannot change the answer: T has zeros there); needs 1 ≤ T < 2^k.

    A comparison tree against the public T: each bit gives ``lt = ¬u_i ∧ T_i`` and ``eq = ¬(u_i ⊕ T_i)``
    (free), and a (high, low) pair of blocks combines as ``lt = lt_H ⊕ (eq_H ∧ lt_L)`` (the two terms
    are exclusive), ``eq = eq_H ∧ eq_L``.  ``lt_L`` is public 0 where T has no set bit in the low block
    (its AND is skipped), and the lowest block's eq is never used (never evaluated): ⌈log2 n⌉ levels
    for n bits, 13 ANDs for T = 551, k = 11.  Any circuit needs at least n − 1 ANDs (the lowest set
    bit's term has degree n).
    """
    low = (T & -T).bit_length() - 1
    if not 1 <= T < 2**k or len(rows) != k - low:
        raise ValueError(f"threshold {T} needs 1 ≤ T < 2^{k} and {k - low} bit rows, got {len(rows)}")
    lt: list[Node | None] = []
    eq: list[Node] = []
    for i, r in enumerate(rows):
        bit = (T >> (low + i)) & 1
        lt.append(c.not_(r) if bit else None)
        eq.append(r if bit else c.not_(r))
    while len(lt) > 1:
        n = len(lt)
        new_lt: list[Node | None] = []
        new_eq: list[Node] = []
        for j in range(n // 2):
            lo, hi = 2 * j, 2 * j + 1
            new_lt.append(c.xor(lt[hi], c.and_(eq[hi], lt[lo])))
            new_eq.append(c.and_(eq[hi], eq[lo]))  # type: ignore[arg-type]  # eq is never public
        if n % 2:  # the highest block has no partner at this level: carried up
            new_lt.append(lt[n - 1])
            new_eq.append(eq[n - 1])
        lt, eq = new_lt, new_eq
    if lt[0] is None:  # pragma: no cover - T ≥ 1 has a set bit
        raise AssertionError
    return lt[0]


def coin_bits(T: int, k: int) -> int:
    """Random bits a coin [u < T] on k bits reads: u's bits from T's lowest set bit up."""
    return k - ((T & -T).bit_length() - 1)


def coin_cost(T: int, k: int) -> tuple[int, int]:
    """(ANDs, levels) of the coin [u < T] on k joint random bits."""
    c = Circuit(None)
    out = less_than(c, [c.leaf(None) for _ in range(coin_bits(T, k))], T, k)
    return len(Circuit.gates([out])), out.level


def add_small(c: Circuit, xs: list[Node], low: Node, high: Node | None) -> list[Node]:
    """The bits of ``(X + low + 2·high) mod 2^B`` for ``X = Σ_j 2^j·xs[j]`` (B = len(xs) ≥ 2).

    A ripple adder whose carry into bit j ≥ 3 is ``c_2 ∧ xs[2] ∧ … ∧ xs[j−1]`` (the products of the
    xs are ready before c_2, so the carries of all high bits take one level after c_2): B + 1 ANDs
    for B ≤ 3, 2B − 3 beyond.  Every output bit XORs in an AND output (a fresh sharing) from bit 1 up.

    >>> import numpy as np
    >>> c = Circuit(np)
    >>> v = [c.leaf(np.array([b])) for b in (True, True, False, False, True)]  # X = 3, low = high = 1
    >>> [int(x[0]) for x in c.run(add_small(c, v[:4], v[4], v[4]))]  # 3 + 1 + 2 = 6
    [0, 1, 1, 0]
    """
    out = [c.xor(xs[0], low)]
    c1 = c.and_(xs[0], low)
    if high is None:
        out.append(c.xor(xs[1], c1))
        carry = c.and_(xs[1], c1)
    else:
        out.append(c.xor(c.xor(xs[1], high), c1))
        carry = c.xor(c.and_(c.xor(xs[1], c1), c.xor(high, c1)), c1)  # majority(xs[1], high, c1)
    prefix: Node | None = None  # xs[2] ∧ … ∧ xs[j−1]
    for j in range(2, len(xs)):
        cj = carry if prefix is None else c.and_(carry, prefix)
        out.append(c.xor(xs[j], cj))
        prefix = xs[j] if prefix is None else c.and_(prefix, xs[j])
    return out  # type: ignore[return-value]  # xs are never public
