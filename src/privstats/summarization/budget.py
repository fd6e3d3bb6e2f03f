"""Privacy accounting and budget planning for the summarization protocol.

Every figure is computed by :mod:`privstats.privacy.composition`; nothing is asserted.

* A sketch of ``k`` MWEM iterations releases ``2k`` ε-DP mechanisms (exponential
  mechanism + Laplace measurement).  The exponential mechanism is also ε²/8-zCDP
  (bounded range), the Laplace step ε²/2-zCDP.
* ``paper``: what the paper's §4 computes — DRV advanced composition counting *one*
  mechanism per iteration (it reproduces ε = 1.401 for ``k = 1656``, ε = 0.01, δ = 0.01).
  It undercounts and is reported for comparison only.
* ``tight``: the smallest ε among basic, DRV, exact optimal (KOV) composition of the
  ``2k`` mechanisms, and the zCDP route (CKS conversion).
* The auction (Theorem 6's argument: at most τ "bad" rounds, each ε_auc-DP) is
  reported separately and flagged *heuristic*: the argument only covers the
  "asked" event (research note P-priv-4).

>>> acc = sketch_accounting(0.01, 1656, 0.01)
>>> round(acc["paper"].epsilon, 3)
1.401
>>> acc["tight"].epsilon < acc["advanced"].epsilon
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privstats.privacy import (
    ZCDP,
    Guarantee,
    PureDP,
    advanced_composition,
    basic_composition,
    optimal_composition,
    zcdp_composition,
    zcdp_to_approx,
)

__all__ = [
    "PrivateParams",
    "auction_accounting",
    "expected_asks",
    "paper_auction_parameters",
    "plan_private",
    "sketch_accounting",
    "tightest",
]


def check_sensitivity(sensitivity: int) -> int:
    """The neighbouring relation's row sensitivity: 1 (add/remove) or 2 (replace-one).

    >>> check_sensitivity(2)
    2
    """
    if sensitivity not in (1, 2):
        raise ValueError(f"sensitivity must be 1 (add/remove) or 2 (replace-one), got {sensitivity!r}")
    return int(sensitivity)


def tightest(*guarantees: Guarantee) -> Guarantee:
    """The guarantee with the smallest ε (all at the same δ or pure)."""
    return min(guarantees, key=lambda g: g.to_approx().epsilon)


def _zcdp_sketch(epsilon_iter: float, iterations: int) -> ZCDP:
    return zcdp_composition(
        [ZCDP(epsilon_iter**2 / 8.0 * iterations), ZCDP(epsilon_iter**2 / 2.0 * iterations)]
    )


def sketch_accounting(epsilon_iter: float, iterations: int, delta: float) -> dict[str, Guarantee]:
    """Guarantees of ``iterations`` MWEM iterations at per-mechanism ``epsilon_iter`` (δ for the approximate ones)."""
    if iterations <= 0:
        zero = PureDP(0.0)
        return {"paper": zero, "basic": zero, "advanced": zero, "optimal": zero, "zcdp": zero, "tight": zero}
    k = 2 * iterations
    out: dict[str, Guarantee] = {
        "paper": advanced_composition(epsilon_iter, iterations, delta),
        "basic": basic_composition([PureDP(epsilon_iter * iterations), PureDP(epsilon_iter * iterations)]),
        "advanced": advanced_composition(epsilon_iter, k, delta),
        "optimal": optimal_composition(epsilon_iter, k, delta),
        "zcdp": zcdp_to_approx(_zcdp_sketch(epsilon_iter, iterations).rho, delta),
    }
    out["tight"] = tightest(out["basic"], out["advanced"], out["optimal"], out["zcdp"])
    return out


def auction_accounting(epsilon_auc: float, tau: int, delta: float) -> dict[str, Guarantee]:
    """Theorem 6's auction argument: τ bad rounds of ε_auc each (heuristic, see module docstring)."""
    out: dict[str, Guarantee] = {
        "paper": advanced_composition(epsilon_auc, tau, delta),
        "basic": basic_composition([PureDP(epsilon_auc)] * tau),
        "optimal": optimal_composition(epsilon_auc, tau, delta),
    }
    out["tight"] = tightest(out["basic"], out["optimal"])
    return out


def paper_auction_parameters(epsilon: float, delta: float, n_owners: int) -> tuple[float, int]:
    """Theorem 6: ε_auc = ε K^(−1/3) / (3√2 ln(1/δ)), τ = ⌈K^(2/3)⌉."""
    eps_auc = epsilon * n_owners ** (-1.0 / 3.0) / (3.0 * math.sqrt(2.0) * math.log(1.0 / delta))
    return eps_auc, max(1, math.ceil(n_owners ** (2.0 / 3.0) - 1e-9))


def expected_asks(n_bidders: int, epsilon_auc: float) -> float:
    """Expected owners asked in one round by the biased asking: Σ_{r=1..K} e^{−ε_auc (r−1)}."""
    if math.isinf(epsilon_auc):
        return 1.0 if n_bidders else 0.0
    return float(sum(math.exp(-epsilon_auc * r) for r in range(n_bidders)))


@dataclass(frozen=True)
class PrivateParams:
    """Per-mechanism parameters of the private protocol (planned by :func:`plan_private` or given)."""

    epsilon_target_iter: float
    epsilon_summary_iter: float
    epsilon_auc: float
    tau: int
    t_init: int
    t_sub: int
    delta: float
    epsilon_count: float | None = (
        None  # add/remove: ε of the discrete-Laplace target size (None: size public)
    )

    def accounting(self, n_summary_releases: int) -> dict:
        """Per-party guarantees: ``target`` (the consumer's D_v) and ``owners`` (each owner w.r.t. the others)."""
        half = self.delta / 2.0
        target = sketch_accounting(self.epsilon_target_iter, self.t_init, self.delta)
        if self.epsilon_count is not None:  # the noisy target size, released first (add/remove)
            target = {**target, "tight": basic_composition([target["tight"], PureDP(self.epsilon_count)])}
        summary = sketch_accounting(self.epsilon_summary_iter, self.t_sub * n_summary_releases, half)
        auction = auction_accounting(self.epsilon_auc, self.tau, half)
        owners = basic_composition([summary["tight"], auction["tight"]])
        return {
            "target": target["tight"],
            "owners": owners,
            "detail": {"target_sketch": target, "summary_sketches": summary, "auction": auction},
        }


def _solve_rho(epsilon: float, delta: float) -> float:
    """The largest ρ with zcdp_to_approx(ρ, δ).epsilon ≤ ε (bisection)."""
    lo, hi = 0.0, max(epsilon, 1.0)
    while zcdp_to_approx(hi, delta).epsilon <= epsilon:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if zcdp_to_approx(mid, delta).epsilon <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo * (1.0 - 1e-9)


def _per_iteration(epsilon: float, delta: float, iterations: int) -> float:
    """Per-mechanism ε so that ``iterations`` MWEM iterations fit in (ε, δ): best of basic and zCDP."""
    basic = epsilon / (2.0 * iterations)
    rho = _solve_rho(epsilon, delta)
    via_zcdp = math.sqrt(rho / (iterations * (1.0 / 8.0 + 1.0 / 2.0)))
    return max(basic, via_zcdp)


def plan_private(
    epsilon: float,
    delta: float,
    *,
    n_owners: int,
    size: int,
    n_features: int,
    t_init: int | None = None,
    t_sub: int = 5,
    auction_share: float = 0.5,
    sensitivity: int = 2,
) -> PrivateParams:
    """Split (ε, δ) for each party: all of it to the target sketch for the consumer (under add/remove,
    ``sensitivity=1``, a tenth to the noisy target size); for the owners a share ``auction_share`` to the
    auction (τ = ⌈K^(2/3)⌉) and the rest to the p − 1 summary sketches (δ halves)."""
    t_init = t_init if t_init is not None else int(n_features**1.5)
    eps_count = 0.1 * epsilon if sensitivity == 1 else None
    eps_v = _per_iteration(epsilon - (eps_count or 0.0), delta, t_init)
    releases = max(size - 1, 1)
    eps_s = _per_iteration(epsilon * (1.0 - auction_share), delta / 2.0, t_sub * releases)
    tau = max(1, math.ceil(n_owners ** (2.0 / 3.0) - 1e-9))
    eps_a_total = epsilon * auction_share
    rho_a = _solve_rho(eps_a_total, delta / 2.0)
    eps_auc = max(eps_a_total / tau, math.sqrt(2.0 * rho_a / tau))
    return PrivateParams(eps_v, eps_s, eps_auc, tau, t_init, t_sub, delta, eps_count)
