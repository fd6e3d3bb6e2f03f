"""h1: random Fourier features for the RBF kernel, and exact-kernel MMD for evaluation.

``k(x, y) = exp(−γ‖x − y‖²)``.  The feature map (Rahimi–Recht) is
``h1(x) = √(2/d) · cos(ωᵀx + b)`` with ``ω ~ N(0, 2γ I)`` and ``b ~ U[0, 2π]``,
drawn once from a *public* seed shared by every party (it protects nothing).
``E[h1(x)ᵀh1(y)] = k(x, y)`` and each of the d terms ``2cos(ωᵀx+b)cos(ωᵀy+b)`` has
variance ``1 + k⁴/2 − k²``; Hoeffding gives
``P(|h1(x)ᵀh1(y) − k(x,y)| ≥ t) ≤ 2·exp(−d t²/8)`` (:func:`rff_tail_bound`).

The objective of the summarization paper (eq. 3) is
``J(S) = mean k(D_v, D_v) − MMD²(S, D_v)`` with the biased (V-statistic) MMD².

>>> import numpy as np
>>> X = np.random.default_rng(0).normal(size=(5, 3))
>>> h1 = RandomFourierFeatures(n_inputs=3, n_features=4000, gamma=0.5, seed=1)
>>> H = h1.transform(X)
>>> bool(np.abs(H @ H.T - rbf_kernel(X, X, 0.5)).max() < 0.1)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "RandomFourierFeatures",
    "marginal_gains",
    "mmd2",
    "objective",
    "rbf_kernel",
    "rff_tail_bound",
    "rff_term_variance",
]

_CHUNK = 4096


@dataclass(frozen=True)
class RandomFourierFeatures:
    """The shared map h1, reproducible from ``(n_inputs, n_features, gamma, seed)``."""

    n_inputs: int
    n_features: int
    gamma: float
    seed: int
    omega: np.ndarray = field(init=False, repr=False, compare=False)
    offset: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        gen = np.random.default_rng(int(self.seed))  # public randomness: a numpy PRNG is fine
        omega = gen.normal(0.0, math.sqrt(2.0 * self.gamma), size=(self.n_inputs, self.n_features))
        offset = gen.uniform(0.0, 2.0 * math.pi, size=self.n_features)
        object.__setattr__(self, "omega", omega)
        object.__setattr__(self, "offset", offset)

    @property
    def bound(self) -> float:
        """Every coordinate of h1(x) lies in [−bound, bound], bound = √(2/d)."""
        return math.sqrt(2.0 / self.n_features)

    def transform(self, X, dtype=np.float64) -> np.ndarray:
        """h1 of every row of ``X`` (chunked, so memory stays bounded)."""
        X = np.asarray(X, dtype=np.float64)
        out = np.empty((X.shape[0], self.n_features), dtype=dtype)
        scale = self.bound
        for start in range(0, X.shape[0], _CHUNK):
            z = X[start : start + _CHUNK] @ self.omega
            z += self.offset
            np.cos(z, out=z)
            z *= scale
            out[start : start + _CHUNK] = z
        return out


def rbf_kernel(X, Y, gamma: float) -> np.ndarray:
    """Exact ``exp(−γ‖x − y‖²)`` for all pairs of rows."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    sq = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2.0 * (X @ Y.T)
    np.maximum(sq, 0.0, out=sq)
    return np.exp(-gamma * sq)


def _mean_kernel(X, Y, gamma: float) -> float:
    total = 0.0
    for start in range(0, X.shape[0], _CHUNK):
        total += rbf_kernel(X[start : start + _CHUNK], Y, gamma).sum()
    return total / (X.shape[0] * Y.shape[0])


def mmd2(X, Y, gamma: float) -> float:
    """Biased (V-statistic) MMD² between the rows of X and Y under the exact RBF kernel.

    >>> import numpy as np
    >>> X = np.zeros((3, 2))
    >>> mmd2(X, X, 1.0)
    0.0
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    value = _mean_kernel(X, X, gamma) - 2.0 * _mean_kernel(X, Y, gamma) + _mean_kernel(Y, Y, gamma)
    return max(float(value), 0.0)


def objective(summary, target, gamma: float) -> float:
    """J(S) = mean k(D_v, D_v) − MMD²(S, D_v) (paper eq. 3); −inf for an empty summary."""
    summary = np.asarray(summary, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    if summary.shape[0] == 0:
        return -math.inf
    return 2.0 * _mean_kernel(summary, target, gamma) - _mean_kernel(summary, summary, gamma)


def marginal_gains(candidates, summary, target, gamma: float) -> np.ndarray:
    """Exact J(S ∪ {z}) − J(S) for every candidate row z (research note §1.4).

    ``(2/(s+1))·[a_z/m − b_z/(s+1)] − k(z,z)/(s+1)² + C(S)`` with ``a_z = Σ_y k(z,y)``,
    ``b_z = Σ_{x∈S} k(z,x)`` and ``C(S)`` independent of z.  For an empty summary the
    gain is J({z}) itself.
    """
    Z = np.asarray(candidates, dtype=np.float64)
    S = np.asarray(summary, dtype=np.float64).reshape(-1, Z.shape[1])
    V = np.asarray(target, dtype=np.float64)
    s, m = S.shape[0], V.shape[0]
    a = rbf_kernel(Z, V, gamma).sum(1)
    b = rbf_kernel(Z, S, gamma).sum(1) if s else np.zeros(Z.shape[0])
    gains = (2.0 / (s + 1)) * (a / m - b / (s + 1)) - 1.0 / (s + 1) ** 2
    if s:
        A = rbf_kernel(S, V, gamma).sum()
        B = rbf_kernel(S, S, gamma).sum()
        gains += (2.0 * A / m) * (1.0 / (s + 1) - 1.0 / s) - B * (1.0 / (s + 1) ** 2 - 1.0 / s**2)
    return gains


def rff_term_variance(k: float | np.ndarray) -> np.ndarray:
    """Variance of one term 2cos(ωᵀx+b)cos(ωᵀy+b) when k(x,y) = k: 1 + k⁴/2 − k²."""
    k = np.asarray(k, dtype=np.float64)
    return 1.0 + k**4 / 2.0 - k**2


def rff_tail_bound(n_features: int, t: float) -> float:
    """Hoeffding: P(|h1(x)ᵀh1(y) − k(x,y)| ≥ t) ≤ 2·exp(−d t²/8) for one fixed pair."""
    return min(1.0, 2.0 * math.exp(-n_features * t * t / 8.0))
