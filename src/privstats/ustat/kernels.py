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

from collections.abc import Callable

import numpy as np

__all__ = [
    "GMD_QUANTISATIONS",
    "QUANTISATIONS",
    "auc_matrix",
    "bin_centres",
    "check_kernel_matrix",
    "collision_matrix",
    "gini_matrix",
    "kendall_matrix",
    "kendall_tie_matrices",
    "linear_auc_correction",
    "matrix_from_callable",
    "quantize",
]

QUANTISATIONS = ("mid", "avg", "center")
# the local Gini mean difference also takes "dither": "center" on a grid shifted by a public uniform
# fraction of a cell, which makes the binned value unbiased for any data
GMD_QUANTISATIONS = ("dither", *QUANTISATIONS)


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


def matrix_from_callable(
    f: Callable[[np.ndarray, np.ndarray], np.ndarray],
    k: int,
    how: str = "avg",
    *,
    samples: int = 16,
    seed: int = 0,
) -> np.ndarray:
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
            off_x, off_y = off_x.ravel(), off_y.ravel()  # type: ignore[assignment]
        else:
            g = np.random.default_rng(seed)
            off_x, off_y = g.random(samples * samples), g.random(samples * samples)
        i = np.arange(k)
        # x[i, j, s] = (i + off_x[s]) / k, y[i, j, s] = (j + off_y[s]) / k
        x = (i[:, None, None] + off_x[None, None, :]) / k
        y = (i[None, :, None] + off_y[None, None, :]) / k
        shape = (k, k, off_x.size)
        vals = np.broadcast_to(
            np.asarray(f(np.broadcast_to(x, shape), np.broadcast_to(y, shape)), dtype=np.float64), shape
        )
        a = 0.5 * (vals.max(axis=2) + vals.min(axis=2)) if how == "mid" else vals.mean(axis=2)
    if a.shape != (k, k) or not np.all(np.isfinite(a)):
        raise ValueError(
            "kernel must be a vectorized callable returning finite values of the broadcast shape"
        )
    return 0.5 * (a + a.T)


def check_kernel_matrix(a, name: str = "kernel") -> np.ndarray:
    """A finite square matrix, symmetrised as (A + Aᵀ)/2 (one-sample U-statistics)."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise ValueError(f"{name} must be a square k×k matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return 0.5 * (arr + arr.T)


# ---------------------------------------------------------------------------------------------
# Structured kernels: A·v, Aᵀ·v and A∘A without the k×k matrix (O(k) memory and time)
# ---------------------------------------------------------------------------------------------
class KernelOperator:
    """A k×k kernel matrix known through ``matvec``/``rmatvec`` (and ``squared()`` = A∘A, ``diagonal()``).

    Protocol A's estimate and exact variance only need these (see ``privstats.ustat.quantized``).

    >>> op = AUCOperator(3, ties="half")
    >>> op.matvec(np.array([1.0, 2.0, 4.0])).tolist()
    [0.5, 2.0, 5.0]
    >>> bool(np.array_equal(op.to_dense(), auc_matrix(3, "half")))
    True
    """

    k: int

    def matvec(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def diagonal(self) -> np.ndarray:
        raise NotImplementedError

    def squared(self) -> KernelOperator:
        """The elementwise square A∘A."""
        raise NotImplementedError

    def symmetrized(self) -> KernelOperator:
        """(A + Aᵀ)/2, the kernel a one-sample U-statistic actually uses."""
        raise NotImplementedError

    def to_dense(self) -> np.ndarray:
        """The k×k matrix (small k only; cross-checks)."""
        return np.stack([self.matvec(e) for e in np.eye(self.k)], axis=1)


def _step_apply(v: np.ndarray, lower: float, diag: float, upper: float) -> np.ndarray:
    """(M v)_a for M_ab = lower·I[b<a] + diag·I[a=b] + upper·I[b>a], along the last axis, O(k)."""
    c = np.cumsum(v, axis=-1)
    below = c - v  # Σ_{b<a}
    above = c[..., -1:] - c  # Σ_{b>a}
    return lower * below + diag * v + upper * above


class StepOperator(KernelOperator):
    """``A_ab = lower·I[a>b] + diag·I[a=b] + upper·I[a<b]``: the AUC step (1, ½ or 0, 0), the identity
    (0, 1, 0; collision), sign(a−b) (1, 0, −1), I[a≠b] (1, 0, 1), all ones (1, 1, 1)."""

    def __init__(self, k: int, lower: float, diag: float, upper: float):
        self.k, self.lower, self.diag, self.upper = int(k), float(lower), float(diag), float(upper)

    def matvec(self, v):
        return _step_apply(np.asarray(v, dtype=np.float64), self.lower, self.diag, self.upper)

    def rmatvec(self, v):
        return _step_apply(np.asarray(v, dtype=np.float64), self.upper, self.diag, self.lower)

    def diagonal(self):
        return np.full(self.k, self.diag)

    def squared(self):
        return StepOperator(self.k, self.lower**2, self.diag**2, self.upper**2)

    def symmetrized(self):
        half = (self.lower + self.upper) / 2
        return StepOperator(self.k, half, self.diag, half)


class BandStepOperator(StepOperator):
    """A :class:`StepOperator` with its first sub- and super-diagonal shifted by ``sub`` / ``sup``
    (``A[b+1, b] += sub[b]``, ``A[b, b+1] += sup[b]``): still O(k) for A·v, Aᵀ·v and A∘A."""

    def __init__(self, k: int, lower: float, diag: float, upper: float, sub, sup):
        super().__init__(k, lower, diag, upper)
        self.sub = np.asarray(sub, dtype=np.float64).reshape(-1)
        self.sup = np.asarray(sup, dtype=np.float64).reshape(-1)
        if self.sub.size != self.k - 1 or self.sup.size != self.k - 1:
            raise ValueError(f"sub and sup must have length k - 1 = {self.k - 1}")

    def matvec(self, v):
        v = np.asarray(v, dtype=np.float64)
        out = super().matvec(v)
        out[1:] += self.sub * v[:-1]
        out[:-1] += self.sup * v[1:]
        return out

    def rmatvec(self, v):
        v = np.asarray(v, dtype=np.float64)
        out = super().rmatvec(v)
        out[:-1] += self.sub * v[1:]
        out[1:] += self.sup * v[:-1]
        return out

    def squared(self):
        lo, up = self.lower, self.upper
        return BandStepOperator(
            self.k, lo**2, self.diag**2, up**2, (lo + self.sub) ** 2 - lo**2, (up + self.sup) ** 2 - up**2
        )

    def symmetrized(self):
        half = (self.lower + self.upper) / 2
        band = (self.lower + self.sub + self.upper + self.sup) / 2 - half
        return BandStepOperator(self.k, half, self.diag, half, band, band)


def linear_auc_correction(k: int) -> np.ndarray:
    """Sub-diagonal shift of the AUC step kernel that removes its quantisation bias for class densities
    linear on [0, 1] (``sup`` is its negative).

    A pair in the same bin counts ½; with densities f⁺, f⁻ the true share there is ½ + (f⁺′f⁻ − f⁺f⁻′)h³/12
    per bin (exact for linear densities).  Estimating each class's slope (in probability units per bin)
    by the central difference (p_{b+1} − p_{b−1})/2 (one-sided at the two edge bins) turns this into the
    bilinear term ``pᵀ(Dᵀ − D)q/12``, D the slope operator: an antisymmetric band on the two diagonals
    next to the main one.

    >>> (linear_auc_correction(4) * 12).tolist()
    [1.5, 1.0, 1.5]
    """
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    b = np.arange(k - 1)
    up = np.where(b == 0, 1.0, 0.5)  # D[b, b+1]: one-sided difference in the first bin
    down = np.where(b + 1 == k - 1, 1.0, 0.5)  # −D[b+1, b]: one-sided in the last bin
    return (up + down) / 12


def AUCOperator(k: int, ties: str = "half", smoothing: str = "none") -> StepOperator:
    """Structured :func:`auc_matrix`; ``smoothing="linear"`` (ties ½) adds :func:`linear_auc_correction`."""
    if smoothing == "none":
        return StepOperator(k, 1.0, 0.5 if ties == "half" else 0.0, 0.0)
    if smoothing != "linear" or ties != "half":
        raise ValueError(f"smoothing must be 'none' or 'linear' (with ties='half'), got {smoothing!r}")
    c = linear_auc_correction(k)
    return BandStepOperator(k, 1.0, 0.5, 0.0, c, -c)


def CollisionOperator(k: int) -> StepOperator:
    """Structured :func:`collision_matrix` (the identity)."""
    return StepOperator(k, 0.0, 1.0, 0.0)


class GiniOperator(KernelOperator):
    """Structured :func:`gini_matrix`: ``|a − b|/k`` off the diagonal (prefix sums of v and b·v)."""

    def __init__(self, k: int, how: str = "avg", power: int = 1):
        self.k, self.how, self.power = int(k), how, power
        self.diag = {"mid": 1 / (2 * k), "avg": 1 / (3 * k), "center": 0.0}[how] ** power

    def matvec(self, v):
        v = np.asarray(v, dtype=np.float64)
        k = self.k
        a = np.arange(k, dtype=np.float64) - (k - 1) / 2  # centred indices: less cancellation
        if self.power == 2:  # Σ_b (a − b)² v_b = a²Σv − 2aΣbv + Σb²v (the diagonal term is 0)
            out = (a * a * v.sum() - 2 * a * (a @ v) + (a * a) @ v) / k**2
        else:  # Σ_{b<a}(a − b)v_b + Σ_{b>a}(b − a)v_b
            below0, below1 = _step_apply(v, 1, 0, 0), _step_apply(a * v, 1, 0, 0)
            above0, above1 = _step_apply(v, 0, 0, 1), _step_apply(a * v, 0, 0, 1)
            out = (a * below0 - below1 + above1 - a * above0) / k
        return out + self.diag * v

    rmatvec = matvec

    def diagonal(self):
        return np.full(self.k, self.diag)

    def squared(self):
        if self.power != 1:
            raise NotImplementedError("only A∘A of the Gini kernel is needed")
        return GiniOperator(self.k, self.how, power=2)

    def symmetrized(self):
        return self


class KronOperator(KernelOperator):
    """``Σ_t c_t · (P_t ⊗ Q_t)`` on a product grid (category ``y·kz + z``), each factor a
    :class:`StepOperator`; Kendall's sign product is ``sign ⊗ sign``, its tie kernels
    ``I[≠] ⊗ 1`` and ``1 ⊗ I[≠]``.  A∘A is again such a sum (pairwise products of terms)."""

    def __init__(self, ky: int, kz: int, terms):
        self.ky, self.kz, self.k = int(ky), int(kz), int(ky) * int(kz)
        self.terms = [(float(c), p, q) for c, p, q in terms]

    def _apply(self, v, transpose):
        V = np.asarray(v, dtype=np.float64).reshape(self.ky, self.kz)
        out = np.zeros_like(V)
        for c, p, q in self.terms:
            lo_p, up_p = (p.upper, p.lower) if transpose else (p.lower, p.upper)
            lo_q, up_q = (q.upper, q.lower) if transpose else (q.lower, q.upper)
            W = _step_apply(V, lo_q, q.diag, up_q)  # along z
            out += c * _step_apply(W.T, lo_p, p.diag, up_p).T  # along y
        return out.reshape(-1)

    def matvec(self, v):
        return self._apply(v, False)

    def rmatvec(self, v):
        return self._apply(v, True)

    def diagonal(self):
        return np.full(self.k, sum(c * p.diag * q.diag for c, p, q in self.terms))

    def squared(self):
        def prod(s, t):
            return StepOperator(s.k, s.lower * t.lower, s.diag * t.diag, s.upper * t.upper)

        return KronOperator(
            self.ky,
            self.kz,
            [(c1 * c2, prod(p1, p2), prod(q1, q2)) for c1, p1, q1 in self.terms for c2, p2, q2 in self.terms],
        )

    def symmetrized(self):
        def t(p):
            return StepOperator(p.k, p.upper, p.diag, p.lower)

        return KronOperator(
            self.ky,
            self.kz,
            [(c / 2, p, q) for c, p, q in self.terms] + [(c / 2, t(p), t(q)) for c, p, q in self.terms],
        )

    def combine(self, *weighted) -> KronOperator:
        """``c0·self + Σ c_i·op_i`` for ``weighted = (c0, (c1, op1), ...)``."""
        c0, rest = weighted[0], weighted[1:]
        terms = [(c0 * c, p, q) for c, p, q in self.terms]
        for c, op in rest:
            terms += [(c * ci, p, q) for ci, p, q in op.terms]
        return KronOperator(self.ky, self.kz, terms)


def KendallOperator(ky: int, kz: int) -> KronOperator:
    """Structured :func:`kendall_matrix`: sign(Δy)·sign(Δz)."""
    return KronOperator(ky, kz, [(1.0, StepOperator(ky, 1, 0, -1), StepOperator(kz, 1, 0, -1))])


def kendall_tie_operators(ky: int, kz: int) -> tuple[KronOperator, KronOperator]:
    """Structured :func:`kendall_tie_matrices`: I[y ≠ y'] and I[z ≠ z']."""
    return (
        KronOperator(ky, kz, [(1.0, StepOperator(ky, 1, 0, 1), StepOperator(kz, 1, 1, 1))]),
        KronOperator(ky, kz, [(1.0, StepOperator(ky, 1, 1, 1), StepOperator(kz, 1, 0, 1))]),
    )


class DenseOperator(KernelOperator):
    """A k×k matrix behind the operator interface (user kernels)."""

    def __init__(self, A: np.ndarray):
        self.A = np.asarray(A, dtype=np.float64)
        self.k = self.A.shape[0]

    def matvec(self, v):
        return self.A @ v

    def rmatvec(self, v):
        return self.A.T @ v

    def diagonal(self):
        return np.diag(self.A).copy()

    def squared(self):
        return DenseOperator(self.A * self.A)

    def symmetrized(self):
        return DenseOperator(0.5 * (self.A + self.A.T))

    def to_dense(self):
        return self.A
