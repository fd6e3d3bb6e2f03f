"""Tree mechanisms for a private cumulative count curve over a threshold grid.

Two mechanisms release the N cumulative counts C_i = #{x <= tau_i}:

* :class:`BinaryTreeMechanism` — the paper's (Barczewski, Mawass, Ramon, Eq. 2):
  one discrete Laplace noise per node of a binary tree over the 2^L padded grid,
  scale (L+1)/epsilon (replace-one, n public; Lemma 1 + Eq. 9) or
  ceil((L+1)/2)/epsilon (add/remove: a suffix changes), each point getting the noises
  on its leaf-to-root path.  Every point has variance (L+1)·Var(DLap).
* :class:`BaryTreeMechanism` — the b-ary histogram tree with least-squares
  consistency (Hay et al. 2010; OpenDP's ``make_b_ary_tree`` +
  ``make_consistent_b_ary_tree``).  The consistent estimate is computed in
  O(N' h) with the eigen-decomposition of H^T H (block-constant Haar components),
  which also gives the exact variance of every prefix.  Under replace-one the
  root count is n (public), so the root is not noised and the constant component
  is fixed exactly.

Noise is always drawn once per node and kept: the mechanisms return the noisy
statistic, never a function that redraws.

>>> import numpy as np
>>> mech = BinaryTreeMechanism(8, epsilon=1.0)
>>> mech.depth, mech.sensitivity, mech.n_nodes
(3, 4, 15)
>>> counts = np.arange(1, 9)
>>> noisy = mech.release(counts, rng=0)
>>> noisy.shape
(8,)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from privstats.central import discrete_laplace_variance
from privstats.privacy.randomness import RNGLike
from privstats.privacy.samplers import discrete_laplace
from privstats.validation import check_choice, check_epsilon, check_positive_int

__all__ = [
    "BaryTreeMechanism",
    "BinaryTreeMechanism",
    "binary_depth",
    "choose_mechanism",
    "cumulative_counts",
    "dithered_bounds",
    "grid_histogram",
    "path_matrix",
    "signed_block_decomposition",
    "uniform_grid",
]

NEIGHBOURS = ("replace", "add-remove")


# ----------------------------------------------------------------------------- grids


def uniform_grid(bounds: tuple[float, float], size: int) -> np.ndarray:
    """Thresholds tau_i = lo + i (hi - lo) / size, i = 1..size (so tau_size = hi).

    >>> uniform_grid((0, 1), 4).tolist()
    [0.25, 0.5, 0.75, 1.0]
    """
    lo, hi = bounds
    i = np.arange(1, size + 1, dtype=np.float64)
    t = lo + (hi - lo) * i / size
    t[-1] = hi
    return t


def dithered_bounds(bounds, k: int, u: float) -> tuple[tuple[float, float], float]:
    """The tree's grid of ``k`` cells shifted by a uniform fraction ``u`` of a cell (dithered rounding).

    Algorithm 1 releases a cell's midpoint.  On a fixed grid a tied value (an age, a block of zeros)
    sits at a fixed place in its cell, so its release is off by the same amount in every run: a bias of
    up to half a cell that no stderr covers, and the release hardly moves (1.1-1.3 sd in issue 26's
    table).  With the grid shifted by a public uniform draw the tied value's place in its cell is
    uniform, so the rounding is unbiased noise of variance cell²/12 (dithered quantisation).  The cells
    are (hi - lo)/(k - 1) wide so that k of them still cover the bounds at any shift; the shift is
    drawn from the caller's generator (per release; a served secure quantiles task's once, when it is
    made) and is data-independent (published as ``params["grid_shift"]``).
    Returns the grid's bounds (containing ``bounds``) and the shift in value units.
    """
    lo, hi = bounds
    h = (hi - lo) / (k - 1)
    start = lo - u * h
    return (start, start + k * h), u * h


def grid_histogram(x: np.ndarray, thresholds: np.ndarray, *, uniform: bool | None = None) -> np.ndarray:
    """Counts per cell (tau_{k-1}, tau_k] (cell 0 is x <= tau_1), plus a last cell for x > tau_N.

    O(n) for uniform grids (arithmetic bin index, corrected at the edges), else
    a binary search.  Returns int64 of length N + 1.
    """
    n_t = thresholds.size
    if uniform is None:
        uniform = n_t > 2 and np.allclose(
            np.diff(thresholds), thresholds[1] - thresholds[0], rtol=1e-9, atol=0
        )
    if uniform and n_t >= 2:
        w = thresholds[1] - thresholds[0]
        lo = thresholds[0] - w
        k = np.ceil((x - lo) / w).astype(np.int64) - 1
        np.clip(k, 0, n_t, out=k)
        # exact edge correction: k must be the first index with x <= tau_k
        kk = np.minimum(k, n_t - 1)
        up = (x > thresholds[kk]) & (k < n_t)
        k[up] += 1
        km = np.maximum(k - 1, 0)
        down = (k > 0) & (x <= thresholds[km])
        k[down] -= 1
    else:
        k = np.searchsorted(thresholds, x, side="left")
    return np.bincount(k, minlength=n_t + 1).astype(np.int64)


def cumulative_counts(x: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """C_i = #{x <= tau_i} for every threshold (int64).

    >>> cumulative_counts(np.array([0.1, 0.5, 0.5, 0.9]), np.array([0.5, 1.0])).tolist()
    [3, 4]
    """
    return np.cumsum(grid_histogram(x, thresholds)[:-1])


def binary_depth(n_points: int) -> int:
    """L = ceil(log2 N) with integer arithmetic (L = 0 for N = 1)."""
    return int(n_points - 1).bit_length()


def _scale(sensitivity: int, epsilon: float) -> Fraction:
    return Fraction(int(sensitivity)) / Fraction(epsilon)


# ------------------------------------------------------------------- paper's binary tree


@dataclass(frozen=True)
class BinaryTreeMechanism:
    """The paper's binary-tree mechanism over ``n_points`` grid points (Eq. 2).

    ``release(cumulative_counts, rng)`` returns C + M eta (int64), eta one exact
    discrete Laplace per node, drawn once.  ``sensitivity`` is the number of node
    noises a neighbouring dataset can shift (each by 1): L+1 under replace-one
    (Eq. 9), ceil((L+1)/2) under add/remove (Lemma 1, suffix case).
    """

    n_points: int
    epsilon: float
    neighbours: str = "replace"
    name: str = field(default="binary-tree", init=False)

    def __post_init__(self):
        check_positive_int(self.n_points, "grid")
        check_epsilon(self.epsilon)
        check_choice(self.neighbours, "neighbours", NEIGHBOURS)

    @property
    def depth(self) -> int:
        return binary_depth(self.n_points)

    @property
    def sensitivity(self) -> int:
        L = self.depth
        return L + 1 if self.neighbours == "replace" else (L + 2) // 2

    @property
    def scale(self) -> Fraction:
        return _scale(self.sensitivity, self.epsilon)

    def level_sizes(self) -> list[int]:
        """Nodes per level that meet the published points (padding-only nodes are skipped)."""
        return [-(-self.n_points // (1 << l)) for l in range(self.depth + 1)]

    @property
    def n_nodes(self) -> int:
        return sum(self.level_sizes())

    def statistic(self, cum_counts: np.ndarray) -> np.ndarray:
        """The vector the noise is added to: the cumulative counts themselves."""
        return np.asarray(cum_counts, dtype=np.int64)

    def noise_to_statistic(self, node_noise: np.ndarray) -> np.ndarray:
        """Path sums: point i receives sum_l node_noise[level l][i >> l] (works mod 2^64 for uint64)."""
        node_noise = np.asarray(node_noise)
        out = np.zeros(self.n_points, dtype=node_noise.dtype)
        idx = np.arange(self.n_points)
        start = 0
        for l, size in enumerate(self.level_sizes()):
            out += node_noise[start : start + size][idx >> l]
            start += size
        return out

    def draw_noise(self, rng: RNGLike = None) -> np.ndarray:
        return np.asarray(discrete_laplace(self.scale, size=self.n_nodes, rng=rng), dtype=np.int64)

    def release(self, cum_counts: np.ndarray, rng: RNGLike = None) -> np.ndarray:
        return self.statistic(cum_counts) + self.noise_to_statistic(self.draw_noise(rng))

    def estimate_counts(self, noisy_statistic: np.ndarray, n: int | None = None) -> np.ndarray:
        """Unbiased cumulative-count estimates (the release itself)."""
        return np.asarray(noisy_statistic, dtype=np.float64)

    def count_variance(self) -> np.ndarray:
        """Exact variance of every released count: (L+1) Var(DLap(scale))."""
        v = (self.depth + 1) * discrete_laplace_variance(float(self.scale))
        return np.full(self.n_points, v)

    def count_covariance(self) -> np.ndarray:
        """Exact covariance of the released counts: Var(DLap) x (number of shared path nodes).

        Points i and j share the nodes of levels l >= bit_length(i XOR j).
        """
        idx = np.arange(self.n_points, dtype=np.int64)
        x = np.bitwise_xor.outer(idx, idx)
        bits = np.where(x > 0, np.floor(np.log2(np.maximum(x, 1))).astype(np.int64) + 1, 0)
        return (self.depth + 1 - bits) * discrete_laplace_variance(float(self.scale))

    def params(self) -> dict:
        return {
            "mechanism": self.name,
            "grid_points": self.n_points,
            "depth": self.depth,
            "branching": 2,
            "sensitivity_nodes": self.sensitivity,
            "noise_scale": float(self.scale),
            "noise": "discrete Laplace per node",
        }


# ------------------------------------------------------------ b-ary tree + consistency


def _bary_height(n_leaves: int, b: int) -> int:
    h, size = 1, b
    while size < n_leaves:
        size *= b
        h += 1
    return h


def _prefix_component_norms(n_points: int, b: int, h: int) -> np.ndarray:
    """||Q_k q_p||^2 for prefixes q_p of length p = 1..n_points, k = 0..h (shape (h+1, N))."""
    p = np.arange(1, n_points + 1, dtype=np.float64)
    out = np.empty((h + 1, n_points))
    for k in range(h + 1):
        s = float(b**k)
        full = np.floor(p / s)
        r = p - full * s
        out[k] = full * s + r * r / s
    return out


@lru_cache(maxsize=256)
def _bary_structure(n_points: int, b: int, root_known: bool) -> tuple[int, np.ndarray]:
    """Height and per-prefix variance factors (count-scale variance / node-noise variance)."""
    h = _bary_height(n_points, b)
    norms = _prefix_component_norms(n_points, b, h)
    lam = np.cumsum([float(b**l) for l in range(h + 1)])  # lambda_k = sum_{l<=k} b^l
    fac = np.zeros(n_points)
    for k in range(h):
        fac += (norms[k] - norms[k + 1]) / lam[k]
    if not root_known:
        fac += norms[h] / lam[h]
    fac.setflags(write=False)
    return h, fac


@dataclass(frozen=True)
class BaryTreeMechanism:
    """b-ary histogram tree with least-squares (Hay) consistency.

    Noise goes on the node counts of a b-ary tree over the histogram of the grid
    cells (padded to b^h leaves).  Replace-one moves one record between two leaves:
    at most 2h non-root nodes change by 1 (the root is n, public, and not noised).
    Add/remove changes one leaf-to-root path: h+1 nodes.
    """

    n_points: int
    epsilon: float
    branching: int = 16
    neighbours: str = "replace"
    name: str = field(default="b-ary-tree", init=False)

    def __post_init__(self):
        check_positive_int(self.n_points, "grid")
        check_epsilon(self.epsilon)
        check_positive_int(self.branching, "branching", minimum=2)
        check_choice(self.neighbours, "neighbours", NEIGHBOURS)

    @property
    def root_known(self) -> bool:
        return self.neighbours == "replace"

    @property
    def height(self) -> int:
        return _bary_height(self.n_points, self.branching)

    @property
    def n_leaves(self) -> int:
        return self.branching**self.height

    @property
    def noised_levels(self) -> int:
        return self.height if self.root_known else self.height + 1

    @property
    def sensitivity(self) -> int:
        return 2 * self.height if self.root_known else self.height + 1

    @property
    def scale(self) -> Fraction:
        return _scale(self.sensitivity, self.epsilon)

    def level_sizes(self) -> list[int]:
        return [self.n_leaves // self.branching**l for l in range(self.noised_levels)]

    @property
    def n_nodes(self) -> int:
        return sum(self.level_sizes())

    def statistic(self, cum_counts: np.ndarray) -> np.ndarray:
        """Node counts of the noised levels, leaves first (linear in the cumulative counts)."""
        c = np.asarray(cum_counts)
        hist = np.zeros(self.n_leaves, dtype=c.dtype)
        hist[: self.n_points] = np.diff(c, prepend=np.zeros(1, dtype=c.dtype))
        levels = [hist]
        for _ in range(1, self.noised_levels):
            levels.append(levels[-1].reshape(-1, self.branching).sum(axis=1, dtype=c.dtype))
        return np.concatenate(levels)

    def noise_to_statistic(self, node_noise: np.ndarray) -> np.ndarray:
        return np.asarray(node_noise)

    def draw_noise(self, rng: RNGLike = None) -> np.ndarray:
        return np.asarray(discrete_laplace(self.scale, size=self.n_nodes, rng=rng), dtype=np.int64)

    def release(self, cum_counts: np.ndarray, rng: RNGLike = None) -> np.ndarray:
        return self.statistic(cum_counts).astype(np.int64) + self.draw_noise(rng)

    def estimate_counts(self, noisy_statistic: np.ndarray, n: int | None = None) -> np.ndarray:
        """Least-squares consistent cumulative counts at the N points.

        Solves (H^T H) leaves = H^T y through the block-constant components
        V_k (eigenvalue lambda_k = sum_{l<=k} b^l); with the root known the
        constant component is n / N' per leaf.
        """
        b, h = self.branching, self.height
        y = np.asarray(noisy_statistic, dtype=np.float64)
        u = np.zeros(self.n_leaves)
        start = 0
        for l, size in enumerate(self.level_sizes()):
            u += np.repeat(y[start : start + size], b**l)
            start += size
        lam = np.cumsum([float(b**l) for l in range(h + 1)])
        means = [u]  # Q_k u as block means, k = 0..h
        for _ in range(h):
            means.append(means[-1].reshape(-1, b).mean(axis=1))
        est = np.zeros(self.n_leaves)
        for k in range(h):
            comp = np.repeat(means[k], b**k) - np.repeat(means[k + 1], b ** (k + 1))
            est += comp / lam[k]
        if self.root_known:
            if n is None:
                raise ValueError("n is needed to fix the root under replace-one neighbours")
            est += n / self.n_leaves
        else:
            est += means[h][0] / lam[h]
        return np.cumsum(est)[: self.n_points]

    def count_variance(self) -> np.ndarray:
        """Exact variance of every consistent cumulative count."""
        _, fac = _bary_structure(self.n_points, self.branching, self.root_known)
        return fac * discrete_laplace_variance(float(self.scale))

    def count_covariance(self) -> np.ndarray:
        """Exact covariance of the consistent cumulative counts.

        Cov = Var(DLap) P (H^T H)^+ P^T with (H^T H)^+ = sum_k (Q_k - Q_{k+1}) / lambda_k
        (+ Q_h / lambda_h when the root is noised), Q_k the block means of size b^k, P the
        prefix sums; q_i^T Q_k q_j has a closed form for prefixes of lengths a <= c:
        floor(a/s) s + r min(s, c - floor(a/s) s) / s, r = a mod s.
        """
        b, h = self.branching, self.height
        P = np.arange(1, self.n_points + 1, dtype=np.float64)
        a, c = np.minimum.outer(P, P), np.maximum.outer(P, P)

        def inner(k):
            s = float(b**k)
            full = np.floor(a / s) * s
            return full + (a - full) * np.minimum(s, c - full) / s

        lam = np.cumsum([float(b**l) for l in range(h + 1)])
        cov = np.zeros((self.n_points, self.n_points))
        prev = inner(0)
        for k in range(h):
            nxt = inner(k + 1)
            cov += (prev - nxt) / lam[k]
            prev = nxt
        if not self.root_known:
            cov += prev / lam[h]
        return cov * discrete_laplace_variance(float(self.scale))

    def params(self) -> dict:
        return {
            "mechanism": self.name,
            "grid_points": self.n_points,
            "branching": self.branching,
            "height": self.height,
            "padded_leaves": self.n_leaves,
            "sensitivity_nodes": self.sensitivity,
            "noise_scale": float(self.scale),
            "noise": "discrete Laplace per node",
            "consistency": "least squares (Hay et al.)",
        }


def count_noise_draws(mech, gen: np.random.Generator, reps: int, n: int | None = None) -> np.ndarray:
    """``reps`` simulated draws (rows) of a tree release's count noise by its own law: discrete Laplace
    on every node (from each server, for a secure ``DistributedNoiseMechanism``: ``variance_factor``
    full shares), through the consistent estimate at total ``n``, which is affine in the node noise.
    For uncertainty laws only (numpy's geometric differences, not the exact sampler); the covariance
    of the rows is ``mech.count_covariance()``."""
    base = getattr(mech, "mechanism", mech)
    shares = max(1, round(getattr(mech, "variance_factor", 1.0)))
    stat = base.statistic(np.full(base.n_points, 0 if n is None else n, dtype=np.int64))
    ref = base.estimate_counts(stat, n)
    unit = np.eye(base.n_nodes, dtype=np.int64)
    L = np.array([base.estimate_counts(stat + base.noise_to_statistic(e), n) - ref for e in unit]).T
    return simulate_discrete_laplace(gen, float(base.scale), (reps, shares, base.n_nodes)).sum(axis=1) @ L.T


def simulate_discrete_laplace(gen: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Discrete Laplace draws, P(k) ∝ e^(-|k|/scale), for simulation only (a difference of two
    geometrics; releases use the exact sampler)."""
    q = -np.expm1(-1.0 / scale)
    return (gen.geometric(q, shape) - gen.geometric(q, shape)).astype(np.float64)


def choose_mechanism(n_points: int, epsilon: float, neighbours: str = "replace", method: str = "auto"):
    """The mechanism for ``method`` ("binary", "b-ary", "b-ary:<b>" or "auto").

    "auto" takes whichever of the paper's binary tree and the consistent b-ary trees
    (b = 2..64, padded size <= 16 N) has the smallest mean exact variance over the
    published points; this choice depends only on public parameters.
    """
    if method == "binary":
        return BinaryTreeMechanism(n_points, epsilon, neighbours)
    if method.startswith("b-ary:"):
        return BaryTreeMechanism(n_points, epsilon, int(method.split(":", 1)[1]), neighbours)
    if method not in ("auto", "b-ary"):
        raise ValueError(f"method must be 'auto', 'binary', 'b-ary' or 'b-ary:<b>', got {method!r}")
    best: tuple[float, BinaryTreeMechanism | BaryTreeMechanism] | None = None
    if method == "auto":
        m: BinaryTreeMechanism | BaryTreeMechanism = BinaryTreeMechanism(n_points, epsilon, neighbours)
        best = (float(m.count_variance().mean()), m)
    for b in range(2, 65):
        if b > 2 and b ** _bary_height(n_points, b) > 16 * max(n_points, 4):
            continue
        m = BaryTreeMechanism(n_points, epsilon, b, neighbours)
        v = float(m.count_variance().mean())
        if best is None or v < best[0] * (1 - 1e-12):
            best = (v, m)
    assert best is not None
    return best[1]


# ------------------------------------------------------------ Lemma 1 / Eq. 9 (checks)


def path_matrix(L: int) -> np.ndarray:
    """M in {0,1}^{2^L x (2^{L+1}-1)}: M[i, node] = 1 iff the node is on leaf i's path.

    Nodes are ordered level by level from the leaves (level l, block j).
    """
    N = 1 << L
    cols = []
    for l in range(L + 1):
        for j in range(N >> l):
            col = np.zeros(N, dtype=np.int64)
            col[j << l : (j + 1) << l] = 1
            cols.append(col)
    return np.stack(cols, axis=1)


def _node_id(L: int, level: int, block: int) -> int:
    return sum((1 << L) >> l for l in range(level)) + block


def _naf(p: int) -> list[int]:
    digits = []
    while p:
        if p & 1:
            d = 2 - (p & 3)
            p -= d
        else:
            d = 0
        digits.append(d)
        p >>= 1
    return digits


def _prefix_blocks(offset: int, length: int, level: int, L: int, mirror: bool = False) -> dict[int, int]:
    """Signed blocks for the first (or, mirrored, last) ``length`` leaves of the block at ``level``
    starting at ``offset``: the non-adjacent form of ``length`` (<= ceil((level+1)/2) terms)."""
    chi: dict[int, int] = {}
    pos = 0
    digits = _naf(length)
    size = 1 << level
    for k in range(len(digits) - 1, -1, -1):
        d = digits[k]
        if d == 0:
            continue
        lo = pos if d > 0 else pos - (1 << k)
        start = offset + (size - lo - (1 << k) if mirror else lo)
        node = _node_id(L, k, start >> k)
        chi[node] = chi.get(node, 0) + d
        pos += d << k
    return {k: v for k, v in chi.items() if v}


def signed_block_decomposition(first: int, last: int, L: int) -> dict[int, int]:
    """chi with M chi = indicator of leaves [first, last] (0-based, inclusive), ||chi||_0 <= L + 1.

    The constructive proof of Eq. 9: split at the lowest common ancestor, write the
    left part as a suffix and the right part as a prefix of the two children, each
    by Lemma 1 (non-adjacent form).  Returns {node id: +-1}.
    """
    first, last, L = int(first), int(last), int(L)
    if not (0 <= first <= last < (1 << L)):
        raise ValueError("need 0 <= first <= last < 2^L")
    m = (first ^ last).bit_length()  # level of the lowest common ancestor
    if m == 0:
        return {_node_id(L, 0, first): 1}
    if first == (first >> m) << m and last + 1 == ((first >> m) + 1) << m:
        return {_node_id(L, m, first >> m): 1}  # the interval is one block
    mid = ((first >> m) << m) + (1 << (m - 1))
    chi: dict[int, int] = {}
    parts = (
        _prefix_blocks(mid - (1 << (m - 1)), mid - first, m - 1, L, mirror=True),  # suffix of left child
        _prefix_blocks(mid, last - mid + 1, m - 1, L),
    )  # prefix of right child
    for part in parts:
        for k, v in part.items():
            chi[k] = chi.get(k, 0) + v
    return {k: v for k, v in chi.items() if v}
