"""Variation-ratio amplification by shuffling (after Wang et al., CCS 2024): randomizer-aware bounds.

A local randomizer R has *variation-ratio* parameters (p, β, q) when, for the victim's two
values x0, x1 and any other user's value x,

* p = max_y R(x0)(y) / R(x1)(y)      (= e^ε0 for an ε0-LDP randomizer),
* β = TV(R(x0), R(x1))               (the total-variation distance),
* q = max_y R(x0)(y) / R(x)(y).

With α = β/(p−1), the victim's report is, under x0, "symbol 0" w.p. pα, "symbol 1" w.p. α
and a residual (the same law under x1) w.p. 1−α−pα; under x1 the first two are swapped.  Every
other user's report is symbol 0 or 1 w.p. r = αp/q each — a clone — else a residual.  Wang,
Peng et al. ("Unified, tight and fast privacy amplification in the shuffle model of differential
privacy") bound the shuffled output by the *three-symbol* histogram of these reports.

**Upper bound used here** (:func:`variation_ratio_delta`): the same decomposition with the
victim's residual *revealed*: δ(ε) ≤ (pα + α) · δ_FMT(ε), the exact clone-pair divergence
with P = A + Bern(p/(p+1)) against Q = A + Bern(1/(p+1)), A ~ Bin(C, ½), C ~ Bin(n−1, 2r).
The paper's tighter form lets the victim's residual hide among the others' residuals; exact
enumeration of shuffled 3-ary randomized response finds it *below* the true divergence
(n = 6, ε0 = 1, ε = 0.6: 0.02416 against 0.02440 for the dataset (x0, x0, x*, x*, x*)), so it
is not used.  The revealed form was checked against exact enumeration of shuffled k-RR
(k = 2, 3, 4; n ≤ 8) and 3-bit RAPPOR (n ≤ 5), with the randomizers' own and the generic
parameters (tests/privacy/test_privacy_variation_ratio.py): never below.  For k-RR it
coincides with :func:`~privstats.privacy.amplification.krr_blanket_delta`.

**Lower bound** (:func:`shuffled_epsilon_lower`): the exact divergence of one concrete pair of
neighbouring datasets for the specific randomizer — the victim holds x0 or x1, every other
user a third value x* — after the post-processing "did the report point to x0 and not x1, the
reverse, or neither" (:func:`three_symbol_delta`).  A post-processing of a real pair can only
under-state its divergence, so no (ε, δ) claim below this ε can be true.

>>> ub = shuffled_epsilon_vr(3.0, 100_000, 1e-6, "krr", k=16)
>>> lb = shuffled_epsilon_lower(3.0, 100_000, 1e-6, "krr", k=16)
>>> bool(0 < lb <= ub)
True
"""

from __future__ import annotations

import math

import numpy as np

from privstats.privacy.clone_pairs import pair_delta, smallest_eps

__all__ = [
    "RANDOMIZERS",
    "lower_pair",
    "shuffled_epsilon_lower",
    "shuffled_epsilon_vr",
    "three_symbol_delta",
    "variation_ratio_delta",
    "variation_ratio_parameters",
]

#: randomizers with variation-ratio parameters; ``k`` is the domain size (the number of hash buckets g for "olh")
RANDOMIZERS = ("generic", "krr", "rappor", "oue", "olh", "hadamard")


def _need_k(randomizer: str, k: int | None, minimum: int = 2) -> int:
    if k is None or isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < minimum:
        raise ValueError(f"randomizer={randomizer!r} needs an integer k >= {minimum}, got {k!r}")
    return int(k)


def variation_ratio_parameters(
    epsilon0: float, randomizer: str = "generic", k: int | None = None
) -> tuple[float, float, float]:
    """(p, β, q) of an ε0-LDP randomizer as privstats implements it.

    * ``"generic"``: any ε0-LDP randomizer, β = (e^ε0 − 1)/(e^ε0 + 1);
    * ``"krr"``: k-ary randomized response, β = (e^ε0 − 1)/(e^ε0 + k − 1);
    * ``"rappor"``: symmetric unary encoding, every bit flipped w.p. f = 1/(1 + e^(ε0/2)); two
      bits differ between x0 and x1, β = (1−f)² − f² = 1 − 2f;
    * ``"oue"``: optimized unary encoding (the true bit kept w.p. ½, others set w.p. 1/(e^ε0+1)),
      β = ½ − 1/(e^ε0+1);
    * ``"olh"``: local hashing into g = k buckets, β ≤ (e^ε0 − 1)/(e^ε0 + g − 1);
    * ``"hadamard"``: Hadamard response (a quarter of the outputs favour x0 over x1),
      β = (e^ε0 − 1)/(2(e^ε0 + 1)).

    In every case p = q = e^ε0 (the worst ratio between any two inputs).

    >>> p, beta, q = variation_ratio_parameters(1.0, "krr", k=4)
    >>> round(beta, 6) == round((math.e - 1) / (math.e + 3), 6)
    True
    """
    if randomizer not in RANDOMIZERS:
        raise ValueError(f"randomizer must be one of {RANDOMIZERS}, got {randomizer!r}")
    e = math.exp(epsilon0)
    if randomizer == "generic":
        beta = math.tanh(epsilon0 / 2)  # (e−1)/(e+1), accurate for small ε0
    elif randomizer in ("krr", "olh"):
        kk = _need_k(randomizer, k)
        beta = -math.expm1(-epsilon0) * e / (e + kk - 1)  # (e−1)/(e+k−1)
    elif randomizer == "rappor":
        beta = math.tanh(epsilon0 / 4)  # 1 − 2f with f = 1/(1+e^(ε0/2))
    elif randomizer == "oue":
        beta = 0.5 * math.tanh(epsilon0 / 2)  # ½ − 1/(e+1) = (e−1)/(2(e+1))
    else:  # hadamard
        beta = 0.5 * math.tanh(epsilon0 / 2)
    return e, beta, e


def three_symbol_delta(eps: float, n: int, u: float, v: float, r: float, *, upper: bool = True) -> float:
    """Exact δ(ε) of the shuffled three-symbol pair (victim (u, v, 1−u−v) vs (v, u, 1−u−v), others (r, r)).

    ``upper=True`` adds the probability of the (< 1e-40) binomial tails left out of the sum,
    so the result is never below the exact divergence; ``upper=False`` leaves it out (never above).
    """
    from scipy import stats  # imported here: scipy.stats is slow to import and `import privstats` is not

    if not (u >= v >= 0 and u + v <= 1 + 1e-15 and 0 <= r < 0.5):
        raise ValueError(f"need u >= v >= 0, u + v <= 1 and 0 <= r < 1/2, got u={u}, v={v}, r={r}")
    w = max(0.0, 1.0 - u - v)
    e = math.exp(eps)
    if u - e * v <= 0:  # the victim's own report never reaches the ratio e^ε
        return 0.0
    m = n - 1
    if m == 0 or 2 * r * m < 1e-40:
        # no other user (or none but with probability < 1e-40: at ε0 ≈ 37 r is subnormal, where scipy's
        # binomial overflows) emits a rare symbol: the count is 0, the rest a left-out tail of mass ≤ 2rm
        c = np.zeros(1, dtype=np.int64)
        pmf = np.ones(1)
        tails = 2 * r * m
        missing = tails if upper else -e * tails
    else:
        mean = m * 2 * r
        half = 14.0 * math.sqrt(mean * (1 - 2 * r)) + 40.0  # binomial tails beyond this are < 1e-40
        lo, hi = max(0, int(mean - half)), min(m, math.ceil(mean + half))
        c = np.arange(lo, hi + 1, dtype=np.int64)
        pmf = stats.binom.pmf(c, m, 2 * r)
        tails = float(stats.binom.cdf(lo - 1, m, 2 * r) + stats.binom.sf(hi, m, 2 * r))
        # a left-out term lies in [−e, 1]: add its largest value for an upper bound, its smallest for a lower
        missing = tails if upper else -e * tails

    def threshold(s: np.ndarray) -> np.ndarray:
        # L(a) = (u − e v) a/r + (v − e u)(s − a)/r + (1 − e) w (n − s)/(1 − 2r), increasing in a;
        # the region is {a > a*}: the smallest integer a with L(a) > 0
        slope = (u - v) * (1 + e)
        const = (v - e * u) * s + (1 - e) * w * (n - s) * r / (1 - 2 * r)
        a_star = -const / slope
        return np.floor(a_star).astype(np.int64) + 1

    def at_least(t: np.ndarray, trials: np.ndarray) -> np.ndarray:  # P(Bin(trials, ½) >= t)
        return np.asarray(stats.binom.sf(t - 1, trials, 0.5), dtype=float)

    t1 = threshold(c + 1)  # the victim emitted 0 or 1: s = C + 1
    t2 = threshold(c)  # the victim emitted 2: s = C
    own0 = at_least(t1 - 1, c)  # victim's symbol is 0: a = A + 1
    own1 = at_least(t1, c)  # victim's symbol is 1: a = A
    own2 = at_least(t2, c)
    # summed over C (not clipped per C): a histogram is reached from two values of C, and the sum over
    # C of P0 − e^ε P1 restricted to the optimal set is exactly the hockey-stick divergence
    d = (u - e * v) * own0 + (v - e * u) * own1 + (1 - e) * w * own2
    return max(0.0, float(np.sum(pmf * d)) + missing)


def variation_ratio_delta(
    eps: float, epsilon0: float, n: int, randomizer: str = "generic", k: int | None = None
) -> float:
    """Upper bound on δ(ε) of n shuffled ε0-LDP reports of ``randomizer`` (victim's residual revealed).

    >>> d = variation_ratio_delta(0.5, 2.0, 10_000, "krr", k=8)
    >>> bool(0 <= d < 1e-6)
    True
    """
    p, beta, q = variation_ratio_parameters(epsilon0, randomizer, k)
    if epsilon0 == 0:
        return 0.0  # the reports do not depend on the data
    alpha = beta / math.expm1(epsilon0)
    victim = (p + 1) * alpha  # probability that the victim's report is symbol 0 or 1
    return min(1.0, victim * float(pair_delta(eps, p / (p + 1), n - 1, min(1.0, 2 * alpha * p / q))))


def lower_pair(epsilon0: float, randomizer: str, k: int | None = None) -> tuple[float, float, float] | None:
    """(u, v, r) of the concrete neighbouring pair used for the lower bound, or None if there is none.

    The victim holds x0 or x1, every other user x*; each report is post-processed to
    0 ("points to x0, not x1"), 1 (the reverse) or 2.
    """
    if randomizer not in RANDOMIZERS:
        raise ValueError(f"randomizer must be one of {RANDOMIZERS}, got {randomizer!r}")
    e = math.exp(epsilon0)
    if randomizer == "krr":
        kk = _need_k(randomizer, k)
        if kk < 3:
            return None
        return e / (e + kk - 1), 1 / (e + kk - 1), 1 / (e + kk - 1)
    if randomizer == "rappor":
        kk = _need_k(randomizer, k)
        if kk < 3:
            return None
        f = 1 / (1 + math.exp(epsilon0 / 2))
        return (1 - f) ** 2, f**2, f * (1 - f)
    if randomizer == "oue":
        kk = _need_k(randomizer, k)
        if kk < 3:
            return None
        qb = 1 / (e + 1)
        return 0.5 * (1 - qb), 0.5 * qb, qb * (1 - qb)
    if randomizer == "hadamard":
        pk = e / (e + 1)
        return pk / 2, (1 - pk) / 2, 0.25
    return None  # generic, olh: no closed-form concrete pair here


def _binary_rr_delta(eps: float, n: int, f: float) -> float:
    """Exact δ(ε) (binomial tails left out: never above) of shuffled binary RR (flip probability f),
    victim 1 against 0 while the n−1 others hold 0, the larger of the two directions: the view is the
    number of reported ones."""
    from scipy import stats

    m = n - 1
    half = 14.0 * math.sqrt(m * f * (1 - f)) + 40.0
    j = np.arange(max(0, int(m * f - half)), min(m, math.ceil(m * f + half)) + 2)
    others = stats.binom.pmf(j, m, f)
    others_before = stats.binom.pmf(j - 1, m, f)  # the victim reported a one
    e = math.exp(eps)
    p1 = (1 - f) * others_before + f * others
    p0 = f * others_before + (1 - f) * others
    return float(max(np.sum(np.maximum(p1 - e * p0, 0.0)), np.sum(np.maximum(p0 - e * p1, 0.0))))


def shuffled_epsilon_vr(
    epsilon0: float, n: int, delta: float, randomizer: str = "generic", *, k: int | None = None
) -> float:
    """Central ε (an upper bound) of n shuffled ε0-LDP reports of ``randomizer`` by the variation-ratio bound.

    >>> from privstats.privacy.amplification import shuffled_epsilon
    >>> bool(shuffled_epsilon_vr(2.0, 10_000, 1e-6) < shuffled_epsilon(2.0, 10_000, 1e-6, "fmt-numeric"))
    True
    """
    if n == 1:
        return epsilon0
    return smallest_eps(lambda e: variation_ratio_delta(e, epsilon0, n, randomizer, k), delta, epsilon0, 1e-7)


def shuffled_epsilon_lower(
    epsilon0: float, n: int, delta: float, randomizer: str, *, k: int | None = None
) -> float | None:
    """An ε below which the shuffled randomizer is provably *not* (ε, δ)-DP, or None (no concrete pair).

    >>> lb = shuffled_epsilon_lower(2.0, 10_000, 1e-6, "rappor", k=32)
    >>> bool(0 < lb <= shuffled_epsilon_vr(2.0, 10_000, 1e-6, "rappor", k=32))
    True
    """
    pair = lower_pair(epsilon0, randomizer, k)
    if pair is None and not (randomizer == "krr" and k == 2):
        return None

    def f(eps: float) -> float:
        if pair is None:  # binary randomized response
            return _binary_rr_delta(eps, n, 1 / (1 + math.exp(epsilon0)))
        return three_symbol_delta(eps, n, *pair, upper=False)

    # largest ε whose divergence still exceeds δ (bisection from below: never overstates the bound)
    if f(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, epsilon0
    while hi - lo > 1e-7 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if f(mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo
