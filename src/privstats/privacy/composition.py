"""Composition of privacy guarantees.

Every function computes the guarantee from the inputs, it never asserts one.

* :func:`basic_composition` — ε and δ add (pure stays pure); ρ adds for zCDP.
* :func:`advanced_composition` — Dwork–Rothblum–Vadhan 2010.
* :func:`optimal_composition` — the exact optimum for k-fold homogeneous composition
  (Kairouz–Oh–Viswanath 2015, Thm 3.3; Murtagh–Vadhan 2016, Thm 1.5), by bisection on
  the exact δ(ε_total) computed as a log-space sum of binomial terms.
* :func:`zcdp_composition`, :func:`pure_to_zcdp`, :func:`zcdp_to_approx` — zero-concentrated DP
  (Bun–Steinke 2016; conversion of Canonne–Kamath–Steinke 2020).
* :func:`parallel_composition` — mechanisms on disjoint users: the worst one.

>>> round(optimal_composition(0.01, 1656, 0.01).epsilon, 3)
0.698
>>> round(advanced_composition(0.01, 1656, 0.01).epsilon, 3)
1.401
>>> basic_composition([PureDP(0.5), PureDP(0.25)])
PureDP(epsilon=0.75)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from scipy import special

from privstats.privacy.guarantees import ZCDP, ApproxDP, Guarantee, PureDP
from privstats.privacy.zcdp_conversion import zcdp_epsilon
from privstats.validation import check_choice, check_delta, check_epsilon, check_positive_int

__all__ = [
    "advanced_composition",
    "basic_composition",
    "compose",
    "optimal_composition",
    "optimal_composition_delta",
    "parallel_composition",
    "pure_to_zcdp",
    "zcdp_composition",
    "zcdp_to_approx",
]

_MIX_MSG = (
    "cannot compose zCDP with (epsilon, delta) guarantees by {how}: use zcdp_composition "
    "(pure epsilon counts as rho = epsilon**2/2) or convert the zCDP guarantees with .to_approx(delta) first"
)


def _as_list(guarantees: Iterable[Guarantee], name: str = "guarantees") -> list[Guarantee]:
    if isinstance(guarantees, Guarantee):
        raise TypeError(f"{name} must be an iterable of guarantees, not a single {type(guarantees).__name__}")
    out = list(guarantees)
    for g in out:
        if not isinstance(g, Guarantee):
            raise TypeError(f"{name} must contain PureDP, ApproxDP or ZCDP values, got {type(g).__name__}")
    return out


def _check_nonneg(x: object, name: str) -> float:
    if (
        isinstance(x, bool)
        or not isinstance(x, (int, float, np.integer, np.floating))
        or not (x >= 0)
        or not math.isfinite(x)
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return float(x)


def basic_composition(guarantees: Iterable[Guarantee]) -> Guarantee:
    """Sum of ε and δ (pure stays pure); all-zCDP sums ρ. Mixing zCDP with (ε,δ) raises.

    An empty sequence composes to ``PureDP(0.0)``.

    >>> basic_composition([PureDP(1.0), ApproxDP(0.5, 1e-6)])
    ApproxDP(epsilon=1.5, delta=1e-06)
    >>> basic_composition([ZCDP(0.1), ZCDP(0.2)]).rho
    0.30000000000000004
    """
    return _combine(guarantees, "basic composition", math.fsum, _delta_sum)


def _delta_sum(deltas: Iterable[float]) -> float:
    delta = math.fsum(deltas)
    if delta >= 1:
        raise ValueError(f"the deltas sum to {delta} >= 1: the composed guarantee is vacuous")
    return delta


def _combine(
    guarantees: Iterable[Guarantee],
    how: str,
    total: Callable[[Iterable[float]], float],
    total_delta: Callable[[Iterable[float]], float],
) -> Guarantee:
    """ρ of all-zCDP guarantees by ``total``, else ε by ``total`` and δ by ``total_delta``
    (pure stays pure); mixing zCDP with (ε, δ) is a TypeError naming ``how``."""
    gs = _as_list(guarantees)
    if not gs:
        return PureDP(0.0)
    zs = [g for g in gs if isinstance(g, ZCDP)]
    eds = [g for g in gs if isinstance(g, (PureDP, ApproxDP))]
    if len(zs) == len(gs):
        return ZCDP(total(g.rho for g in zs))
    if zs:
        raise TypeError(_MIX_MSG.format(how=how))
    eps = total(g.epsilon for g in eds)
    if all(isinstance(g, PureDP) for g in gs):
        return PureDP(eps)
    return ApproxDP(eps, total_delta(g.delta for g in eds))


def advanced_composition(epsilon: float, k: int, delta_prime: float, delta: float = 0.0) -> ApproxDP:
    """Dwork–Rothblum–Vadhan: k-fold (ε, δ) is (ε√(2k ln(1/δ')) + kε(e^ε − 1), kδ + δ').

    Where that exceeds basic composition's kε (large ε) the basic bound, also valid, is returned.

    >>> round(advanced_composition(0.1, 100, 1e-6).epsilon, 4)
    6.3082
    """
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    delta_prime = check_delta(delta_prime, "delta_prime")
    delta = check_delta(delta, "delta", allow_zero=True)
    total_delta = k * delta + delta_prime
    if total_delta >= 1:
        raise ValueError(f"k*delta + delta_prime = {total_delta} >= 1: the composed guarantee is vacuous")
    drv = epsilon * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * epsilon * math.expm1(
        min(epsilon, 700.0)
    )
    return ApproxDP(min(drv, k * epsilon), total_delta)


def _log_delta_pure(epsilon: float, k: int, epsilon_total: float) -> float:
    """log δ(ε_total) for k-fold ε-DP (−inf when δ = 0).

    Murtagh–Vadhan Thm 1.5 (equivalently KOV Thm 3.3):
    δ = (1+e^ε)^(−k) Σ_{l : (2l−k)ε > ε_total} C(k,l) (e^{lε} − e^{ε_total} e^{(k−l)ε})
      = Σ_{l} Binom(k, p).pmf(l) · (1 − e^{ε_total − (2l−k)ε}),  p = e^ε/(1+e^ε).
    """
    l0 = math.floor((epsilon_total / epsilon + k) / 2) + 1  # smallest l with (2l−k)ε > ε_total
    if l0 > k:
        return -math.inf
    l0 = max(l0, 0)
    # only l within t = 30√k + 10 of the mean kp carries mass: Hoeffding bounds the rest by 2e^{−2t²/k}
    # (< e^{−1800}), which is added back, so δ stays an upper bound; O(√k) work instead of O(k) (issue 18:
    # k = 10^9 allocated GBs and ended in MemoryError)
    p_ = 1.0 / (1.0 + math.exp(-epsilon))
    t = 30.0 * math.sqrt(k) + 10.0
    lo_l, hi_l = max(l0, math.floor(k * p_ - t)), min(k, math.ceil(k * p_ + t))
    tail = math.log(2.0) - 2.0 * t * t / k
    if lo_l > hi_l:
        return tail if l0 <= k else -math.inf
    l = np.arange(lo_l, hi_l + 1)
    log_p = -math.log1p(math.exp(-epsilon))  # log(e^ε/(1+e^ε))
    log_q = -epsilon - math.log1p(math.exp(-epsilon))  # log(1/(1+e^ε))
    logpmf = (
        special.gammaln(k + 1)
        - special.gammaln(l + 1)
        - special.gammaln(k - l + 1)
        + l * log_p
        + (k - l) * log_q
    )
    x = epsilon_total - (2 * l - k) * epsilon  # < 0 for every term
    x = np.minimum(x, -1e-300)
    terms = logpmf + np.log(-np.expm1(x))
    return float(np.logaddexp(special.logsumexp(terms), tail))


def optimal_composition_delta(epsilon: float, k: int, epsilon_total: float) -> float:
    """The exact δ of k-fold composition of ε-DP at total ε_total (KOV Theorem 3.3).

    Valid for every ε_total >= 0 (Murtagh–Vadhan's form of the same bound); computed
    as a log-space sum of binomial terms.

    >>> optimal_composition_delta(1.0, 1, 1.0)
    0.0
    >>> round(optimal_composition_delta(0.01, 1656, 0.698), 4)
    0.01
    """
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    epsilon_total = _check_nonneg(epsilon_total, "epsilon_total")
    return min(1.0, math.exp(_log_delta_pure(epsilon, k, epsilon_total)))


KOV_EXACT_MAX_K = 10**7
"""Above this k the exact bound (O(√k) terms per bisection step, ~1 s at 10^7, 9 s at 10^9) gives way to
a closed form: the smaller of basic composition, Dwork–Rothblum–Vadhan with δ' = δ, and the zCDP route
(ρ = kε²/2), each a valid upper bound on the optimal ε (k = 10^9 used to end in MemoryError)."""


def optimal_composition(epsilon: float, k: int, delta: float, delta0: float = 0.0) -> ApproxDP:
    """Kairouz–Oh–Viswanath exact homogeneous composition: the smallest ε_total such that
    k-fold composition of (ε, δ0)-DP mechanisms is (ε_total, 1 − (1 − δ0)^k (1 − delta))-DP.

    Found by bisection on the exact δ(ε_total) to a relative tolerance of 1e-12,
    keeping the upper end of the bracket (so the answer is never too small).

    >>> optimal_composition(0.5, 1, 1e-15).epsilon <= 0.5
    True
    """
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    delta = check_delta(delta, "delta", allow_zero=True)
    delta0 = check_delta(delta0, "delta0", allow_zero=True)
    total_delta = -math.expm1(k * math.log1p(-delta0) + math.log1p(-delta))
    if total_delta >= 1:
        raise ValueError(
            "the composed delta 1 - (1-delta0)^k (1-delta) rounds to 1: the guarantee is vacuous"
        )
    log_target = math.log(delta) if delta > 0 else -math.inf
    if k > KOV_EXACT_MAX_K:
        bound = k * epsilon
        if delta > 0:
            drv = epsilon * math.sqrt(2 * k * math.log(1 / delta)) + k * epsilon * math.expm1(
                min(epsilon, 700.0)
            )
            rho = k * epsilon * epsilon / 2
            zcdp = rho + 2 * math.sqrt(rho * math.log(1 / delta))
            bound = min(bound, drv, zcdp)
        return ApproxDP(bound, total_delta)

    def ok(eg: float) -> bool:
        return _log_delta_pure(epsilon, k, eg) <= log_target

    hi = k * epsilon  # δ(kε) = 0
    lo = 0.0
    if ok(lo):
        return ApproxDP(0.0, total_delta)
    if delta > 0:
        # the composition is a sum of k bounded terms: start from the DRV-style bracket when it is inside
        guess = min(hi, epsilon * math.sqrt(2 * k * math.log(1 / delta)) + k * epsilon * math.expm1(epsilon))
        if ok(guess):
            hi = guess
        else:
            lo = guess
    while hi - lo > 1e-12 * max(hi, 1e-300):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return ApproxDP(hi, total_delta)


def pure_to_zcdp(epsilon: float) -> ZCDP:
    """ε-DP implies (ε²/2)-zCDP (Bun–Steinke 2016, Prop. 1.4).

    >>> pure_to_zcdp(1.0)
    ZCDP(rho=0.5)
    """
    epsilon = check_epsilon(epsilon)
    return ZCDP(epsilon * epsilon / 2)


def zcdp_composition(guarantees: Iterable[Guarantee]) -> ZCDP:
    """Additive ρ; a pure ε-DP guarantee counts as ρ = ε²/2.

    (ε, δ) guarantees with δ > 0 have no zCDP form and raise ``TypeError``.

    >>> zcdp_composition([ZCDP(0.1), PureDP(1.0)])
    ZCDP(rho=0.6)
    """
    rhos = []
    for g in _as_list(guarantees):
        if isinstance(g, ZCDP):
            rhos.append(g.rho)
        elif isinstance(g, (PureDP, ApproxDP)) and g.delta == 0:
            rhos.append(g.epsilon**2 / 2)
        else:
            raise TypeError(
                f"an (epsilon, delta) guarantee with delta > 0 ({g}) has no zCDP equivalent: "
                "compose it with basic composition after converting the zCDP part with .to_approx(delta)"
            )
    return ZCDP(math.fsum(rhos))


def zcdp_to_approx(rho: float, delta: float) -> ApproxDP:
    """The tightest available (ε, δ) implied by ρ-zCDP (Canonne–Kamath–Steinke 2020, Prop. 2.3;
    never worse than Bun–Steinke's ρ + 2√(ρ ln 1/δ)); see :func:`~privstats.privacy.zcdp_conversion.zcdp_epsilon`.

    >>> round(zcdp_to_approx(0.5, 1e-6).epsilon, 3)
    5.222
    """
    rho = _check_nonneg(rho, "rho")
    delta = check_delta(delta, "delta")
    return ApproxDP(zcdp_epsilon(rho, delta), delta)


def parallel_composition(guarantees: Iterable[Guarantee]) -> Guarantee:
    """Mechanisms on disjoint sets of users: the worst single guarantee.

    (ε, δ) guarantees are combined componentwise (max ε, max δ), which every
    mechanism in the list satisfies.

    >>> parallel_composition([PureDP(0.5), PureDP(1.0)])
    PureDP(epsilon=1.0)
    """
    return _combine(guarantees, "parallel composition", max, max)


def compose(
    guarantees: Iterable[Guarantee], *, method: str = "basic", delta: float | None = None
) -> Guarantee:
    """Compose a sequence of guarantees by ``method`` in {"basic", "advanced", "optimal", "zcdp"};
    ``delta`` is the slack δ' for advanced/optimal and the target δ for zcdp.

    "advanced" and "optimal" are homogeneous results: a heterogeneous list is
    composed as k copies of its largest ε and δ (valid, possibly loose), and the
    basic composition is returned instead whenever it is at least as good.
    "zcdp" returns a :class:`ZCDP` when ``delta`` is None, else its (ε, δ) conversion.

    >>> gs = [PureDP(0.01)] * 1656
    >>> round(compose(gs, method="optimal", delta=0.01).epsilon, 3)
    0.698
    >>> compose([PureDP(1.0)] * 2, method="zcdp")
    ZCDP(rho=1.0)
    """
    method = check_choice(method, "method", {"basic", "advanced", "optimal", "zcdp"})
    gs = _as_list(guarantees)
    if method == "basic":
        return basic_composition(gs)
    if method == "zcdp":
        z = zcdp_composition(gs)
        return z if delta is None else zcdp_to_approx(z.rho, delta)
    if delta is None:
        raise ValueError(f"delta (the slack delta') is required for method={method!r}")
    delta = check_delta(delta, "delta")
    if any(isinstance(g, ZCDP) for g in gs):
        raise TypeError(_MIX_MSG.format(how=f"{method} composition"))
    if not gs:
        return PureDP(0.0)
    basic = basic_composition(gs)
    eds = [g for g in gs if isinstance(g, (PureDP, ApproxDP))]  # all of them: zCDP was refused above
    eps = max(g.epsilon for g in eds)
    d0 = max(g.delta for g in eds)
    if eps == 0:
        return basic
    if method == "advanced":
        res = advanced_composition(eps, len(gs), delta, d0)
    else:
        res = optimal_composition(eps, len(gs), delta, d0)
    b = basic.to_approx()
    if b.epsilon <= res.epsilon and b.delta <= res.delta:
        return basic
    return res
