"""Private quantiles: from a released ECDF (Algorithm 1), the exponential mechanism
(Smith 2011) and the joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021).

The exponential mechanisms release a point of a public grid (:class:`OutputGrid`: 2^32 equal
cells of the bounds, fewer only when the bounds' float spacing is coarser), never a float computed
from the data: a float ``left + u·(right − left)`` between two data points would carry the interval
in its low-order bits (a distinguisher fired on 10% of releases of a pure 1-DP median).  They sort
the data once, count exactly how many grid points have each rank (``#{x < g} = i``), and sample a
rank with weight count_i × β^(−utility/Δ) — β <= e^(ε/2) rational — then a uniform grid point of
that rank.

The single-quantile mechanism (``exponential`` / ``independent``) samples exactly
(:func:`exact_exponential_counts`: integer target rank, exact rejection with integer arithmetic on
the random source: the OS CSPRNG with ``rng=None``).  The joint mechanism computes its weights in
float64 (relative error bounded and paid for by a smaller ε, :data:`JOINT_WEIGHT_ERROR`) and draws
each index exactly from them (:func:`_sample_float_weights`), the grid points of a rank exactly
uniformly.  The tree quantiles (``method="tree"``) invert a released ECDF on its own public grid.

>>> import numpy as np
>>> x = np.random.default_rng(0).uniform(0, 1, 10_000)
>>> q = joint_exponential_quantiles(np.sort(x), [0.25, 0.5, 0.75], epsilon=1.0, bounds=(0, 1), rng=1)
>>> bool(np.all(np.abs(q - [0.25, 0.5, 0.75]) < 0.02))
True
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = [
    "OUTPUT_GRID_BITS",
    "OutputGrid",
    "exact_exponential_counts",
    "exact_exponential_interval",
    "exponential_quantile",
    "independent_exponential_quantiles",
    "inverse_ecdf",
    "joint_exponential_quantiles",
    "joint_sensitivity",
]


def inverse_ecdf(thresholds: np.ndarray, values: np.ndarray, p) -> np.ndarray:
    """Algorithm 1: binary search for the first grid threshold with F(tau) >= p (vectorized over p).

    On a non-monotone curve this is the paper's bisection (some crossing); on a
    monotone one it is inf{tau : F(tau) >= p}.  p above every value gives the last threshold.
    """
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    N = values.size
    a = np.full(p.shape, -1, dtype=np.int64)  # F(a) < p (virtual F(-1) = 0 < p)
    b = np.full(p.shape, N - 1, dtype=np.int64)  # answer if never reached
    while True:
        active = b - a > 1
        if not active.any():
            break
        m = (a + b) // 2
        go_right = active & (values[np.clip(m, 0, N - 1)] < p)
        a = np.where(go_right, m, a)
        b = np.where(active & ~go_right, m, b)
    return thresholds[b]


#: the exponential mechanisms release a point of 2^OUTPUT_GRID_BITS equal cells of the bounds
OUTPUT_GRID_BITS = 32


class OutputGrid:
    """The public output grid of the exponential-mechanism quantiles: g_k = min(lo + k·step, hi),
    k = 0..2^bits, step = (hi − lo)·2^−bits, computed in float64 from the bounds only.

    ``bits`` is :data:`OUTPUT_GRID_BITS` (cells of 2.3e-10 of the width) unless the bounds' float
    spacing is coarser (cells at least 8 ulps wide, so the points are distinct floats).  Every
    release is one of these points, whatever the data: no low-order bit depends on the data.

    >>> g = OutputGrid((0.0, 2.0))
    >>> g.bits, float(g.points(1)), int(g.count_le(np.array([0.0, 1.0]))[1]) == 2**31 + 1
    (32, 4.656612873077393e-10, True)
    """

    def __init__(self, bounds):
        self.lo, self.hi = float(bounds[0]), float(bounds[1])
        ulp = float(np.spacing(max(abs(self.lo), abs(self.hi))))
        room = math.floor(math.log2(self.hi - self.lo) - math.log2(8 * ulp))
        self.bits = int(max(1, min(OUTPUT_GRID_BITS, room)))
        self.cells = 1 << self.bits
        self.step = math.ldexp(self.hi - self.lo, -self.bits)

    @property
    def params(self) -> dict:
        """What the Estimate states about the grid (public: a function of the bounds)."""
        return {
            "output_grid_cells": self.cells,
            "output_grid": f"2^{self.bits} equal cells of the bounds (spacing {self.step:.3g})",
        }

    def points(self, k) -> np.ndarray:
        """The grid points of indices ``k`` (non-decreasing in k: every float operation is monotone)."""
        return np.minimum(self.lo + np.asarray(k, dtype=np.float64) * self.step, self.hi)

    def count_le(self, x: np.ndarray) -> np.ndarray:
        """#{k : g_k <= x} for each x, exactly (a guess from the spacing, then a vectorized bisection)."""
        x = np.asarray(x, dtype=np.float64)
        top = self.cells + 1
        with np.errstate(invalid="ignore", over="ignore"):
            guess = np.nan_to_num(np.floor((x - self.lo) / self.step), nan=0.0, posinf=top, neginf=0.0)
        guess = np.clip(guess, 0, top).astype(np.int64)
        a, b = (
            np.clip(guess - 2, 0, top),
            np.clip(guess + 3, 0, top),
        )  # answer in [a, b] if the guess is close
        a = np.where((a > 0) & (self.points(np.maximum(a - 1, 0)) > x), 0, a)
        b = np.where((b < top) & (self.points(np.minimum(b, self.cells)) <= x), top, b)
        while np.any(a < b):
            mid = (a + b) // 2
            below = self.points(np.minimum(mid, self.cells)) <= x  # g_mid <= x: the answer is > mid
            a, b = np.where(below & (a < b), mid + 1, a), np.where(below | (a >= b), b, mid)
        return a

    def rank_counts(self, sorted_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(edges, counts): the grid points with exactly i data points below them are the indices
        edges[i] .. edges[i] + counts[i] − 1 (i = 0..n; counts are exact integers summing to 2^bits + 1)."""
        kappa = self.count_le(np.clip(sorted_x, self.lo, self.hi))
        edges = np.concatenate([[0], kappa, [self.cells + 1]]).astype(np.int64)
        return edges[:-1], np.diff(edges)


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    mx = a.max(axis=0)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - safe).sum(axis=0)) + safe


def exponential_quantile(
    sorted_x: np.ndarray,
    q: float,
    *,
    epsilon: float,
    bounds,
    rng: RNGLike = None,
    neighbours: str = "replace",
) -> float:
    """Smith's exponential mechanism for one quantile on the public grid: utility −|rank − qn|, sensitivity 1."""
    return float(
        independent_exponential_quantiles(
            sorted_x, [q], epsilon=epsilon, bounds=bounds, rng=rng, neighbours=neighbours
        )[0]
    )


def independent_exponential_quantiles(
    sorted_x: np.ndarray, qs, *, epsilon: float, bounds, rng: RNGLike = None, neighbours: str = "replace"
) -> np.ndarray:
    """One exponential mechanism per quantile with ε/m each (diffprivlib's approach), sorting once.

    Each output is a point g of the public :class:`OutputGrid`, drawn with probability
    ∝ β^(−|#{x < g} − floor(qn)|) (β <= e^(ε/2m) rational) by :func:`exact_exponential_counts`
    (integer arithmetic on the random source: the OS CSPRNG, or a seeded one for simulations).
    """
    src = as_source(rng)
    qs = np.asarray(qs, dtype=np.float64)
    grid = OutputGrid(bounds)
    edges, counts = grid.rank_counts(np.asarray(sorted_x, dtype=np.float64))
    eps_each = epsilon / qs.size
    k = np.empty(qs.size, dtype=np.int64)
    for j, q in enumerate(qs):
        i = exact_exponential_counts(counts, float(q), eps_each, src)
        k[j] = int(edges[i]) + _randbelow(int(counts[i]), src)
    return grid.points(k)


def _randbelow(high: int, src) -> int:
    """Exactly uniform integer in [0, high) for a Python int ``high`` (rejection on 64-bit words)."""
    bits = high.bit_length()
    words = (bits + 63) // 64
    while True:
        r = 0
        for w in src.uint64(words).tolist():
            r = (r << 64) | int(w)
        r >>= words * 64 - bits
        if r < high:
            return r


def _base_below_exp(eta: float) -> Fraction:
    """A rational β <= e^eta (denominator 2^32; 1 if e^eta rounds to it)."""
    num = math.floor(math.exp(eta) * 2.0**32 * (1 - 1e-12))
    return max(Fraction(num, 1 << 32), Fraction(1))


def exact_exponential_interval(left: np.ndarray, right: np.ndarray, q: float, epsilon: float, src) -> int:
    """Exact exponential mechanism over intervals (index = number of points below), weight = length.

    Interval j has weight len_j · β^(−|j − t|), lengths the exact dyadic differences of the float
    endpoints (see :func:`_exact_rank_sample`).

    >>> from privstats.privacy.randomness import as_source
    >>> l, r = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    >>> 0 <= exact_exponential_interval(l, r, 0.5, 1.0, as_source(0)) < 3
    True
    """

    def length(j: int) -> Fraction:
        return Fraction(float(right[j])) - Fraction(float(left[j]))

    return _exact_rank_sample(right - left, length, q, epsilon, src)


def exact_exponential_counts(counts: np.ndarray, q: float, epsilon: float, src) -> int:
    """Exact exponential mechanism over ranks i = 0..n with integer weights counts_i · β^(−|i − t|).

    ``counts[i]`` is the number of public grid points with exactly i data points below them.

    >>> from privstats.privacy.randomness import as_source
    >>> exact_exponential_counts(np.array([0, 5, 0]), 0.5, 1.0, as_source(0))
    1
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size and int(counts.max()) >= 1 << 53:
        raise ValueError("counts must be below 2^53")
    return _exact_rank_sample(counts.astype(np.float64), lambda j: int(counts[j]), q, epsilon, src)


def _exact_rank_sample(lens: np.ndarray, length_of, q: float, epsilon: float, src) -> int:
    """Index j drawn exactly ∝ length_j · β^(−|j − t|), t = floor(q n), n = lens.size − 1.

    Sensitivity 1 under replace-one and add/remove; β a rational <= e^(ε/2).  ``lens`` are the
    lengths as floats (exact dyadic values), ``length_of(j)`` the exact one.  Sampling is exact
    rejection with integer arithmetic only: proposal ∝ integer upper bounds U_j >= len_j 2^(S − k_j)
    (k_j <= |j − t| log2 β), acceptance probability len_j 2^S β^(−|j − t|) / U_j >= about 1/2 as an
    exact rational Bernoulli.
    """
    n = lens.size - 1
    t = math.floor(Fraction(float(q)) * n)
    beta = _base_below_exp(epsilon / 2.0)
    u = np.abs(np.arange(lens.size, dtype=np.int64) - t)
    log2b = math.log2(float(beta))
    k = np.maximum(np.floor(u * log2b * (1 - 1e-9) - 1e-9), 0).astype(np.int64)
    with np.errstate(divide="ignore"):
        top = np.max(np.where(lens > 0, np.log2(np.where(lens > 0, lens, 1.0)) - k, -np.inf))
    if not np.isfinite(top):
        return int(_randbelow(lens.size, src))  # every interval has length 0: any index
    S = min(40, 61 - (lens.size + 1).bit_length()) - math.ceil(top)  # sum of U fits in int64
    w = np.ldexp(lens, (S - k).astype(np.int64))
    U = np.ceil(w).astype(np.int64) + 1  # >= exact len_j 2^(S - k_j) (float error < 2^-13)
    cum = np.cumsum(U)
    total = int(cum[-1])
    while True:
        j = int(np.searchsorted(cum, _randbelow(total, src), side="right"))
        length = Fraction(length_of(j))
        if length == 0:
            continue
        uj = int(u[j])
        num = length.numerator * (beta.denominator**uj) * (1 << S if S >= 0 else 1)
        den = length.denominator * (beta.numerator**uj) * int(U[j]) * (1 << -S if S < 0 else 1)
        if num > den:  # cannot happen: the proposal bounds the target
            raise AssertionError("exact exponential mechanism: proposal below target")
        if _randbelow(den, src) < num:
            return j


def joint_sensitivity(qs: np.ndarray, neighbours: str) -> float:
    """Sensitivity of the joint utility (GJK21): 2 under replace-one; add/remove depends on the gaps."""
    if neighbours == "replace":
        return 2.0
    gaps = np.diff(np.concatenate([[0.0], qs, [1.0]]))
    return 2.0 * (1.0 - float(gaps.min()))


def _log_cumsum(a: np.ndarray) -> np.ndarray:
    """log of the running sums of exp(a) (positive terms only: relative error ~ size · ulp · |a|)."""
    return np.logaddexp.accumulate(a) if a.size else a


def _log_window_sums(y: np.ndarray, width: int) -> np.ndarray:
    """W[a] = log Σ_{i=a}^{a+width−1} exp(y[i]) for every a (terms past the end count as 0), by dyadic blocks.

    Only additions of positive terms (no differences of running sums), so every entry keeps a
    small *relative* error however small it is.
    """
    n = y.size
    out = np.full(n, -np.inf)
    if width <= 0 or n == 0:
        return out
    block = np.concatenate([y, np.full(n + 1, -np.inf)])  # block[a] = window [a, a + 2^l)
    offset = np.zeros(n, dtype=np.int64)
    level = 0
    while (1 << level) <= width:
        if width >> level & 1:
            # windows take the low bits first: add the block of length 2^level starting at a + offset
            out = np.logaddexp(out, block[np.arange(n) + offset])
            offset += 1 << level
        nxt = np.full(block.size, -np.inf)
        half = 1 << level
        nxt[: block.size - half] = np.logaddexp(block[: block.size - half], block[half:])
        block = nxt
        level += 1
    return out


def _log_gap_convolution(logx: np.ndarray, scale: float, target: float) -> np.ndarray:
    """y[i] = log Σ_{i' < i} exp(logx[i']) · exp(−scale · |i − i' − target|), for every i.

    Split at g = i − i' ≤ T0 = floor(target) (weight e^{−scale (T − g)}: a window sum) and g > T0
    (weight e^{−scale (g − T)}: a discounted running sum); both are sums of positive terms
    computed in the log domain, so each y[i] has a small relative error (no FFT, whose error is
    relative to the largest entry and can swamp the small ones).
    """
    K = logx.size
    i = np.arange(K, dtype=np.float64)
    out = np.full(K, -np.inf)
    if K == 0 or not np.isfinite(logx).any():
        return out
    T0 = min(math.floor(target), K)
    # far part, g > T0: e^{scale (T − i)} Σ_{i' <= i − T0 − 1} x[i'] e^{scale i'}
    far_run = _log_cumsum(logx + scale * i)
    idx = np.arange(K) - T0 - 1
    ok = idx >= 0
    out[ok] = scale * (target - i[ok]) + far_run[idx[ok]]
    # near part, 1 <= g <= T0: e^{scale (i − T)} Σ_{i' in [max(0, i − T0), i − 1]} x[i'] e^{−scale i'}
    if T0 >= 1:
        y = logx - scale * i
        full = _log_window_sums(y, T0)  # windows of length T0 starting at a = i − T0
        pre = _log_cumsum(y)  # windows [0, i − 1] for i <= T0
        near = np.full(K, -np.inf)
        start = np.arange(K) - T0
        has_full = start >= 0
        near[has_full] = full[start[has_full]]
        partial = (~has_full) & (np.arange(K) >= 1)
        near[partial] = pre[np.arange(K)[partial] - 1]
        out = np.logaddexp(out, scale * (i - target) + near)
    return out


def _sample_float_weights(logw: np.ndarray, src) -> int:
    """An index drawn *exactly* ∝ exp(logw − max) as computed in float (dyadic rationals).

    Integer proposal U_t >= W_t 2^S (largest U_t ~ 2^40, their sum in int64), then acceptance
    with the exact rational probability W_t 2^S / U_t: no inverse-CDF rounding, so indices of
    tiny weight keep their (tiny) probabilities exactly.
    """
    top = float(np.max(logw))
    if not np.isfinite(top):
        raise ValueError("no output has positive weight")
    W = np.exp(logw - top)  # in [0, 1], exact dyadic rationals
    S = min(40, 61 - (W.size + 1).bit_length())
    U = np.floor(np.ldexp(W, S)).astype(np.int64) + 1
    cum = np.cumsum(U)
    total = int(cum[-1])
    while True:
        t = int(np.searchsorted(cum, _randbelow(total, src), side="right"))
        w = Fraction(float(W[t])) * (1 << S)
        if _randbelow(int(U[t]) * w.denominator, src) < w.numerator:
            return t


#: relative error allowed for the joint mechanism's float weights: its ε is reduced by 8x this
JOINT_WEIGHT_ERROR = 1e-6


def joint_exponential_quantiles(
    sorted_x: np.ndarray, qs, *, epsilon: float, bounds, rng: RNGLike = None, neighbours: str = "replace"
) -> np.ndarray:
    """JointExp: one exponential mechanism over all non-decreasing m-tuples of outputs.

    Utility -sum_j |#(points between o_{j-1} and o_j) - (q_j - q_{j-1}) n|.  The
    normaliser and sampler come from a forward recursion over quantiles and
    intervals (:func:`_log_gap_convolution`, O(m n log n), sums of positive terms only, so every
    weight keeps a small relative error), with the number of ways k outputs share the c public grid
    points of one rank, C(c + k − 1, k), carried by a repeat counter.  The outputs are points of
    the public :class:`OutputGrid`.  Each backward step draws its index exactly from the
    computed weights (:func:`_sample_float_weights`, integer arithmetic on the source's bits);
    the weights' relative error (< :data:`JOINT_WEIGHT_ERROR`, far above the ~1e-9 measured at
    n = 5·10^4) is paid for by running at ε − 8 m · JOINT_WEIGHT_ERROR.
    """
    src = as_source(rng)
    qs = np.asarray(qs, dtype=np.float64)
    m = qs.size
    n = sorted_x.size
    grid = OutputGrid(bounds)
    edges, counts = grid.rank_counts(np.asarray(sorted_x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        logc = np.log(counts.astype(np.float64))
    K = n + 1  # ranks, index = #points below
    eps_run = epsilon - 8 * m * JOINT_WEIGHT_ERROR  # pays for the float weights' relative error
    if eps_run <= 0:
        raise ValueError(f"epsilon={epsilon} is too small for the joint mechanism; use method='independent'")
    scale = eps_run / (2.0 * joint_sensitivity(qs, neighbours))
    targets = np.diff(np.concatenate([[0.0], qs, [1.0]])) * n  # m + 1 gap targets
    gaps = np.arange(K)

    def logphi(j):  # utility factor of gap j as a function of the gap size
        return -scale * np.abs(gaps - targets[j])

    # alpha[j][k, i]: mass of quantiles 0..j with quantile j in interval i, preceded by k in the same interval
    alpha = [(logphi(0) + logc)[None, :]]  # alpha[j] has rows k = 0..j
    for j in range(1, m):
        prev = alpha[-1]
        total_prev = _logsumexp_rows(prev)
        lp = logphi(j)
        aj = np.empty((j + 1, K))
        aj[0] = logc + _log_gap_convolution(total_prev, scale, float(targets[j]))
        aj[0, 0] = -np.inf
        # r + 1 outputs among the c grid points of one rank: C(c + r, r + 1) multisets, (c + r)/(r + 1) times r's
        r = np.arange(1, j + 1)[:, None]
        aj[1:] = prev + lp[0] + np.log(counts[None, :] + r) - np.log(r + 1)
        alpha.append(aj)

    out = np.empty(m, dtype=np.int64)
    j, last = m - 1, K - 1
    tail = logphi(m)[::-1]  # gap from interval i to the end: n - i points
    logw = alpha[j] + tail[None, :]
    first = True
    while j >= 0:
        if not first:
            lp = logphi(j + 1)
            logw = alpha[j][:, :last] + lp[last - np.arange(last)][None, :]
        flat = _sample_float_weights(logw.ravel(), src)
        k, i = divmod(flat, logw.shape[1])
        out[j - k : j + 1] = edges[i] + _uniform_multiset(int(counts[i]), k + 1, src)
        j -= k + 1
        last = i
        first = False
    return grid.points(out)


def _uniform_multiset(c: int, size: int, src) -> np.ndarray:
    """A uniformly random non-decreasing ``size``-tuple of {0..c−1}, exactly: a uniform ``size``-subset of
    {0..c+size−2} (Floyd's algorithm), sorted, minus 0..size−1 (stars and bars)."""
    chosen: set[int] = set()
    for top in range(c - 1, c + size - 1):
        v = _randbelow(top + 1, src)
        chosen.add(top if v in chosen else v)
    return np.array(sorted(chosen), dtype=np.int64) - np.arange(size)
