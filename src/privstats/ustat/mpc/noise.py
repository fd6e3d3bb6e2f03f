"""Public noise plans: the in-circuit coins' thresholds and their exact privacy / variance accounting.

Computed identically by the aggregator and both parties from (mechanism, ε per pair, kernel spec).
Every coin is ``[u < T]`` for ``u`` the k-bit XOR of both parties' random bits (uniform if either
party is honest, unknown to both), evaluated in boolean sharing by a tree of one-bit ANDs
(:mod:`.bits`); all coins of a job run side by side, one AND call per tree level.

>>> rr_plan(1.0).n_random, rr_plan(1.0).n_bits, laplace_plan(1.0, 2).n_random
(0, 11, 0)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from privstats.validation import check_positive_int

from .bits import coin_bits, coin_cost
from .kernels import KernelSpec

__all__ = [
    "MECHANISMS",
    "RING",
    "NoisePlan",
    "cycle_log_pmf",
    "decode_low",
    "laplace_plan",
    "make_plan",
    "rr_plan",
    "rr_variance_factor",
    "shares_plan",
]

RING = 2**64
RR_MAX_BITS = 62  # precision cap of a coin
RR_VAR_LOSS = 5e-3  # randomized response: debiased variance within 0.5% of the exact-ε variance
LAPLACE_VAR_LOSS = 1e-2  # Laplace: realised variance within 1% of the exact sampler's (see laplace_plan)
WRAP_MSE = 1e-3  # Laplace: decoding errors of the wrapped release add at most 0.1% of the variance
WRAP_P = 1e-6  # Laplace: J from P(decoding error) ≤ 10^-6 at the ideal law (≤ 2·10^-6 realised)
MECHANISMS = ("rr", "laplace", "laplace-shares", "none")


@dataclass(frozen=True)
class NoisePlan:
    """Public coins of the in-circuit randomness and the realised privacy / variance accounting."""

    mechanism: str
    coins: tuple[tuple[int, int], ...] = ()  # (T, k): the coin [u < T] on k joint random bits
    epsilon: float = 0.0  # realised per-pair ε (≤ requested)
    delta: float = 0.0  # realised per-pair δ (0: every mechanism here is pure)
    variance: float = 0.0  # noise variance (an upper bound: wrap errors) in grid units² (Laplace)
    keep: float = 1.0  # rr: realised keep probability
    scale: Fraction | None = None  # laplace-shares: each party's discrete Laplace scale (grid units)
    variant: str = ""  # laplace: "zero" (S·nz·(1+G)) or "half" (G ⊕ S, centred at −½)
    wrap_bits: int = 0  # laplace: the release is (kernel + noise) mod 2^wrap_bits
    offset: float = 0.0  # laplace: E[noise] (−½ for the "half" variant), removed by the aggregator
    thresholds: list[int] = field(default_factory=list)  # the coins' T (rr: [T])

    @property
    def coin_bits(self) -> int:
        """rr: the coin's precision k (P(flip) = T/2^k)."""
        return self.coins[0][1] if self.mechanism == "rr" else 0

    @property
    def n_random(self) -> int:
        """int64 words per pair each party inputs: its own noise share (laplace-shares)."""
        return int(self.scale is not None)

    @property
    def n_bits(self) -> int:
        """Random bits per pair each party inputs (boolean sharing): each coin's u from T's lowest set
        bit up, and the Laplace sign."""
        return sum(coin_bits(T, k) for T, k in self.coins) + (self.mechanism == "laplace")

    def cycle_pmf(self) -> np.ndarray:
        """laplace: the realised law P(noise ≡ z mod 2^wrap_bits), z = 0..2^wrap_bits − 1, exact for the
        rounded thresholds (:func:`cycle_log_pmf`); the simulated backend draws from it."""
        if self.mechanism != "laplace":
            raise ValueError("only the joint Laplace plan has a wrapped noise law")
        pmf = np.exp(cycle_log_pmf(self.coins, self.variant))
        return pmf / pmf.sum()

    @property
    def ands(self) -> int:
        """One-bit ANDs per pair of the coins' trees (the Laplace "zero" variant adds J + 1)."""
        return sum(coin_cost(T, k)[0] for T, k in self.coins)


def rr_variance_factor(epsilon: float) -> float:
    """Variance of one debiased randomized-response bit at ε (keep = e^ε/(1+e^ε)): e^ε/(e^ε − 1)^2."""
    e = math.exp(epsilon)
    return e / (e - 1.0) ** 2


def rr_plan(epsilon: float) -> NoisePlan:
    """Randomized response: flip with T/2^k ≥ 1/(1+e^ε) (T = ⌈2^k/(1+e^ε)⌉), so the realised ε' ≤ ε.

    The flip is ``[u < T]`` for ``u`` the k-bit XOR of both parties' random bits (uniform if either
    party is honest, unknown to both), evaluated in boolean sharing by a tree of one-bit ANDs
    (⌈log2 k⌉ rounds, about 2k ANDs) and no arithmetic comparison.  Rounding T up only adds flips
    (privacy is exact: ε' ≤ ε); it costs utility, so ``k`` is the smallest precision whose debiased
    variance ``e^ε'/(e^ε' − 1)^2`` is within ``RR_VAR_LOSS`` (0.5%) of the exact-ε variance (11 bits
    at ε = 1: ε' = 0.99948, variance +0.11%, 16 ANDs in four rounds).

    >>> plan = rr_plan(1.0)
    >>> plan.epsilon <= 1.0, rr_variance_factor(plan.epsilon) <= 1.005 * rr_variance_factor(1.0), plan.coin_bits
    (True, True, 11)
    """
    flip = Fraction(1) / (1 + Fraction(math.exp(epsilon) * (1 - 1e-12)))  # margin for exp's rounding
    target = (1.0 + RR_VAR_LOSS) * rr_variance_factor(epsilon)
    for k in range(1, RR_MAX_BITS + 1):
        T = -((-flip.numerator * 2**k) // flip.denominator)  # ceil
        T = min(max(T, 1), 2 ** (k - 1))
        eps_real = math.log(2**k - T) - math.log(T)
        if eps_real > 0 and rr_variance_factor(eps_real) <= target:
            break
    keep = 1.0 - T / 2**k
    return NoisePlan("rr", ((T, k),), epsilon=eps_real, keep=keep, thresholds=[T])


def _ceil_at(x: Fraction, n: int) -> int:
    """The least T with T/2^n ≥ x."""
    return -((-x.numerator * 2**n) // x.denominator)


def _tail(ps: list[float], c: int) -> float:
    """P(G ≥ c) for G = Σ_j 2^j b_j with independent digits P(b_j = 1) = ps[j]."""
    if c <= 0:
        return 1.0
    if c >= 2 ** len(ps):
        return 0.0
    total, same = 0.0, 1.0  # same: P(G's digits above j equal c's)
    for j in reversed(range(len(ps))):
        if (c >> j) & 1:
            same *= ps[j]
        else:
            total += same * ps[j]
            same *= 1.0 - ps[j]
    return total + same


@dataclass(frozen=True)
class _Draft:
    coins: tuple[tuple[int, int], ...]
    variance: float
    ands: int
    steps: tuple[Fraction, ...]  # the realised step ratios (see laplace_plan), each in [q, 1/q]


def _draft(q: Fraction, iq: Fraction, variant: str, units: int, prec: list[int]) -> _Draft | int:
    """The coins at precisions ``prec`` (zero variant: nz first) or the index of the first coin whose
    precision is too coarse for its constraints.

    Each digit's threshold is the least at its precision whose step ratio ``R_j = o_j / Π_{i<j} o_i``
    is at least its floor (rounded up against the realised lower digits: no accumulation).  Floors:
    q = e^{−ε/units} for every step; for units = 2 only windows of two steps must keep e^{−ε} = q², and
    every window of G's steps holds R_0 (the steps alternate R_0, R_k), so digit 0 is rounded to the
    nearest and the others' floor is q²/R_0 (their errors and R_0's cancel to first order).
    """
    pair = units == 2
    digits = prec[1:] if variant == "zero" else prec
    off = len(prec) - len(digits)
    lo, hi = (q * q, iq * iq) if pair else (q, iq)  # a step's (or a pair window's) bounds
    floor, cap = q, iq
    coins, odds, steps, prod = [], [], [], Fraction(1)
    for j, n in enumerate(digits):
        if pair and j == 0:
            T = min(max(round(q / (1 + q) * 2**n), 1), 2**n - 1)
        else:
            target = floor * prod
            T = _ceil_at(target / (1 + target), n)
        if 2**n <= T or not lo <= Fraction(T, 2**n - T) / prod <= min(cap, hi):
            return off + j
        o = Fraction(T, 2**n - T)
        if pair and j == 0:
            floor, cap = lo / o, hi / o
        coins.append((T, n))
        steps.append(o / prod)
        odds.append(o)
        prod *= o
    ps = [float(o / (1 + o)) for o in odds]
    eg = sum(2**j * p for j, p in enumerate(ps))
    vg = sum(4**j * p * (1.0 - p) for j, p in enumerate(ps))
    J = len(ps)
    if variant == "zero":
        pg0 = math.prod(Fraction(1) - o / (1 + o) for o in odds)
        T = _ceil_at(2 * floor / (pg0 + 2 * floor), prec[0])  # ρ₀ = (π/2)·P(G=0)/(1−π) ≥ floor
        pi = Fraction(T, 2 ** prec[0])
        rho = pi / 2 * pg0 / (1 - pi) if 2 ** prec[0] > T else iq * iq * 2
        if not rho <= min(cap, hi):
            return 0
        merge = 2 * steps[0] * (steps[1] if pair and J > 1 else 1)  # the wrap merges ±2^J
        if not 2 * steps[0] <= hi or not merge <= hi:
            return 1 if not 2 * steps[0] <= hi or J == 1 else 2
        coins.insert(0, (T, prec[0]))
        steps = [rho, 2 * steps[0], *steps]
        var = float(pi) * (vg + (1.0 + eg) ** 2)
    else:
        var = vg + (eg + 0.5) ** 2  # |Y + ½| = G + ½
    err = _tail(ps, 2**J - units - 1)  # P(decoding error) ≤ this: errors of ±2^(J+1)
    if pair and (err > 2 * WRAP_P or err * 4 ** (J + 1) > WRAP_MSE * var):  # R_0's freedom: tail too heavy
        qf = float(q)  # refine the coarsest digit above its ideal probability
        heavy = [j for j, p in enumerate(ps) if p * (1.0 + qf ** -(2.0**j)) > 1.001] or list(range(J))
        return off + min(heavy, key=lambda j: digits[j])
    var += err * 4 ** (J + 1)  # their MSE is at most this
    ands = sum(coin_cost(T, k)[0] for T, k in coins) + (J + 1 if variant == "zero" else 0)
    return _Draft(tuple(coins), var, ands, tuple(steps))


def cycle_log_pmf(coins: tuple[tuple[int, int], ...], variant: str) -> np.ndarray:
    """log P(noise ≡ z mod 2^(J+1)), z = 0..2^(J+1) − 1, of the sampler with these coins (the law of
    ``circuit.assemble``: Z = S·nz·(1+G), ±2^J merged, or Y = G ⊕ S)."""
    digits = coins[1:] if variant == "zero" else coins
    J = len(digits)
    g = np.arange(2**J)
    lg = np.zeros(g.size)
    for j, (T, k) in enumerate(digits):
        lg += np.where((g >> j) & 1, math.log(T) - k * math.log(2), math.log1p(-T / 2**k))
    out = np.empty(2 ** (J + 1))
    if variant == "half":
        out[g] = lg + math.log(0.5)
        out[-1 - g] = lg + math.log(0.5)
        return out
    pi = coins[0][0] / 2 ** coins[0][1]
    out[1 + g[:-1]] = out[-1 - g[:-1]] = lg[:-1] + math.log(pi / 2)
    out[0], out[2**J] = math.log1p(-pi), lg[-1] + math.log(pi)
    return out


def decode_low(units: int, wrap_bits: int) -> int:
    """The lowest value of the decoding window: a release ``(K + noise) mod 2^wrap_bits`` is read as the
    one of the 2^wrap_bits integers from here up (the window centred on the kernel range 0..units)."""
    return units // 2 - 2 ** (wrap_bits - 1)


def _loss(log_pmf: np.ndarray, units: int) -> float:
    """max over kernel changes d ≤ units and outputs z on the cycle of |log P(z + d) − log P(z)|."""
    return max(float(np.max(np.abs(np.roll(log_pmf, -d) - log_pmf))) for d in range(1, units + 1))


def _digits(q: float, units: int, ideal: float) -> int:
    """The fewest digits J whose wrap errors' MSE bound is ≤ WRAP_MSE of the ideal variance."""
    for J in range(1, RR_MAX_BITS):
        ps = [1.0 / (1.0 + q ** -(2.0**j)) for j in range(J)]
        err = _tail(ps, 2**J - units - 1)  # bound on P(decoding error)
        if units < 2**J and err <= WRAP_P and err * 4.0 ** (J + 1) <= WRAP_MSE / 2 * ideal:
            return J
    raise ValueError("the Laplace scale is too large for the sampler")  # pragma: no cover


def _optimise(q: Fraction, iq: Fraction, variant: str, units: int, n: int, budget: float) -> _Draft:
    """Coin precisions with few ANDs and a variance within ``budget``: from two starts — the coarsest
    feasible coins refined greedily (the most variance drop per AND), and the least common number of
    extra bits beyond each coin's log2(1/p) — bits are then taken off greedily while the budget
    holds; the cheaper result wins."""
    qf = float(q)
    ideal = [2 * qf / (1 + qf)] if variant == "zero" else []
    ideal += [1.0 / (1.0 + qf ** -(2.0**j)) for j in range(n - len(ideal))]
    need = [max(1, math.ceil(-math.log2(p))) for p in ideal]
    for extra in range(1, RR_MAX_BITS):
        common = [min(k + extra, RR_MAX_BITS) for k in need]
        if _feasible(q, iq, variant, units, common).variance <= budget:
            break
    grown = _grow(q, iq, variant, units, [1] * n, budget)
    results = [_shrink(q, iq, variant, units, prec, budget) for prec in (common, grown)]
    return min(results, key=lambda d: (d.ands, d.variance))


def _moves(q, iq, variant, units, prec: list[int], steps) -> list[tuple[list[int], _Draft]]:
    out = []
    for i in range(len(prec)):
        for step in steps:
            cand = [*prec[:i], prec[i] + step, *prec[i + 1 :]]
            if 1 <= cand[i] <= RR_MAX_BITS and isinstance(d := _draft(q, iq, variant, units, cand), _Draft):
                out.append((cand, d))
    return out


def _grow(q, iq, variant: str, units: int, prec: list[int], budget: float) -> list[int]:
    d = _feasible(q, iq, variant, units, prec)
    while d.variance > budget:
        moves = [
            (c, d2) for c, d2 in _moves(q, iq, variant, units, prec, (1, 2, 3, 4)) if d2.variance < d.variance
        ]
        if not moves:  # no single coin helps (the later coins' rounding moved): refine them all
            prec = [min(p + 1, RR_MAX_BITS) for p in prec]
            d = _feasible(q, iq, variant, units, prec)
            continue
        prec, d = max(moves, key=lambda m: (d.variance - m[1].variance) / max(m[1].ands - d.ands, 0.25))
    return prec


def _shrink(q, iq, variant: str, units: int, prec: list[int], budget: float) -> _Draft:
    d = _feasible(q, iq, variant, units, prec)
    while True:
        moves = [
            (c, d2)
            for c, d2 in _moves(q, iq, variant, units, prec, (-1, -2, -3))
            if d2.variance <= budget and d2.ands < d.ands
        ]
        if not moves:
            return d
        prec, d = max(moves, key=lambda m: (d.ands - m[1].ands) / max(m[1].variance - d.variance, 1e-12))


def _feasible(q: Fraction, iq: Fraction, variant: str, units: int, prec: list[int]) -> _Draft:
    """The draft at ``prec`` (updated in place), each too coarse coin refined until all fit."""
    while not isinstance(d := _draft(q, iq, variant, units, prec), _Draft):
        prec[d] += 1
        if prec[d] > RR_MAX_BITS:  # pragma: no cover - q < 1 is reachable at 62 bits
            raise ValueError("no coin precision reaches the Laplace plan")
    return d


def _dl_variance(q: float) -> float:
    return 2.0 * q / (1.0 - q) ** 2


@functools.lru_cache(maxsize=256)
def laplace_plan(epsilon: float, units: int) -> NoisePlan:
    """Discrete Laplace on the kernel grid (scale t = units/ε) from joint coins, released mod 2^(J+1).

    ``G = Σ_{j<J} 2^j g_j`` has independent digits, each a coin ``g_j = [u_j < T_j]`` on its own k_j
    joint random bits, and a fair sign S is one joint random bit.  Two variants:

    * **zero** (``q² < ½``, q = e^{−ε/units}): ``Z = S·nz·(1+G)`` with ``nz`` a coin, the discrete
      Laplace law (variance 2q/(1−q)², no ¼);
    * **half** (``q² ≥ ½``, t ≳ 2.9): ``Y = G ⊕ S`` in two's complement (``G`` or ``−1−G``), the
      discrete Laplace centred at −½ (variance + ¼ grid unit², ≤ 1.5% there), no extra coin.

    The release is ``(kernel + noise) mod 2^(J+1)``: the noise's support covers the whole cycle, so every
    neighbouring output on the cycle has a bounded ratio and the release is **pure** ε-DP (δ = 0), and
    the aggregator decodes into a window of 2^(J+1) values around the kernel range (wrong with a
    probability ≤ P(G ≥ 2^J − units − 1), whose MSE is counted in ``variance``).  Privacy is exact for
    the realised thresholds: every step ratio P(z+1)/P(z) on the cycle — ``R_j = o_j / Π_{i<j} o_i``
    (o_j the odds of digit j) inside G, ``ρ₀`` between 0 and ±1 and ``2R_0`` into the merged ±2^J (zero
    variant), 1 at 0/−1 and at the wrap (half variant) — lies in [q, 1/q], so a kernel change of d ≤
    units grid steps moves log P by at most d·ε/units (units = 2: every window of two steps within
    [q², q⁻²], see :func:`_draft`; ε' is then the exact worst case on the cycle).  The thresholds
    round each R_j up to its own precision k_j, and k_j are chosen greedily (fewest ANDs) for a
    variance within 1% of the exact sampler's (``LAPLACE_VAR_LOSS``).

    >>> plan = laplace_plan(1.0, 2)
    >>> plan.epsilon <= 1.0, plan.delta, plan.variant, plan.wrap_bits
    (True, 0.0, 'zero', 6)
    """
    units = check_positive_int(units, "units")
    qx = math.exp(-epsilon / units)
    q = Fraction(qx * (1 + 1e-12))  # margins for exp's rounding: every step stays inside [e^-ε/u, e^ε/u]
    iq = Fraction(1 / qx * (1 - 1e-12))
    if units == 2:  # the merged ±2^J: 2·R_0·R_1 ≈ 2q² ≤ e^ε = q^-2
        variant = "zero" if 2 * q**4 < 0.999 else "half"
    else:
        variant = "zero" if 2 * q * q < 0.999 else "half"
    ideal = _dl_variance(qx) + (0.25 if variant == "half" else 0.0)
    J0 = _digits(qx, units, ideal)
    for J in range(J0, J0 + 4):  # a realised tail too heavy for the wrap criteria at J: one more digit
        try:
            d = _optimise(q, iq, variant, units, J + (variant == "zero"), (1 + LAPLACE_VAR_LOSS) * ideal)
            break
        except ValueError:
            continue
    else:  # pragma: no cover
        raise ValueError(f"no Laplace plan for ε = {epsilon}, units = {units}")
    J = len(d.coins) - (variant == "zero")
    if 2 ** (J + 1) * units <= 2**24:  # the exact worst case on the cycle
        eps_real = _loss(cycle_log_pmf(d.coins, variant), units)
    else:  # per-step bound (units ≠ 2): every step within [q, 1/q]
        eps_real = units * max(abs(math.log(s)) for s in d.steps)
    if eps_real > epsilon * (1 + 1e-9):  # pragma: no cover - the thresholds are built to fit
        raise AssertionError(f"Laplace plan: realised ε {eps_real} above {epsilon}")
    return NoisePlan(
        "laplace",
        d.coins,
        epsilon=eps_real,
        variance=d.variance,
        variant=variant,
        wrap_bits=J + 1,
        offset=-0.5 if variant == "half" else 0.0,
        thresholds=[T for T, _ in d.coins],
    )


def shares_plan(epsilon: float, units: int) -> NoisePlan:
    """Each party adds its own exact discrete Laplace of scale t = units/ε (OS CSPRNG) inside the 2PC.

    Either party's share alone makes the release ε-DP (pure), so the guarantee holds against either
    party colluding with the aggregator; the released noise Z_left + Z_right has twice the variance of
    one discrete Laplace, and drawing it costs no secure comparison.

    >>> plan = shares_plan(1.0, 2)
    >>> plan.n_random, plan.delta, round(plan.variance, 3)
    (1, 0.0, 15.671)
    """
    units = check_positive_int(units, "units")
    scale = Fraction(units) / Fraction(epsilon)
    q = math.exp(-1.0 / float(scale))
    var_one = 2 * q / (1 - q) ** 2
    return NoisePlan("laplace-shares", epsilon=epsilon, delta=0.0, variance=2 * var_one, scale=scale)


def make_plan(mechanism: str, pair_epsilon: float, spec: KernelSpec) -> NoisePlan:
    if mechanism == "none":
        return NoisePlan("none")
    if mechanism == "rr":
        if spec.units != 1:
            raise ValueError(
                f"randomized response needs a binary kernel; {spec.name!r} has {spec.units + 1} values"
            )
        return rr_plan(pair_epsilon)
    if mechanism == "laplace-shares":
        return shares_plan(pair_epsilon, spec.units)
    return laplace_plan(pair_epsilon, spec.units)
