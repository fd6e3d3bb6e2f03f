"""Choosing between the private sketch and uniform sampling from public parameters only.

The default private protocol's only data-dependent broadcast is the target sketch g̃ (the
consumer's mean embedding plus discrete-Gaussian noise, :mod:`~privstats.summarization.gaussian`).
An owner's bid for a row ``x`` is ``g̃ᵀh1(x)``: the signal ``mean_y k(x, y)`` plus a Gaussian error
of sd ``τ = σ·step·‖h1(x)‖/m`` (``‖h1(x)‖ ≈ 1``), known exactly from ε, δ, the target size m, the
sensitivity and the clipping norm — it does not depend on the number of random features.

What the bids can tell apart is the spread of the signal over the owners' rows.  It depends on
the data, so the planner uses the public reference the bandwidth already assumes (features
standardised with public statistics, γ public): rows and target from the same standard normal
in ``n_inputs`` dimensions.  Then ``s(x) = E_y k(x, y)`` has the exact standard deviation

    S = sqrt( ((1+2γ)(1+6γ))^(−D/2) − (1+4γ)^(−D) ),   D = n_inputs.

This is the case where uniform sampling is already best (no shift), so it is the worst case for
the sketch.  When ``τ ≥ S`` the bids mostly follow the noise.  The auction then fetches rows
along a random direction of the feature space, and the summary is worse than a uniform sample
(measured: ``experiments/summarization_fallback.py``, table in ``experiments/summarization.md``).
The planner then **falls back to uniform sampling**.  It is data-independent, so it spends no
privacy budget.  Nothing here reads any data: the decision is a function of
(ε, δ, m, n_inputs, γ, n_features, clip_norm, sensitivity).

>>> plan = plan_summary(1.0, 1e-5, n_target=60, n_inputs=10, gamma=0.1, n_owners=4, size=50,
...                     n_features=256)
>>> plan.choice, round(plan.bid_noise_sd, 3), round(plan.score_spread, 3)
('uniform', 0.144, 0.061)
>>> plan_summary(1.0, 1e-5, n_target=600, n_inputs=10, gamma=0.1, n_owners=4, size=50,
...              n_features=256).choice
'sketch'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privstats.summarization.gaussian import GaussianParams, GaussianSketch, plan_gaussian

__all__ = ["SummaryPlan", "bid_noise_sd", "plan_clip_norm", "plan_summary", "reference_score_spread"]


def plan_clip_norm(n_features: int) -> float:
    """Clipping norm of the h1 rows: 3 standard deviations above their typical norm, capped at √2.

    ``‖h1(x)‖² = 1 + (1/d)·Σ_j cos(2(ω_jᵀx + b_j))``: mean 1, variance ``1/(2d)`` (the terms are
    independent, each of variance 1/2).  Clipping at ``C = √(1 + 3/√(2d))`` touches about 0.1 % of
    the rows, by a few per cent.  The noise is proportional to C, so it is ``√2/C`` times smaller
    than with ``C = √2``, which never clips (1.33 times at d = 256).

    >>> round(plan_clip_norm(256), 3), plan_clip_norm(2) == math.sqrt(2.0)
    (1.064, True)
    """
    return min(math.sqrt(2.0), math.sqrt(1.0 + 3.0 / math.sqrt(2.0 * int(n_features))))


def reference_score_spread(n_inputs: int, gamma: float) -> float:
    """Standard deviation of ``E_y exp(−γ‖x − y‖²)`` over ``x``, with x, y ~ N(0, I_D) (exact).

    >>> round(reference_score_spread(10, 0.1), 4)
    0.0613
    """
    d, g = float(n_inputs), float(gamma)
    second = ((1.0 + 2.0 * g) * (1.0 + 6.0 * g)) ** (-d / 2.0)
    first = (1.0 + 4.0 * g) ** (-d / 2.0)
    return math.sqrt(max(second - first * first, 0.0))


def bid_noise_sd(params: GaussianParams, *, n_features: int, sensitivity: int, n_target: int) -> float:
    """Standard deviation of the target sketch's error in a bid ``g̃ᵀh1(x)`` with ``‖h1(x)‖ = 1``.

    The per-coordinate error of the released mean is ``σ·step/m`` (lattice σ, h1 units per step).
    """
    sk = GaussianSketch(n_features, params.clip_norm, params.resolution, sensitivity)
    return params.target_sigma * sk.step / int(n_target)


@dataclass(frozen=True)
class SummaryPlan:
    """The planner's choice (``"sketch"`` or ``"uniform"``), why, and the numbers behind it."""

    choice: str
    reason: str
    bid_noise_sd: float
    score_spread: float
    params: GaussianParams

    @property
    def snr(self) -> float:
        """Signal spread over bid noise, S/τ (the sketch is used when it is above 1)."""
        return self.score_spread / self.bid_noise_sd if self.bid_noise_sd > 0 else math.inf

    def to_dict(self) -> dict:
        """The plan's numbers and choice (its Gaussian parameters left out), with the rule it applied."""
        named = {k: getattr(self, k) for k in ("choice", "reason", "bid_noise_sd", "score_spread", "snr")}
        return {**named, "rule": "uniform when bid_noise_sd >= score_spread (public parameters only)"}


def plan_summary(
    epsilon: float,
    delta: float,
    *,
    n_target: int,
    n_inputs: int,
    gamma: float,
    n_owners: int,
    size: int,
    n_features: int,
    sensitivity: int = 2,
    release_every: int = 0,
    clip_norm: float | None = None,
    auction_share: float = 0.25,
    shrinkage: bool = False,
) -> SummaryPlan:
    """Plan the Gaussian sketch (:func:`~privstats.summarization.gaussian.plan_gaussian`) and compare
    its bid noise τ with the reference signal spread S: ``"sketch"`` if τ < S, else ``"uniform"``.

    Under add/remove neighbours (``sensitivity=1``) the target size is private: pass the *released*
    noisy size (:func:`~privstats.summarization.gaussian.noisy_count`) as ``n_target``; the choice, τ and
    the reason then depend on it only.

    Summary releases (``release_every > 0``) only add noise to the owners' bids, so the rule,
    stated for the target sketch, is necessary for them too.  ``clip_norm`` None:
    :func:`plan_clip_norm`.
    """
    if clip_norm is None:
        clip_norm = plan_clip_norm(n_features)
    params = plan_gaussian(
        epsilon,
        delta,
        n_owners=n_owners,
        size=size,
        n_features=n_features,
        sensitivity=sensitivity,
        release_every=release_every,
        clip_norm=clip_norm,
        auction_share=auction_share,
        shrinkage=shrinkage,
    )
    tau = bid_noise_sd(params, n_features=n_features, sensitivity=sensitivity, n_target=n_target)
    spread = reference_score_spread(n_inputs, gamma)
    rows = f"{n_target} target rows" if sensitivity == 2 else f"a noisy target size of {n_target}"
    if tau < spread:
        choice = "sketch"
        reason = (
            f"target sketch noise in a bid (sd {tau:.3g}) is below the spread of the bids' signal "
            f"on standardised data ({spread:.3g}): the private sketch is expected to beat uniform"
        )
    else:
        choice = "uniform"
        reason = (
            f"target too small for the budget: sketch noise in a bid (sd {tau:.3g}, {rows} "
            f"at epsilon={epsilon:g}) is at least the spread of the bids' signal on standardised "
            f"data ({spread:.3g}); the sketch is expected to be no better than uniform sampling, "
            "which spends no privacy budget"
        )
    return SummaryPlan(choice, reason, tau, spread, params)
