"""The exact privacy curve of shuffled k-ary randomized response for small n, by enumeration.

The analyzer sees the histogram H of the n reports.  For the victim's two values a, b and a dataset of
the other n − 1 users, the law of H is the convolution of one multinomial per user; δ(ε) of the
protocol is the largest hockey-stick divergence, in either direction, over every such dataset.  That
is the definition itself, so nothing here is a bound: the only approximation is floating-point
rounding: every histogram probability is built in n steps of sums of at most k non-negative
products, so it is off by a relative (n + 1)k·2⁻⁵³ at most, and Σ_h (P_h − e^ε Q_h)_+ by at most
(1 + e^ε) times that; four times this is added.

Only the *type* of the others' dataset matters: how many hold a, how many hold b and how the rest are
spread over the k − 2 other values (those values are exchangeable under both hypotheses, so a
multiset of counts is enough).  Every type is enumerated; the histogram space has C(n+k−1, k−1)
points, so this is for small n only (:func:`exact_feasible`).  The shuffle accountant
(:func:`~privstats.privacy.krr_shuffle.krr_shuffle_delta`) uses it whenever it is feasible: there the
reported curve *is* the exact one.

>>> round(krr_small_exact_delta(0.2, 1.0, 1, 4), 6) == round((math.e - math.exp(0.2)) / (math.e + 3), 6)
True
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["EXACT_WORK", "exact_feasible", "krr_small_exact_delta"]

#: enumeration is used when (number of dataset types) × (histogram points) × n is at most this
EXACT_WORK = 30_000_000
_TABLE_WORK = 500_000  # ... and (histogram points) × max(n, k), the index tables built in Python

F = NDArray[np.float64]


def _partitions(total: int, parts: int, largest: int | None = None) -> list[tuple[int, ...]]:
    """Non-increasing tuples of at most ``parts`` positive integers summing to ``total``."""
    if total == 0:
        return [()]
    if parts == 0:
        return []
    top = total if largest is None else min(total, largest)
    return [(x, *rest) for x in range(top, 0, -1) for rest in _partitions(total - x, parts - 1, x)]


def _types(n_others: int, k: int) -> list[tuple[int, ...]]:
    """Counts per value (a, b, then the others) of every dataset type of the other users."""
    out = []
    for c_a in range(n_others + 1):
        for c_b in range(n_others - c_a + 1):
            for rest in _partitions(n_others - c_a - c_b, k - 2):
                out.append((c_a, c_b, *rest, *([0] * (k - 2 - len(rest)))))
    return out


@lru_cache(maxsize=256)
def exact_feasible(n: int, k: int) -> bool:
    """Whether :func:`krr_small_exact_delta` is cheap enough for (n, k)."""
    if n < 1 or k < 2 or n > 40:
        return False
    points = math.comb(n + k - 1, k - 1)
    if points * max(n, k) > _TABLE_WORK:
        return False
    return len(_types(n - 1, k)) * points * n <= EXACT_WORK


@lru_cache(maxsize=64)
def _steps(k: int, n: int) -> tuple[tuple[NDArray[np.int64], ...], tuple[int, ...]]:
    """For t = 0..n−1, where each histogram of t reports goes when one report j is added."""
    index: list[dict[tuple[int, ...], int]] = []
    for t in range(n + 1):
        hs = [
            tuple(np.bincount(c, minlength=k)) for c in itertools.combinations_with_replacement(range(k), t)
        ]
        index.append({h: i for i, h in enumerate(hs)})
    nxt = []
    for t in range(n):
        rows = np.empty((len(index[t]), k), dtype=np.int64)
        for h, i in index[t].items():
            for j in range(k):
                rows[i, j] = index[t + 1][tuple(x + (y == j) for y, x in enumerate(h))]
        nxt.append(rows)
    return tuple(nxt), tuple(len(ix) for ix in index)


def _add_report(law: F, nxt: NDArray[np.int64], size: int, probs: F) -> F:
    """Law of the histogram after one more report with law ``probs``."""
    weights = (law[:, None] * probs[None, :]).ravel()
    return np.asarray(np.bincount(nxt.ravel(), weights, size), dtype=np.float64)


@lru_cache(maxsize=8)
def _laws(epsilon0: float, n: int, k: int) -> tuple[F, F]:
    """Law of the histogram for every dataset type, victim holding a (first) or b (second).

    The types are walked depth first (holders of a, of b, then the other values with non-increasing
    counts), so datasets sharing a prefix share its convolutions."""
    nxt, sizes = _steps(k, n)
    hi = 1 / (1 + (k - 1) * math.exp(-epsilon0))
    probs = np.full((k, k), math.exp(-epsilon0) * hi)
    np.fill_diagonal(probs, hi)
    p_rows: list[F] = []
    q_rows: list[F] = []

    def walk(v: int, law: F, t: int, cap: int) -> None:  # values < v placed, t reports so far
        left = n - 1 - t
        if left == 0:
            p_rows.append(_add_report(law, nxt[t], sizes[n], probs[0]))
            q_rows.append(_add_report(law, nxt[t], sizes[n], probs[1]))
            return
        if v >= k or (v >= 2 and cap == 0):
            return
        if v == 1 and k == 2:  # b takes every one left
            walk(2, _add_many(law, t, left, probs[1]), n - 1, 0)
            return
        if v < 2:
            walk(v + 1, law, t, left)  # no holder of this value
        for c in range(1, (left if v < 2 else min(left, cap)) + 1):
            law = _add_report(law, nxt[t + c - 1], sizes[t + c], probs[v])
            if v < 2 or left - c <= (k - 1 - v) * c:  # the rest still fits in non-increasing counts
                walk(v + 1, law, t + c, c if v >= 2 else left - c)

    def _add_many(law: F, t: int, count: int, row: F) -> F:
        for i in range(count):
            law = _add_report(law, nxt[t + i], sizes[t + i + 1], row)
        return law

    walk(0, np.ones(1), 0, n - 1)
    return np.array(p_rows), np.array(q_rows)


def krr_small_exact_delta(eps: float, epsilon0: float, n: int, k: int) -> float:
    """Exact δ(ε) of n shuffled k-RR reports at local ε0 (worst case over the other users, both
    directions), rounded up; only for :func:`exact_feasible` (n, k)."""
    if not exact_feasible(n, k):
        raise ValueError(f"exact enumeration is not feasible for n={n}, k={k}")
    if eps >= epsilon0:
        return 0.0
    p, q = _laws(float(epsilon0), n, k)
    e = math.exp(eps)
    d = max(np.maximum(p - e * q, 0).sum(axis=1).max(), np.maximum(q - e * p, 0).sum(axis=1).max())
    rounding = 4 * (n + 1) * k * 2.0**-53 * (1 + e)
    return min(1.0, float(d) + rounding)
