"""Privacy guarantees as values: pure ε-DP, approximate (ε, δ)-DP and ρ-zCDP.

Every mechanism in privstats returns the guarantee it gives as one of these
objects; composition (:mod:`privstats.privacy.composition`) and the budget
ledger (:mod:`privstats.privacy.ledger`) compute with them.

>>> PureDP(1.0).epsilon, PureDP(1.0).delta
(1.0, 0.0)
>>> ApproxDP(0.5, 1e-6) <= ApproxDP(1.0, 1e-5)
True
>>> round(ZCDP(0.5).to_approx(1e-6).epsilon, 3)
5.222
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from privstats.privacy.zcdp_conversion import zcdp_epsilon
from privstats.validation import check_delta

__all__ = ["ZCDP", "ApproxDP", "Guarantee", "PureDP", "guarantee_from_dict"]


class Guarantee:
    """Base class of the guarantee values (frozen dataclasses)."""

    kind: str = ""

    def to_approx(self, delta: float | None = None) -> ApproxDP:
        """The (ε, δ) statement this guarantee implies (``delta`` is required for zCDP)."""
        return ApproxDP(self.epsilon, self.delta)  # type: ignore[attr-defined]

    def __le__(self, other: Guarantee) -> bool:
        """``a <= b`` when ``a`` is at least as strong as ``b``."""
        if isinstance(self, ZCDP) or isinstance(other, ZCDP):
            if isinstance(self, ZCDP) and isinstance(other, ZCDP):
                return self.rho <= other.rho * (1 + 1e-12)
            raise TypeError("compare zCDP with (epsilon, delta) after to_approx(delta)")
        a, b = self.to_approx(), other.to_approx()
        return a.epsilon <= b.epsilon * (1 + 1e-12) and a.delta <= b.delta * (1 + 1e-12)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **{k: float(v) for k, v in vars(self).items()}}


def _check_eps(eps: Any, name: str = "epsilon") -> float:
    """A finite real >= 0 (int, float, Fraction or numpy scalar; not a bool), as a float."""
    if (
        isinstance(eps, bool)
        or not isinstance(eps, numbers.Real)
        or not (math.isfinite(eps) and float(eps) >= 0)
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}")
    return float(eps)


@dataclass(frozen=True)
class PureDP(Guarantee):
    """ε-differential privacy."""

    epsilon: float
    kind = "pure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_eps(self.epsilon))

    @property
    def delta(self) -> float:
        return 0.0

    def __str__(self) -> str:
        return f"ε={self.epsilon:.4g}"


@dataclass(frozen=True)
class ApproxDP(Guarantee):
    """(ε, δ)-differential privacy."""

    epsilon: float
    delta: float
    kind = "approx"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_eps(self.epsilon))
        if (
            isinstance(self.delta, bool)
            or not isinstance(self.delta, numbers.Real)
            or not (0 <= self.delta < 1)
        ):
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", float(self.delta))

    def __str__(self) -> str:
        return f"ε={self.epsilon:.4g}, δ={self.delta:.3g}"


@dataclass(frozen=True)
class ZCDP(Guarantee):
    """ρ-zero-concentrated DP (Bun–Steinke 2016)."""

    rho: float
    kind = "zcdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _check_eps(self.rho, "rho"))

    def to_approx(self, delta: float | None = None) -> ApproxDP:
        """The (ε, δ)-DP implied by ρ-zCDP: the tighter of Bun–Steinke 2016 (ρ + 2√(ρ ln 1/δ))
        and Canonne–Kamath–Steinke 2020 (see :func:`privstats.privacy.composition.zcdp_to_approx`)."""
        if delta is None:
            raise ValueError("delta is required to convert zCDP to (epsilon, delta)-DP")
        delta = check_delta(delta, "delta")
        return ApproxDP(zcdp_epsilon(self.rho, delta), delta)

    def __str__(self) -> str:
        return f"ρ={self.rho:.4g} (zCDP)"


def guarantee_from_dict(d: dict[str, Any]) -> Guarantee:
    """Inverse of ``Guarantee.to_dict``."""
    kind = d.get("kind")
    if kind == "pure":
        return PureDP(float(d["epsilon"]))
    if kind == "approx":
        return ApproxDP(float(d["epsilon"]), float(d["delta"]))
    if kind == "zcdp":
        return ZCDP(float(d["rho"]))
    raise ValueError(f"unknown guarantee kind {kind!r}")
