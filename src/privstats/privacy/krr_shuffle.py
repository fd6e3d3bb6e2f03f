"""Shuffled k-ary randomized response: an upper bound on δ(ε) that is never below the exact curve.

The n users run k-RR with local ε0: each reports its value w.p. p = e^ε0/(e^ε0 + k − 1) and any other
given value w.p. q = 1/(e^ε0 + k − 1).  Equivalently every report is a *blanket* draw (uniform on
[k]) w.p. γ = kq, else the true value.  Neighbouring datasets differ in the victim's value, a or b.

**The bound.** Reveal to the adversary which of the other n − 1 users did *not* draw from the blanket
(and so their values) — a post-processing in reverse, so the divergence can only grow.  What is left is
the victim's report mixed into M ~ Bin(n − 1, γ) uniform draws, M known.  Hockey-stick divergence is
jointly convex, so the true δ(ε) is at most the average over M of these conditional divergences, for
*every* choice of the other users' values.  Summing the multinomial likelihoods in closed form (a draw
from Mult(M, U) seen with the victim's report at j has weight proportional to the count h_j) gives

    δ(ε) ≤ E[(α_a X_a + α_b X_b + α_r X_r)_+] / (nq),
    (X_a, X_b, X_r, ·) ~ Multinomial(n; q, q, (k − 2)q, 1 − kq),
    α_a = p − e^ε q,  α_b = q − e^ε p,  α_r = (1 − e^ε) q,

the same for both directions (swap a and b).  With S = X_a + X_b, U = 2X_a − S and
d = (p − q)(1 + e^ε), κ = (e^ε − 1)(p + q)/2, the integrand is (d/2)U − κS − |α_r|X_r, where
S ~ Bin(n, 2q), X_r | S ~ Bin(n − S, (k − 2)q/(1 − 2q)) and U | S is S centred fair coin flips.

**Computing it (never below).** The inner expectation over U is closed form (a partial binomial mean,
two binomial tail probabilities).  When S or X_r ranges over more values than :data:`EXACT_CELLS`
allows, they are grouped into bins and each bin is bounded from above by three facts:
(i) f(s, c) = E[((d/2)U_s − c)_+] increases with s (adding a fair ±1 step to U is a mean-zero
perturbation of a convex function), so a bin uses U at its largest s; (ii) X_r | S = s is
stochastically decreasing in s and the integrand decreases in X_r, so a bin uses X_r's law at its
largest s; (iii) the result is convex in κs and in |α_r|X_r (f is convex in c), so within a bin it
lies below the chord between the bin's end values, whose weights are exact binomial partial means.
Every bin of S and X_r together covers 0..n, so no mass is dropped.  The special functions
(scipy's binomial tails, relative accuracy ~1e-14) are the only rounding; the sum is inflated by a
relative 1e-9 for it.  With ``exact=True`` (or when the ranges are small, as for every n an exact
enumeration can reach) each bin is a single value and the sum is the blanket divergence itself.

How close it is: for k ≥ 3 it is within 6% in ε of the exact worst case over the other users'
values in every case enumerated (the largest gaps, 1.05–1.06x, at n ≈ 4–24 and δ ≈ 1e-2–1e-4, e.g.
1.0585 at k = 4, n = 24, ε0 = 2, δ = 1e-3; a concrete pair of datasets puts it within 2% at
n ≥ 10^4).  Where the exact curve is cheap to enumerate
(:func:`~privstats.privacy.krr_exact.exact_feasible`: n ≤ 40 for k = 3, 20 for k = 4, 14 for
k = 5, 9 for k = 8, 5 for k = 16) it is computed (:func:`~privstats.privacy.krr_exact.krr_small_exact_delta`) and
the smaller value used, so there the curve is exact.  For k = 2 revealing M costs more (the reports
of non-blanket users fall on a or b: 1.1–2x in ε), so for n ≤ :data:`BINARY_EXACT_MAX` the exact
worst case (:func:`~privstats.privacy.binary_shuffle.binary_rr_exact_delta`) is used instead, and
up to n = :data:`~privstats.privacy.binary_shuffle.MINORITY_MAX` the smaller of this bound and the
minority-coins bound (:func:`~privstats.privacy.binary_shuffle.binary_minority_delta`, <= 1.03x).

>>> d = krr_shuffle_delta(0.5, 3.0, 10_000, 16)
>>> bool(0 < d < 1e-6)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from privstats.privacy.binary_shuffle import MINORITY_MAX, binary_minority_delta, binary_rr_exact_delta
from privstats.privacy.clone_pairs import bin_edges, binom_sf, edge_weights, window
from privstats.privacy.krr_exact import exact_feasible, krr_small_exact_delta

__all__ = ["BINARY_EXACT_MAX", "EXACT_CELLS", "binary_rr_exact_delta", "krr_shuffle_delta"]

#: for k = 2 and n up to this, the exact worst case over the other users is computed instead (see
#: :func:`binary_rr_exact_delta`)
BINARY_EXACT_MAX = 5000
#: grids up to this many (S, X_r) cells are summed value by value (no binning)
EXACT_CELLS = 20_000
_TAU_U = 1e-3  # a bin of S spans at most this fraction of its s (U's spread grows by < TAU_U/2)
_ETA_C = 0.01  # a bin moves the threshold by at most this fraction of the standard deviation of (d/2)U
_ETA_D = 0.25  # ... and by at most this many lattice steps d of (d/2)U
_MAX_BINS = 1500  # at most this many bins of S (and of X_r per run) in the window
_SLACK = 1e-9
_R_GROUPS = 16  # S-bins share X_r's law in this many runs

F = NDArray[np.float64]


def _excess(s: F, c: F, d: float) -> F:
    """E[((d/2) U − c)_+] with U = 2A − s, A ~ Bin(s, 1/2).

    With t = c/d + s/2 and T the smallest integer above t it is d (s/2 P(B ≥ T−1) − t P(A ≥ T)),
    B ~ Bin(s − 1, 1/2), and P(A ≥ T) = P(B ≥ T − 1) − P(B = T − 1)/2: one tail and one pmf.
    """
    from scipy import stats

    t = c / d + s / 2
    big_t = np.floor(t) + 1
    s1 = np.maximum(s - 1, 0)
    tail = binom_sf(big_t - 1, s1, 0.5)
    pmf = np.asarray(stats.binom.pmf(big_t - 1, s1, 0.5), dtype=np.float64)  # Boost: accurate in the tails
    val = np.where(s > 0, (s / 2 - t) * tail + t * pmf / 2, np.maximum(-t, 0.0))
    return d * np.maximum(val, 0.0)


def krr_shuffle_delta(eps: float, epsilon0: float, n: int, k: int, *, exact: bool = False) -> float:
    """Upper bound on δ(ε) of n shuffled k-RR reports at local ε0 (replace-one neighbours, n public).

    ``exact=True`` sums every value (no bins): the blanket divergence itself, up to rounding (and, for
    k = 2, without the exact binary computation).

    >>> krr_shuffle_delta(2.0, 2.0, 100, 4)
    0.0
    """
    if not 0 <= eps < epsilon0:
        return 0.0 if eps >= epsilon0 else 1.0
    if k == 2 and n <= BINARY_EXACT_MAX and not exact:
        return binary_rr_exact_delta(eps, epsilon0, n)  # the exact curve, rounded up
    if k > 2 and not exact and exact_feasible(n, k):
        return min(_blanket_delta(eps, epsilon0, n, k, True), krr_small_exact_delta(eps, epsilon0, n, k))
    if k == 2 and not exact and n <= MINORITY_MAX:
        return min(_blanket_delta(eps, epsilon0, n, 2, False), binary_minority_delta(eps, epsilon0, n))
    return _blanket_delta(eps, epsilon0, n, k, exact)


def _blanket_delta(eps: float, epsilon0: float, n: int, k: int, exact: bool) -> float:
    """The blanket pair's bound of the module docstring (``exact``: no bins); 0 <= ε < ε0."""
    t0 = math.exp(-epsilon0)
    q = t0 / (1 + (k - 1) * t0)
    p = 1 / (1 + (k - 1) * t0)
    e = math.exp(eps)
    if q <= 0:  # e^ε0 overflows: the report is the value
        return 1.0
    if p - e * q <= 0:
        return 0.0
    c = _Coeffs(n, q, (k - 2) * q / (1 - 2 * q), (p - q) * (1 + e), (e - 1) * (p + q) / 2, (e - 1) * q)
    s_lo, s_hi = window(2 * n * q, math.sqrt(2 * n * q * (1 - 2 * q)), n)
    sd_r = math.sqrt(n * c.rho * (1 - c.rho))
    r_span = window(c.rho * (n - s_hi), sd_r, n)[0], window(c.rho * (n - s_lo), sd_r, n)[1]
    fine = exact or (s_hi - s_lo + 1) * (r_span[1] - r_span[0] + 1) <= EXACT_CELLS
    s_edges = bin_edges(s_lo, s_hi, 1, n) if fine else _s_edges(s_lo, s_hi, c)
    total = _sum_cells(s_edges, r_span, c, s_edges.size if exact else _R_GROUPS, fine)
    return min(1.0, total / (n * q) * (1 + _SLACK))


@dataclass(frozen=True)
class _Coeffs:
    """n, q, ρ = (k−2)q/(1−2q) and the integrand (d/2)U − κS − ar·X_r."""

    n: int
    q: float
    rho: float
    d: float
    kappa: float
    ar: float

    def width(self, s: float, coef: float) -> int:
        """Widest bin (at s) moving coef·(bin) by at most _ETA_C standard deviations of (d/2)U_s and at
        most _ETA_D lattice steps d of it (where U takes few values its tail decays fast)."""
        sd_u = self.d / 2 * math.sqrt(max(s, 1.0))
        return max(1, int(min(_ETA_C * sd_u, _ETA_D * self.d) / coef)) if coef > 0 else self.n + 1


def _s_edges(lo: int, hi: int, c: _Coeffs) -> F:
    """S-bin edges on [lo, hi], each bin narrow for its own s (U's spread and the chord in κS)."""
    edges = [0.0]
    s = lo
    floor = math.ceil((hi - lo + 1) / _MAX_BINS)  # far in the tail (δ tiny) coarser bins are enough
    while s <= hi:
        edges.append(float(s))
        s += max(floor, min(int(_TAU_U * s), c.width(s, c.kappa)))
    edges.append(hi + 1.0)
    edges.append(c.n + 1.0)
    return np.unique(np.clip(edges, 0, c.n + 1))


def _sum_cells(s_edges: F, r_span: tuple[int, int], c: _Coeffs, groups: int, fine: bool) -> float:
    """Σ over S-bins of the chord bound described in the module docstring."""
    p_s, ex_s = edge_weights(s_edges, np.float64(c.n), 2 * c.q)
    s_a, s_b = s_edges[:-1], np.minimum(s_edges[1:] - 1, c.n)  # S-bin j is [s_a, s_b]
    keep = p_s > 0
    s_a, s_b, p_s, ex_s = s_a[keep], s_b[keep], p_s[keep], ex_s[keep]
    group = np.minimum(np.arange(s_a.size) * groups // max(s_a.size, 1), groups - 1)
    total = 0.0
    for g in np.unique(group):
        # X_r | S = s ~ Bin(n − s, ρ) is stochastically decreasing in s: a run of S-bins uses the law at
        # its largest s, with X_r-bins as narrow as its smallest s needs
        rows = group == g
        m = c.n - float(s_b[rows].max())
        if c.rho > 0:
            floor = math.ceil((r_span[1] - r_span[0] + 1) / _MAX_BINS)
            wr = 1 if fine else max(floor, c.width(float(s_a[rows].min()), c.ar))
            r_edges = bin_edges(r_span[0], r_span[1], wr, c.n)
            p_r, ex_r = edge_weights(r_edges[None, :], m, c.rho)
        else:  # k = 2: no third symbol
            r_edges, p_r, ex_r = np.array([0.0, c.n + 1.0]), np.ones((1, 1)), np.zeros((1, 1))
        total += _group_sum(s_a[rows], s_b[rows], p_s[rows], ex_s[rows], r_edges, p_r, ex_r, c)
    return total


def _group_sum(s_a: F, s_b: F, p_s: F, ex_s: F, r_edges: F, p_r: F, ex_r: F, c: _Coeffs) -> float:
    width_r = r_edges[None, 1:] - r_edges[None, :-1]

    def g(rows: NDArray[np.bool_], c0: F) -> F:  # chord bound on E_{X_r}[f(s_b, c0 + ar X_r)] per S-bin
        f_at = _excess(s_b[rows, None], c0[rows, None] + c.ar * r_edges[None, :], c.d)
        slope = (f_at[:, 1:] - f_at[:, :-1]) / width_r
        return np.asarray(np.sum(p_r * f_at[:, :-1] + ex_r * slope, axis=1), dtype=np.float64)

    g_a = g(np.ones(s_a.size, dtype=bool), c.kappa * s_a)
    wide = s_b > s_a
    total = float(np.sum(p_s * g_a))
    if np.any(wide):
        g_b = g(wide, c.kappa * s_b)
        total += float(np.sum(ex_s[wide] * (g_b - g_a[wide]) / (s_b[wide] - s_a[wide])))
    return total
