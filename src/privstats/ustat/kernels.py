"""Kernels of degree-2 U-statistics and their quantised matrices.

A quantised kernel is a k×k matrix ``A`` with ``A[i, j]`` standing for the kernel
on bin i × bin j of ``[0, 1]`` (k equal bins; the data is mapped to ``[0, 1]`` with
public bounds and binned by ``floor(u·k)``, clipped to ``k − 1``).  Three ways to
build it (Bell et al. 2020, §3; see ``seed-ustat.md`` P-A5):

* ``"mid"`` — midpoint kernel (Eq. 14): ½(max + min) of f over the cell (best
  worst case for Lipschitz kernels);
* ``"avg"`` — average kernel (Eq. 15): the mean of f over the cell (smooth data);
* ``"center"`` — f at the bin centres (biased on the diagonal for Gini).

Closed forms are used where they exist; otherwise a deterministic grid (``mid``)
or seeded Monte Carlo (``avg``).

>>> gini_matrix(4, "avg")[0].round(4).tolist()
[0.0833, 0.25, 0.5, 0.75]
>>> auc_matrix(3, ties="half").tolist()
[[0.5, 0.0, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.5]]
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = [
    "QUANTISATIONS",
    "quantize",
    "bin_centres",
    "gini_matrix",
    "auc_matrix",
    "kendall_matrix",
    "kendall_tie_matrices",
    "collision_matrix",
    "matrix_from_callable",
    "check_kernel_matrix",
]

QUANTISATIONS = ("mid", "avg", "center")


def quantize(values: np.ndarray, bounds: tuple[float, float], k: int) -> np.ndarray:
    """Bin index ``floor((v − lo)/(hi − lo)·k)`` clipped to ``[0, k − 1]`` (MSB-first, as P-B1)."""
    lo, hi = bounds
    u = (np.asarray(values, dtype=np.float64) - lo) / (hi - lo)
    return np.clip(np.floor(u * k), 0, k - 1).astype(np.int64)


def bin_centres(k: int) -> np.ndarray:
    """Centres ``(2l + 1)/(2k)`` of the k equal bins of [0, 1]."""
    return (2 * np.arange(k) + 1) / (2.0 * k)


def gini_matrix(k: int, how: str = "avg") -> np.ndarray:
    """Quantised ``|x − y|`` on [0, 1]: ``|i − j|/k`` off the diagonal; diagonal 1/(2k), 1/(3k) or 0."""
    i = np.arange(k)
    a = np.abs(i[:, None] - i[None, :]) / k
    diag = {"mid": 1 / (2 * k), "avg": 1 / (3 * k), "center": 0.0}[how]
    a[i, i] = diag
    return a


def auc_matrix(k: int, ties: str = "half") -> np.ndarray:
    """``A[i, j] = I[i > j]`` plus ½ on the diagonal if ``ties == "half"`` (two-sample, rows positive)."""
    i = np.arange(k)
    a = (i[:, None] > i[None, :]).astype(np.float64)
    if ties == "half":
        a[i, i] = 0.5
    return a


def kendall_matrix(ky: int, kz: int) -> np.ndarray:
    """Sign-product kernel on the product grid (category ``y·kz + z``): sign(Δy)·sign(Δz)."""
    y = np.repeat(np.arange(ky), kz)
    z = np.tile(np.arange(kz), ky)
    return np.sign(y[:, None] - y[None, :]) * np.sign(z[:, None] - z[None, :]).astype(np.float64)


def kendall_tie_matrices(ky: int, kz: int) -> tuple[np.ndarray, np.ndarray]:
    """Kernels ``I[y_i ≠ y_j]`` and ``I[z_i ≠ z_j]`` on the product grid (tau-b's denominator)."""
    y = np.repeat(np.arange(ky), kz)
    z = np.tile(np.arange(kz), ky)
    return (y[:, None] != y[None, :]).astype(np.float64), (z[:, None] != z[None, :]).astype(np.float64)


def collision_matrix(k: int) -> np.ndarray:
    """``I[x = y]`` on a discrete domain of size k."""
    return np.eye(k)


def matrix_from_callable(f: Callable[[np.ndarray, np.ndarray], np.ndarray], k: int, how: str = "avg", *,
                         samples: int = 16, seed: int = 0) -> np.ndarray:
    """Quantised matrix of a vectorized kernel ``f(x, y)`` on [0, 1]², symmetrised.

    ``mid`` uses a ``samples × samples`` grid including the cell corners; ``avg`` uses
    ``samples²`` seeded uniform draws per cell; ``center`` evaluates at bin centres.
    """
    if how == "center":
        c = bin_centres(k)
        a = np.broadcast_to(np.asarray(f(c[:, None], c[None, :]), dtype=np.float64), (k, k))
    else:
        if how == "mid":
            t = np.linspace(0.0, 1.0, samples)
            off_x, off_y = np.meshgrid(t, t, indexing="ij")
            off_x, off_y = off_x.ravel(), off_y.ravel()
        else:
            g = np.random.default_rng(seed)
            off_x, off_y = g.random(samples * samples), g.random(samples * samples)
        i = np.arange(k)
        # x[i, j, s] = (i + off_x[s]) / k, y[i, j, s] = (j + off_y[s]) / k
        x = (i[:, None, None] + off_x[None, None, :]) / k
        y = (i[None, :, None] + off_y[None, None, :]) / k
        shape = (k, k, off_x.size)
        vals = np.broadcast_to(np.asarray(f(np.broadcast_to(x, shape), np.broadcast_to(y, shape)), dtype=np.float64),
                               shape)
        a = 0.5 * (vals.max(axis=2) + vals.min(axis=2)) if how == "mid" else vals.mean(axis=2)
    if a.shape != (k, k) or not np.all(np.isfinite(a)):
        raise ValueError("kernel must be a vectorized callable returning finite values of the broadcast shape")
    return 0.5 * (a + a.T)


def check_kernel_matrix(a, name: str = "kernel") -> np.ndarray:
    """A finite square matrix, symmetrised as (A + Aᵀ)/2 (one-sample U-statistics)."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise ValueError(f"{name} must be a square k×k matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return 0.5 * (arr + arr.T)
