"""Shared pieces of the shuffle accountants: binomial tails, the clone pair's divergence, ε search.

A lower module: :mod:`~privstats.privacy.amplification`, :mod:`~privstats.privacy.variation_ratio` and
:mod:`~privstats.privacy.krr_shuffle` import it and it imports none of them.

The clone pair (Feldman, McMillan and Talwar) is P = A + Bern(1 − α) against Q = A + Bern(α) with
A ~ Bin(C, ½), C ~ Bin(n_clones, clone_prob).  Its δ(ε) is a sum over C of a conditional divergence
D(C) that is a difference of two binomial CDFs.  D is non-increasing in C (one more clone is a fair coin
the adversary could add itself: a post-processing), so grouping the values of C into bins and charging
each bin D at its smallest C is an upper bound; bins are used only when C ranges over more than
:data:`EXACT_TERMS` values and are narrow enough (a fraction 1e-3 of C) that the bound moves by about a
percent.  The bins cover 0..n_clones, so no mass is dropped.

>>> round(pair_delta(0.5, 0.9, 0, 0.0), 6)   # no clones: randomized response, (α − e^ε(1−α))
0.735128
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EXACT_TERMS",
    "bin_edges",
    "binom_cdf",
    "binom_sf",
    "edge_weights",
    "pair_delta",
    "smallest_eps",
    "window",
]

F = NDArray[np.float64]

#: the clone count is summed value by value up to this many values, in bins beyond
EXACT_TERMS = 4000
_TAU = 1e-3  # a bin of C spans at most this fraction of C


def binom_sf(t: F, m: F | float, p: float) -> F:
    """P(Bin(m, p) >= t) for integer-valued t and m >= 0 (arrays broadcast).

    scipy.stats' binomial (Boost's incomplete beta): ``scipy.special.bdtr`` loses ~1e-9 absolutely
    at m ~ 1e6 and ~0.1 at 1e8, far too much for differences of tails.
    """
    from scipy import stats  # imported here: scipy.stats is slow to import and `import privstats` is not

    return np.asarray(stats.binom.sf(t - 1, m, p), dtype=np.float64)


def binom_cdf(t: F, m: F | float, p: float) -> F:
    """P(Bin(m, p) <= t) for integer-valued t and m >= 0."""
    from scipy import stats

    return np.asarray(stats.binom.cdf(t, m, p), dtype=np.float64)


def edge_weights(edges: F, m: F | float, p: float) -> tuple[F, F]:
    """For the bins [e_i, e_{i+1} − 1] of X ~ Bin(m, p): P(X in bin) and a lower bound on E[(X − e_i) 1{X in bin}].

    Each probability is a difference of lower tails below the mean and of upper tails above it, so
    neither loses precision to cancellation.  ``edges`` may be 2-D (one row per m).
    """
    lo, hi = edges[..., :-1], edges[..., 1:] - 1
    upper = np.asarray(lo > np.multiply(m, p))
    below, above = binom_cdf(edges - 1, m, p), binom_sf(edges, m, p)
    prob = np.where(upper, above[..., :-1] - above[..., 1:], below[..., 1:] - below[..., :-1])
    m1 = np.maximum(np.subtract(m, 1), 0)  # E[X 1{X in [a, b]}] = m p P(Bin(m−1, p) in [a−1, b−1])
    below1, above1 = binom_cdf(edges - 2, m1, p), binom_sf(edges - 1, m1, p)
    part = np.where(upper, above1[..., :-1] - above1[..., 1:], below1[..., 1:] - below1[..., :-1])
    prob = np.maximum(prob, 0.0)
    # the rounding of the two terms (relative ~1e-14) is taken off, so a chord weight never overshoots
    excess = np.multiply(m, p) * np.maximum(part, 0.0) - lo * prob - 1e-12 * (lo + hi + 1) * prob
    return prob, np.where(hi > lo, np.clip(excess, 0.0, (hi - lo) * prob), 0.0)


def bin_edges(lo: int, hi: int, width: int, top: int) -> F:
    """Edges 0 = e_0 < ... < e_B = top + 1, of width ``width`` on [lo, hi]; bin j is [e_j, e_{j+1} − 1]."""
    inner = np.arange(lo, hi + 1, max(1, width), dtype=np.int64)
    edges = np.unique(np.concatenate([[0], inner, [hi + 1, top + 1]]).clip(0, top + 1))
    return edges.astype(np.float64)


def window(mean: float, sd: float, top: int, z: float = 12.0) -> tuple[int, int]:
    """[mean − (z sd + 30), mean + (z sd + 30)] within [0, top]: where the bins are narrow."""
    half = z * sd + 30.0
    return max(0, int(mean - half)), min(top, math.ceil(mean + half))


def pair_delta(eps: float, alpha: float, n_clones: int, clone_prob: float) -> float:
    """δ(ε) (an upper bound, exact when C takes few values) of the clone pair described in the module docstring.

    P/Q at A = a is (α + (1−α)r)/((1−α) + αr) with r = a/(C+1−a), decreasing in a for
    α > ½, so {P > e^ε Q} = {a < β(C+1)} and each conditional divergence is a difference
    of two binomial CDFs.  The reverse direction is the same by the symmetry a ↦ C+1−a.
    """
    if alpha <= 0.5:
        return 0.0
    e = math.exp(eps)
    num = alpha - e * (1 - alpha)
    if num <= 0:
        return 0.0
    r_star = num / (e * alpha - (1 - alpha))
    beta = r_star / (1 + r_star)
    if n_clones == 0 or clone_prob == 0:
        edges = np.array([0.0, 1.0])
        weight = np.ones(1)
    else:
        mean = n_clones * clone_prob
        lo, hi = window(mean, math.sqrt(mean * (1 - clone_prob)), n_clones, z=14.0)
        width = 1 if hi - lo < EXACT_TERMS else int(_TAU * max(1.0, mean - 5 * math.sqrt(mean)))
        edges = bin_edges(lo, hi, width, n_clones)
        weight, _ = edge_weights(edges, float(n_clones), clone_prob)
    c = edges[:-1]  # each bin is charged D at its smallest C
    a_max = np.ceil(beta * (c + 1)) - 1  # largest a with a < β(C+1)
    f1 = binom_cdf(a_max, c, 0.5)
    f0 = binom_cdf(a_max - 1, c, 0.5)
    d = alpha * f1 + (1 - alpha) * f0 - e * ((1 - alpha) * f1 + alpha * f0)
    return min(1.0, float(np.sum(weight * np.maximum(d, 0.0))) * (1 + 1e-12))


def smallest_eps(
    delta_of_eps: Callable[[float], float], delta: float, hi: float, rtol: float = 1e-7
) -> float:
    """Smallest ε in [0, hi] with δ(ε) ≤ ``delta`` (δ non-increasing; hi if none smaller), to ``rtol``.

    Only ε whose δ(ε) was computed and found ≤ ``delta`` are returned, so the answer is a valid claim
    whatever the rounding.  False position on log δ, with a bisection step whenever it stalls.
    """
    d0 = delta_of_eps(0.0)
    if d0 <= delta:
        return 0.0
    lo, hi_ = 0.0, hi
    g_lo, g_hi = math.log(d0 / delta), -math.inf  # log δ(ε) − log δ at the ends (-inf: unknown or 0)
    stalls = 0
    while hi_ - lo > rtol * max(1.0, hi_):
        if math.isfinite(g_lo) and math.isfinite(g_hi) and stalls < 2:
            mid = hi_ - g_hi * (hi_ - lo) / (g_hi - g_lo)
            span = hi_ - lo
            mid = min(max(mid, lo + 0.02 * span), hi_ - 0.02 * span)
        else:
            mid = 0.5 * (lo + hi_)
        d = delta_of_eps(mid)
        g = math.log(d / delta) if d > 0 else -math.inf
        old = hi_ - lo
        if d <= delta:
            hi_, g_hi = mid, g
        else:
            lo, g_lo = mid, g
        stalls = stalls + 1 if hi_ - lo > 0.5 * old else 0
    return hi_
