"""Range counting by the dyadic decomposition of Ghazi et al. §5 (matrix mechanism on a frequency oracle).

Tree over B = 2^L leaves, retained nodes 𝒯 = {root} ∪ {left children} (|𝒯| = B).
Node ids: root → 0; the left child with heap index h (root = 1, children 2h, 2h+1) → h/2.
A user at leaf x sends the 𝒯-ancestors-or-self of x (1 + L − popcount(x) ≤ 1 + L nodes)
to a k-set frequency oracle; the prefix count #{x < j} is Σ over the set bits r of j
of the node covering [(j>>(r+1))<<(r+1), +2^r), so a range [lo, hi) is a ±1 combination
of at most 2L node estimates.  In d dimensions everything is a Kronecker product:
a user sends the Cartesian product of its per-axis node sets (k = (1+L)^d) and a box
query combines products of per-axis coefficients ((2L)^d terms).

>>> support(np.array([0, 5]), 8)         # leaf 0: root and 3 left children; leaf 5 (101b): root, one left child
array([[ 0,  1,  2,  4],
       [ 0,  3, -1, -1]])
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["box_terms", "node_ids_nd", "prefix_terms", "range_terms", "support", "support_nd"]


def _levels(B: int) -> int:
    L = round(math.log2(B))
    if 1 << L != B:
        raise ValueError(f"the tree needs a power-of-two domain, got {B}")
    return L


def support(x: np.ndarray, B: int) -> np.ndarray:
    """Node ids of the 𝒯-ancestors-or-self of each leaf, shape (n, 1 + L), padded with −1 (root first)."""
    L = _levels(B)
    x = np.asarray(x, dtype=np.int64)
    out = np.full((x.size, L + 1), -1, dtype=np.int64)
    out[:, 0] = 0
    col = np.ones(x.size, dtype=np.int64)
    for depth in range(1, L + 1):  # node at this depth on x's path has heap index (B + x) >> (L − depth)
        h = (B + x) >> (L - depth)
        left = (h & 1) == 0
        out[left, col[left]] = h[left] // 2
        col += left
    return out


def support_nd(points: np.ndarray, B: int) -> np.ndarray:
    """Flattened node ids (Σ_s id_s · B^s) of the Kronecker support of each d-dim point, padded with −1."""
    pts = np.atleast_2d(np.asarray(points, dtype=np.int64))
    n, d = pts.shape
    per_axis = [support(pts[:, s], B) for s in range(d)]
    L1 = per_axis[0].shape[1]
    out = np.full((n, L1**d), -1, dtype=np.int64)
    for c, combo in enumerate(itertools.product(range(L1), repeat=d)):
        ids = np.zeros(n, dtype=np.int64)
        ok = np.ones(n, dtype=bool)
        for s, col in enumerate(combo):
            v = per_axis[s][:, col]
            ok &= v >= 0
            ids += np.maximum(v, 0) * B**s
        out[ok, c] = ids[ok]
    return out


def node_ids_nd(ids: tuple[int, ...], B: int) -> int:
    return int(sum(i * B**s for s, i in enumerate(ids)))


def prefix_terms(j: int, B: int) -> dict[int, int]:
    """{node id: coefficient} with #{x < j} = Σ coefficient · count(node), 0 ≤ j ≤ B."""
    L = _levels(B)
    if not 0 <= j <= B:
        raise ValueError(f"prefix end must be in [0, {B}], got {j}")
    if j == B:
        return {0: 1}
    terms: dict[int, int] = {}
    for r in range(L):
        if (j >> r) & 1:
            start = (j >> (r + 1)) << (r + 1)
            h = (B + start) >> r
            terms[h // 2] = terms.get(h // 2, 0) + 1
    return terms


def range_terms(lo: int, hi: int, B: int) -> dict[int, int]:
    """{node id: ±1} for the count of x in [lo, hi) (shared nodes cancel)."""
    if not 0 <= lo <= hi <= B:
        raise ValueError(f"range must satisfy 0 <= lo <= hi <= {B}, got [{lo}, {hi})")
    terms = dict(prefix_terms(hi, B))
    for node, c in prefix_terms(lo, B).items():
        terms[node] = terms.get(node, 0) - c
    return {k: v for k, v in terms.items() if v}


def box_terms(box, B: int) -> dict[int, int]:
    """{flattened node id: coefficient} for a d-dim box [(lo_1, hi_1), …, (lo_d, hi_d)] (half-open)."""
    per_axis = [range_terms(int(lo), int(hi), B) for lo, hi in box]
    terms: dict[int, int] = {}
    for combo in itertools.product(*[list(t.items()) for t in per_axis]):
        node = sum(nid * B**s for s, (nid, _) in enumerate(combo))
        coef = int(np.prod([c for _, c in combo]))
        terms[node] = terms.get(node, 0) + coef
    return {k: v for k, v in terms.items() if v}
