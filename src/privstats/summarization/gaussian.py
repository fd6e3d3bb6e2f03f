"""Discrete-Gaussian release of mean embeddings (research note §6.3(d)): the default sketch.

Each row ``h = h1(x)`` is clipped to the L2 ball of radius ``C`` (``clip_norm``; the
RFF bound ``‖h1(x)‖ ≤ √2`` means ``C = √2`` never clips) and stochastically rounded,
unbiasedly, to the integer lattice of step ``step = C / (resolution·√d)``, so that
``‖u‖₂ ≤ C/step + √d``.  The curator keeps the exact integer column sum ``U`` of the
rows and releases ``U + Y`` with ``Y_j`` independent exact discrete Gaussians
(:func:`privstats.privacy.samplers.discrete_gaussian`, scale σ in lattice units).
With L2 sensitivity ``Δ = k·(C/step + √d)`` (k = 2 for replace-one neighbours, 1 for
add/remove) one release is ``Δ²/(2σ²)``-zCDP (Canonne–Kamath–Steinke 2020, Thm. 14);
:func:`gaussian_accounting` composes the releases with the core accountant.

**Add/remove neighbours: the target size is not released.**  Under replace-one neighbours the
target size m is public (neighbouring targets have the same size) and the sketch is ``step·(U+Y)/m``.
Under add/remove, m is private, and dividing by it would release it *exactly*: ``U + Y`` is an integer
vector, so every coordinate of ``step·(U+Y)/m`` lies on the grid ``(step/m)·ℤ`` and an owner recovers m as
the smallest q with ``g̃·q/step`` integral in every coordinate (a test does this on the old code).  So the
curator first releases a noisy count ``m̃ = max(1, m + Z)``, ``Z`` an exact discrete Gaussian of scale
``count_sigma`` (L2 sensitivity 1: ``1/(2·count_sigma²)``-zCDP), and releases ``g̃ = step·(U+Y)/m̃``.

*Claim: nothing an owner sees (or the planner prints) reveals more about m than m̃ does.*  Proof: the
owners' whole view — the plan's choice and reason (:mod:`~privstats.summarization.planner` reads m̃,
not m), the Setup message with ``g̃`` and everything after it — is a deterministic function of the pair
``(U + Y, m + Z)`` and public parameters (step, σ, the lattice, the feature seed; the later rounds add the
owners' own data and the auction's coins, which do not depend on the target).  ``U + Y`` is
``ρ_s``-zCDP and ``m + Z`` is ``1/(2σ_c²)``-zCDP with respect to adding or removing one target row, so the
pair is their sum-zCDP (composition), and so is any function of it (post-processing) — including the grid
attack, which now recovers m̃ (a release) and nothing else.  :func:`gaussian_accounting` adds the count's ρ to
the target's.

Why (versus MWEM, research note P-num-1): the error of an owner's score
``gᵀh1(x)`` is one Gaussian of sd ``σ·step·‖h1(x)‖/q`` per release — it does not
saturate, and ``(σ·step)²/q²`` per coordinate is public, so the post-processing
below knows it exactly.

Post-processing (free): :func:`shrink` pulls the noisy mean toward a public prior
(the seed's exact mean and, for the selected rows, the target sketch g̃) by the
positive-part James–Stein factor ``max(0, 1 − (d−2)v/‖r − prior‖²)``, ``v`` the
per-coordinate noise variance of the mean.

>>> import numpy as np
>>> sk = GaussianSketch(n_features=4, clip_norm=1.0)
>>> U = sk.encode(np.full((10, 4), 0.25), rng=0).sum(0)
>>> sk.sigma_for(sk.rho_for(50.0)) == 50.0
True
>>> bool(np.abs(sk.release(U, 50.0, rng=1) / 10 - 0.25).max() < 0.05)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privstats.privacy import ZCDP, Guarantee, zcdp_composition, zcdp_to_approx
from privstats.privacy.randomness import RNGLike, as_source
from privstats.privacy.samplers import discrete_gaussian
from privstats.summarization.budget import check_sensitivity

__all__ = [
    "GaussianParams",
    "GaussianSketch",
    "count_sigma_for",
    "gaussian_accounting",
    "noisy_count",
    "plan_gaussian",
    "release_rounds",
    "shrink",
]


class GaussianSketch:
    """Lattice encoding and discrete-Gaussian release of a sum of h1 rows."""

    def __init__(
        self, n_features: int, clip_norm: float = math.sqrt(2.0), resolution: int = 256, sensitivity: int = 2
    ):
        if not (clip_norm > 0 and math.isfinite(clip_norm)):
            raise ValueError(f"clip_norm must be a positive number, got {clip_norm!r}")
        sensitivity = check_sensitivity(sensitivity)
        self.n_features = int(n_features)
        self.clip_norm = float(clip_norm)
        self.resolution = int(resolution)
        self.sensitivity = int(sensitivity)
        self.step = self.clip_norm / (self.resolution * math.sqrt(self.n_features))
        # ‖u‖₂ ≤ ‖h‖/step + ‖u − h/step‖₂ < C/step + √d
        self.l2_sensitivity = self.sensitivity * (self.clip_norm / self.step + math.sqrt(self.n_features))

    def encode(self, H, rng: RNGLike = None) -> np.ndarray:
        """Clip each row to norm C and round it unbiasedly to the lattice (integer rows)."""
        src = as_source(rng)
        H = np.atleast_2d(np.asarray(H, dtype=np.float64))
        norms = np.sqrt((H * H).sum(1, keepdims=True))
        scale = np.minimum(1.0, self.clip_norm / np.maximum(norms, 1e-300))
        y = H * scale / self.step
        k = np.floor(y)
        up = np.asarray(src.random(y.size)).reshape(y.shape) < (y - k)
        return (k + up).astype(np.int64)

    def rho_for(self, sigma: float) -> float:
        """zCDP ρ of one release with lattice-unit noise scale σ: Δ²/(2σ²)."""
        return self.l2_sensitivity**2 / (2.0 * sigma * sigma)

    def sigma_for(self, rho: float) -> float:
        """Lattice-unit σ that makes one release ρ-zCDP."""
        return self.l2_sensitivity / math.sqrt(2.0 * rho)

    def release(self, column_sums, sigma: float, rng: RNGLike = None) -> np.ndarray:
        """The noisy sum in h1 units: step·(U + Y), Y ~ discrete Gaussian(σ) per coordinate."""
        U = np.asarray(column_sums, dtype=np.int64)
        noise = discrete_gaussian(sigma, size=U.size, rng=as_source(rng))
        return self.step * (U + noise).astype(np.float64)


def shrink(noisy_mean, prior, noise_variance: float) -> tuple[np.ndarray, float]:
    """Positive-part James–Stein toward ``prior`` (public); returns the estimate and the factor λ.

    >>> g, lam = shrink(np.array([3.0, 4.0, 0.0]), np.zeros(3), noise_variance=25.0)
    >>> lam, g.tolist()
    (0.0, [0.0, 0.0, 0.0])
    """
    r = np.asarray(noisy_mean, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    diff = r - prior
    ss = float(diff @ diff)
    lam = 0.0 if ss == 0.0 else max(0.0, 1.0 - (r.size - 2) * noise_variance / ss)
    return prior + lam * diff, lam


COUNT_SHARE = 0.1  # share of the target's zCDP ρ spent on the noisy target size (add/remove only)


def count_sigma_for(epsilon: float, delta: float, share: float = COUNT_SHARE) -> float:
    """Scale of the discrete Gaussian on the target size when it takes ``share`` of the ρ of (ε, δ).

    >>> round(count_sigma_for(1.0, 1e-5), 1)
    12.8
    """
    from privstats.summarization.budget import _solve_rho

    return 1.0 / math.sqrt(2.0 * share * _solve_rho(epsilon, delta))


def noisy_count(n: int, sigma: float, rng: RNGLike = None) -> int:
    """``max(1, n + Z)``, Z an exact discrete Gaussian of scale σ: the released target size (add/remove).

    >>> noisy_count(50, 1e-9, rng=0)
    50
    """
    return max(1, int(n) + int(discrete_gaussian(sigma, rng=as_source(rng))))


def release_rounds(size: int, release_every: int) -> list[int]:
    """Rounds (1-based) at which the summary sketch is released: 2, 2+B, 2+2B, … ≤ size; none for B = 0.

    Round 1 broadcasts the public seed's exact mean (nothing selected yet).

    >>> release_rounds(10, 3), release_rounds(10, 0)
    ([2, 5, 8], [])
    """
    if int(release_every) == 0:
        return []
    return list(range(2, size + 1, int(release_every)))


@dataclass(frozen=True)
class GaussianParams:
    """Discrete-Gaussian sketch parameters: lattice-unit σ of the target sketch and of each summary release,
    the release period, the clipping norm and lattice resolution, and the auction's ε_auc, τ and δ."""

    target_sigma: float
    summary_sigmas: tuple[float, ...]
    release_every: int
    clip_norm: float
    resolution: int
    epsilon_auc: float
    tau: int
    delta: float
    shrinkage: bool = True
    count_sigma: float | None = None  # add/remove: scale of the noise on the target size (None: size public)

    def sketch(self, n_features: int, sensitivity: int) -> GaussianSketch:
        return GaussianSketch(n_features, self.clip_norm, self.resolution, sensitivity)

    def accounting(self, n_features: int, sensitivity: int) -> dict:
        """Per-party guarantees, like :meth:`privstats.summarization.budget.PrivateParams.accounting`."""
        return gaussian_accounting(self, n_features, sensitivity)


def gaussian_accounting(params: GaussianParams, n_features: int, sensitivity: int) -> dict:
    """zCDP of every release, composed and converted by :mod:`privstats.privacy` (nothing asserted)."""
    from privstats.privacy import basic_composition
    from privstats.summarization.budget import auction_accounting

    sk = params.sketch(n_features, sensitivity)
    target_z = ZCDP(sk.rho_for(params.target_sigma))
    if params.count_sigma is not None:  # the noisy target size, released first (add/remove)
        target_z = zcdp_composition([target_z, ZCDP(1.0 / (2.0 * params.count_sigma**2))])
    summary_z = (
        zcdp_composition([ZCDP(sk.rho_for(s)) for s in params.summary_sigmas])
        if params.summary_sigmas
        else ZCDP(0.0)
    )
    half = params.delta / 2.0
    target: Guarantee = zcdp_to_approx(target_z.rho, params.delta)
    summary: Guarantee = zcdp_to_approx(summary_z.rho, half)
    auction = auction_accounting(params.epsilon_auc, params.tau, half)
    owners = basic_composition([summary, auction["tight"]])
    return {
        "target": target,
        "owners": owners,
        "detail": {
            "target_sketch": {"zcdp": target_z, "tight": target},
            "summary_sketches": {"zcdp": summary_z, "tight": summary, "releases": len(params.summary_sigmas)},
            "auction": auction,
        },
    }


def plan_gaussian(
    epsilon: float,
    delta: float,
    *,
    n_owners: int,
    size: int,
    n_features: int,
    sensitivity: int = 2,
    release_every: int = 0,
    clip_norm: float = math.sqrt(2.0),
    resolution: int = 256,
    auction_share: float = 0.25,
    shrinkage: bool = False,
    count_share: float = COUNT_SHARE,
) -> GaussianParams:
    """Split (ε, δ) per party: the whole of it to the target sketch (the consumer's party; under add/remove,
    ``sensitivity=1``, a share ``count_share`` of its ρ to the noisy target size); for each owner
    ``auction_share`` of ε to the auction (τ = ⌈K^(2/3)⌉, δ/2) and the rest to the summary releases (δ/2),
    split evenly in ρ over the releases of :func:`release_rounds`."""
    from privstats.summarization.budget import _solve_rho

    sk = GaussianSketch(n_features, clip_norm, resolution, sensitivity)
    rho_target = _solve_rho(epsilon, delta)
    count_sigma = None
    if sensitivity == 1:
        count_sigma = count_sigma_for(epsilon, delta, count_share)
        rho_target -= 1.0 / (2.0 * count_sigma**2)
    target_sigma = sk.sigma_for(rho_target)
    n_rel = len(release_rounds(size, release_every))
    sigmas: tuple[float, ...] = ()
    if n_rel:
        rho_each = _solve_rho(epsilon * (1.0 - auction_share), delta / 2.0) / n_rel
        sigmas = (sk.sigma_for(rho_each),) * n_rel
    tau = max(1, math.ceil(n_owners ** (2.0 / 3.0) - 1e-9))
    eps_a_total = epsilon * auction_share if n_rel else epsilon  # no summary release: all to the auction
    rho_a = _solve_rho(eps_a_total, delta / 2.0)
    eps_auc = max(eps_a_total / tau, math.sqrt(2.0 * rho_a / tau))
    return GaussianParams(
        target_sigma,
        sigmas,
        int(release_every),
        float(clip_norm),
        int(resolution),
        eps_auc,
        tau,
        delta,
        bool(shrinkage),
        count_sigma,
    )
