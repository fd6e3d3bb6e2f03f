"""Central-model building blocks: a trusted curator adds calibrated noise once.

Counts get exact discrete Laplace noise.  A real-valued statistic is snapped to a
grid of width ``granularity`` and gets discrete Laplace noise on the grid index;
snapping can move neighbouring values one extra grid step apart, so the noise is
calibrated to ``sensitivity / granularity + 1`` steps (no floating-point Laplace,
Mironov 2012).

>>> import numpy as np
>>> noisy = add_count_noise(np.array([10, 20]), epsilon=1.0, rng=0)
>>> noisy.dtype.kind
'i'
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from privstats.privacy.randomness import RNGLike
from privstats.privacy.samplers import discrete_laplace
from privstats.validation import check_epsilon

__all__ = ["add_count_noise", "add_real_noise", "discrete_laplace_variance", "real_noise_scale"]


_MAX_SCALE = 1 << 50  # the exact discrete Laplace sampler's limit
_MAX_GRID_INDEX = 2**51  # |value|/granularity below this: float rounding moves the index by < 1/4


def _scale(sensitivity: float, epsilon: float) -> Fraction:
    return Fraction(sensitivity) / Fraction(epsilon)


def _check_scale(scale: Fraction, epsilon: float) -> None:
    if scale >= _MAX_SCALE:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for this sensitivity: the noise scale "
            f"{float(scale):.3g} exceeds 2**50 (the output would be pure noise)"
        )


def add_count_noise(counts, epsilon: float, *, sensitivity: int = 1, rng: RNGLike = None) -> np.ndarray:
    """Integer ``counts`` plus exact discrete Laplace noise of scale sensitivity/ε (ε-DP)."""
    epsilon = check_epsilon(epsilon)
    if not isinstance(sensitivity, (int, np.integer)) or sensitivity < 1:
        raise ValueError(f"sensitivity must be a positive integer for counts, got {sensitivity!r}")
    c = np.asarray(counts.to_numpy() if hasattr(counts, "to_numpy") else counts)
    if c.dtype.kind not in "iu":
        raise ValueError(f"counts must be integers, got dtype {c.dtype}")
    if c.size and (c.max() > 2**62 or c.min() < -(2**62)):
        raise ValueError("counts must be below 2**62 in absolute value (int64 arithmetic)")
    scale = _scale(int(sensitivity), epsilon)
    _check_scale(scale, epsilon)
    noise = discrete_laplace(scale, size=c.shape if c.ndim else None, rng=rng)
    return c.astype(np.int64) + np.asarray(noise, dtype=np.int64)


def real_noise_scale(sensitivity: float, epsilon: float, granularity: float) -> tuple[Fraction, float]:
    """Discrete-Laplace scale (in grid steps) and the resulting noise standard deviation."""
    steps = Fraction(sensitivity) / Fraction(granularity) + 1
    scale = steps / Fraction(epsilon)
    return scale, granularity * math.sqrt(discrete_laplace_variance(float(scale)))


def add_real_noise(
    value, epsilon: float, *, sensitivity: float, granularity: float | None = None, rng: RNGLike = None
) -> tuple[np.ndarray | float, float]:
    """ε-DP release of a real statistic with the given L1 sensitivity.

    Returns ``(noisy_value, noise_std)``.  ``granularity`` defaults to sensitivity/2^20,
    which costs a relative 1e-6 more noise than continuous Laplace.
    """
    epsilon = check_epsilon(epsilon)
    if (
        isinstance(sensitivity, bool)
        or not isinstance(sensitivity, (numbers.Real, np.number))
        or not (math.isfinite(sensitivity) and sensitivity > 0)
    ):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
    sensitivity = float(sensitivity)
    gamma = sensitivity / 2**20 if granularity is None else float(granularity)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"granularity must be a finite number > 0, got {granularity!r}")
    v = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(v)):
        raise ValueError("value contains NaN or infinite values")
    scale, std = real_noise_scale(sensitivity, epsilon, gamma)
    _check_scale(scale, epsilon)
    # the grid index must be exact enough for the sensitivity bound (and fit int64): a public limit
    if v.size and np.max(np.abs(v)) / gamma >= _MAX_GRID_INDEX:
        raise ValueError(
            f"value is too large for granularity {gamma:.6g}: |value|/granularity must stay "
            f"below 2**51 (clip value to public bounds or pass a larger granularity)"
        )
    k = np.rint(v / gamma).astype(np.int64)
    noise = np.asarray(discrete_laplace(scale, size=v.shape if v.ndim else None, rng=rng), dtype=np.int64)
    out = (k + noise) * gamma
    return (float(out) if v.ndim == 0 else out), std


def discrete_laplace_variance(scale: float) -> float:
    """Variance of the discrete Laplace with P(x) ∝ exp(−|x|/scale): 2a/(1−a)², a = e^(−1/scale)."""
    a = math.exp(-1.0 / float(scale))
    return 2 * a / math.expm1(-1.0 / float(scale)) ** 2  # expm1: accurate for large scales
