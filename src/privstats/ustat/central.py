"""Exact U-statistics (no privacy) and the central-model baseline.

The exact values are what the experiments compare against, what the central curator
releases with noise, and what the all-pairs 2PC baseline reduces to before noise.
All run in O(n log n) or O(n + k²); nothing enumerates pairs except ``exact_callable``
(chunked, for moderate n).

Central release: ``privstats.central.add_real_noise`` (snapped grid + exact discrete
Laplace) with the statistic's sensitivity under replace-one neighbouring.

>>> exact_auc([1, 2, 3], [0, 2], ties="zero")
0.6666666666666666
>>> round(exact_gini_mean_difference([1.0, 2.0, 4.0]), 4)
2.0
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from privstats.central import add_real_noise
from privstats.privacy.randomness import RNGLike

__all__ = [
    "central_release",
    "exact_auc",
    "exact_callable",
    "exact_collision",
    "exact_gini_mean_difference",
    "exact_kendall",
    "exact_matrix_two_sample",
    "exact_matrix_ustat",
]


def exact_auc(pos, neg, ties: str = "half") -> float:
    """Fraction of (positive, negative) pairs with s⁺ > s⁻; ties count ½ (``half``) or 0 (``zero``)."""
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    ranks = stats.rankdata(np.concatenate([pos, neg]))
    u_half = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2
    if ties == "half":
        return float(u_half / (pos.size * neg.size))
    vals, inv = np.unique(np.concatenate([pos, neg]), return_inverse=True)
    cp = np.bincount(inv[: pos.size], minlength=vals.size)
    cn = np.bincount(inv[pos.size :], minlength=vals.size)
    return float((u_half - 0.5 * float(cp @ cn)) / (pos.size * neg.size))


def exact_gini_mean_difference(x) -> float:
    """Σ_{i<j}|x_i − x_j| / C(n, 2) by sorting."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = s.size
    return float(2 * np.sum(s * (2 * np.arange(n) - n + 1)) / (n * (n - 1)))


def exact_kendall(y, z) -> dict:
    """Kendall's tau-a and tau-b, and the non-tie fractions of y and z (all U-statistics)."""
    y, z = np.asarray(y), np.asarray(z)
    n = y.size
    pairs = n * (n - 1) / 2

    def nontie(v):
        _, c = np.unique(v, return_counts=True)
        return 1 - float(np.sum(c * (c - 1.0)) / 2) / pairs

    ny, nz = nontie(y), nontie(z)
    tau_b = float(stats.kendalltau(y, z).statistic) if ny > 0 and nz > 0 else float("nan")
    tau_a = tau_b * math.sqrt(ny * nz) if ny > 0 and nz > 0 else 0.0
    return {"tau_a": tau_a, "tau_b": tau_b, "nontie_y": ny, "nontie_z": nz}


def exact_collision(values) -> float:
    """Fraction of pairs with equal values."""
    _, c = np.unique(np.asarray(values), return_counts=True)
    n = int(c.sum())
    return float(np.sum(c * (c - 1.0)) / (n * (n - 1)))


def exact_matrix_ustat(bins, A: np.ndarray) -> float:
    """U-statistic of the quantised kernel ``A`` on bin indices, from the histogram in O(n + k²)."""
    h = np.bincount(np.asarray(bins, dtype=np.int64), minlength=A.shape[0]).astype(np.float64)
    n = h.sum()
    return float((h @ A @ h - h @ np.diag(A)) / (n * (n - 1)))


def exact_matrix_two_sample(bins_pos, bins_neg, A: np.ndarray) -> float:
    """Two-sample statistic ``h⁺ᵀ A h⁻ / (n⁺n⁻)`` on bin indices."""
    hp = np.bincount(np.asarray(bins_pos, dtype=np.int64), minlength=A.shape[0]).astype(np.float64)
    hn = np.bincount(np.asarray(bins_neg, dtype=np.int64), minlength=A.shape[0]).astype(np.float64)
    return float(hp @ A @ hn / (hp.sum() * hn.sum()))


def exact_callable(x, kernel, *, max_n: int = 50_000, chunk: int = 2048) -> float:
    """Mean of ``kernel(x_i, x_j)`` over i < j, in chunks (O(n²) time; refuses n > max_n)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n > max_n:
        raise ValueError(
            f"an exact callable-kernel U-statistic enumerates pairs; n={n} exceeds {max_n} "
            "(pass a k×k matrix kernel to use the histogram)"
        )
    total = 0.0
    for start in range(0, n, chunk):
        a = x[start : start + chunk]
        vals = np.broadcast_to(
            np.asarray(kernel(a[:, None], x[None, :]), dtype=np.float64), (a.size, n)
        ).copy()
        idx = np.arange(start, start + a.size)
        vals[np.arange(a.size), idx] = 0.0
        total += vals.sum()
    return float(total / (n * (n - 1)))


def central_release(
    value: float, *, epsilon: float, sensitivity: float, rng: RNGLike = None
) -> tuple[float, float]:
    """(noisy value, noise std): exact discrete Laplace on a fine grid (replace-one sensitivity)."""
    noisy, std = add_real_noise(float(value), epsilon, sensitivity=float(sensitivity), rng=rng)
    return float(noisy), float(std)
