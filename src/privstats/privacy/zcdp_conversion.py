"""ρ-zCDP → (ε, δ): the conversion both :class:`~privstats.privacy.guarantees.ZCDP` and
:func:`~privstats.privacy.composition.zcdp_to_approx` use.

A lower module (it imports neither of them), so guarantees and composition do not import each other.

>>> round(zcdp_epsilon(0.5, 1e-6), 3)
5.222
"""

from __future__ import annotations

import math

__all__ = ["zcdp_epsilon"]


def _zcdp_eps_bun_steinke(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def _zcdp_eps_cks(rho: float, delta: float, alpha: float) -> float:
    """ε(α) = αρ + (ln(1/δ) + (α−1) ln(1 − 1/α) − ln α)/(α − 1), valid for every α > 1."""
    am1 = alpha - 1.0
    return alpha * rho + (math.log(1.0 / delta) + am1 * math.log1p(-1.0 / alpha) - math.log(alpha)) / am1


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP implied by ρ-zCDP: the smaller of Bun–Steinke and Canonne–Kamath–Steinke.

    ``rho`` >= 0 and ``delta`` in (0, 1) are assumed checked by the caller.  CKS 2020 (Prop. 12 /
    Cor. 13 of the arXiv version; Asoodeh et al. 2020): ρ-zCDP gives Rényi DP of order α with
    divergence αρ, hence (ε(α), δ)-DP for every α > 1; α is optimised numerically and, since every
    α gives a valid bound, the optimiser's tolerance only affects tightness, never validity.

    >>> zcdp_epsilon(0.0, 1e-6)
    0.0
    """
    if rho == 0:
        return 0.0
    bs = _zcdp_eps_bun_steinke(rho, delta)

    # optimise over u = log(α − 1); the bound is smooth and quasi-convex in α
    def f(u: float) -> float:
        return _zcdp_eps_cks(rho, delta, 1.0 + math.exp(u))

    a_star = math.log1p(math.sqrt(math.log(1 / delta) / rho))  # α ≈ 1 + √(ln(1/δ)/ρ) is near-optimal
    from scipy import optimize  # imported here: scipy.optimize is slow to import

    res = optimize.minimize_scalar(f, bracket=(a_star - 1.0, a_star + 1.0), tol=1e-12)
    cands = [bs, f(a_star)]
    if res.success and math.isfinite(res.fun):
        cands.append(float(res.fun))
    return max(0.0, min(cands))
