"""Composition of privacy guarantees.

To be implemented (see the docstrings): every function computes the guarantee,
it never asserts one.
"""

from __future__ import annotations

from typing import Iterable

from privstats.privacy.guarantees import ApproxDP, Guarantee, PureDP, ZCDP

__all__ = [
    "basic_composition",
    "advanced_composition",
    "optimal_composition",
    "optimal_composition_delta",
    "zcdp_composition",
    "zcdp_to_approx",
    "pure_to_zcdp",
    "parallel_composition",
    "compose",
]


def basic_composition(guarantees: Iterable[Guarantee]) -> Guarantee:
    """Sum of ε and δ (pure stays pure); all-zCDP sums ρ. Mixing zCDP with (ε,δ) raises."""
    raise NotImplementedError


def advanced_composition(epsilon: float, k: int, delta_prime: float, delta: float = 0.0) -> ApproxDP:
    """Dwork–Rothblum–Vadhan: k-fold (ε, δ) is (ε√(2k ln(1/δ')) + kε(e^ε − 1), kδ + δ')."""
    raise NotImplementedError


def optimal_composition(epsilon: float, k: int, delta: float, delta0: float = 0.0) -> ApproxDP:
    """Kairouz–Oh–Viswanath exact homogeneous composition: the smallest ε_total such that
    k-fold composition of (ε, δ0)-DP mechanisms is (ε_total, 1 − (1 − δ0)^k (1 − delta))-DP."""
    raise NotImplementedError


def optimal_composition_delta(epsilon: float, k: int, epsilon_total: float) -> float:
    """The exact δ of k-fold composition of ε-DP at total ε_total (KOV Theorem 3.3)."""
    raise NotImplementedError


def zcdp_composition(guarantees: Iterable[Guarantee]) -> ZCDP:
    """Additive ρ; a pure ε-DP guarantee counts as ρ = ε²/2."""
    raise NotImplementedError


def zcdp_to_approx(rho: float, delta: float) -> ApproxDP:
    """The tightest available (ε, δ) implied by ρ-zCDP (Canonne–Kamath–Steinke 2020, Prop. 2.3;
    never worse than Bun–Steinke's ρ + 2√(ρ ln 1/δ))."""
    raise NotImplementedError


def pure_to_zcdp(epsilon: float) -> ZCDP:
    """ε-DP implies (ε²/2)-zCDP."""
    raise NotImplementedError


def parallel_composition(guarantees: Iterable[Guarantee]) -> Guarantee:
    """Mechanisms on disjoint sets of users: the worst single guarantee."""
    raise NotImplementedError


def compose(guarantees: Iterable[Guarantee], *, method: str = "basic", delta: float | None = None) -> Guarantee:
    """Compose a sequence of guarantees by ``method`` in {"basic", "advanced", "optimal", "zcdp"};
    ``delta`` is the slack δ' for advanced/optimal and the target δ for zcdp."""
    raise NotImplementedError
