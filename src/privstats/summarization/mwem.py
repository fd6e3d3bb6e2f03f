"""h2: the MWEM adaptation that releases the mean of h1 vectors privately.

Rows ``v`` of h1 features (coordinates in ``[−√(2/d), √(2/d)]``) are rescaled to
``[−1, 1]`` and stochastically rounded to the grid ``{−1, −1+η, …, 1}`` with
``η = 2/L`` (unbiased; one draw per point, kept, so the column sums are maintained
incrementally).  A grid value ``u/L`` is stored as the integer ``u ∈ {−L, −L+2, …, L}``,
so the column sums ``U`` are exact integers.  The synthetic distribution is a product
of ``d`` marginals over the grid (Lemma 1), kept as a ``d × (L+1)`` log-weight array.

One iteration (corrected, see the research note's P-priv-1/2):

1. exponential mechanism: coordinate ``i`` with probability ∝ ``exp(ε ψ_i / (2Δ))``,
   ``ψ_i = |q·c_i − U_i/L|`` (count units; ``c_i`` the marginal's mean).  The paper
   samples ∝ ``exp(ε ψ_i)``, which is 2ε-DP for Δ = 1, not ε.
2. measurement: ``μ = (U_i + Z)/L`` with ``Z`` exact discrete Laplace of scale ``Δ·L/ε``
   (ε-DP: ``U_i`` has integer sensitivity ``Δ·L``), then clipped to ``[−q, q]``.
3. multiplicative weights on marginal ``i``: ``log P(s) += s·(μ − q c_i)/(2q)``.

``Δ`` is 2 for replace-one neighbours (default: ``q`` is public and the summary
changes by one substitution when an owner's data changes) and 1 for the paper's
add/remove reading (there ``q`` is the *released* noisy target size, fixed before the sketch —
:meth:`privstats.summarization.roles.Curator.noisy_target_size` — so ψ moves by at most 1).
Each iteration therefore releases two ε-DP mechanisms; the
exponential mechanism is also ε²/8-zCDP (bounded range, Cesar–Rogers 2021) and the
Laplace step ε²/2-zCDP — see :mod:`privstats.summarization.budget`.

Sampling: the exponential mechanism is sampled *exactly* by rejection — a uniform
proposal ``i`` is accepted with probability ``exp(−(max_j x_j − x_i))``, drawn by the
exact :func:`privstats.privacy.samplers.bernoulli_exp` (the float gap is taken as an
exact rational).  Only the gap itself is computed in double precision, which moves
the privacy loss by a relative ~1e−15; no Gumbel or floating-point noise is used.
The output ``P_avg`` averages ``P_1..P_T`` (not ``P_0``) and is post-processing.

>>> import numpy as np
>>> sketch = MWEMSketch(n_features=4, grid=8)
>>> U = np.array([40, -40, 0, 8])            # column sums of q = 10 quantised rows
>>> out = sketch.release(U, q=10, iterations=200, epsilon=50.0, rng=0)
>>> bool(np.abs(out - U / 8 / 10).max() < 0.6)
True
"""

from __future__ import annotations

import math

import numpy as np

from privstats.central import add_count_noise
from privstats.privacy.randomness import RandomSource, RNGLike, as_source
from privstats.privacy.samplers import bernoulli_exp
from privstats.summarization.budget import check_sensitivity

__all__ = ["MWEMSketch", "exponential_mechanism", "quantize"]


def quantize(H, bound: float, grid: int, rng: RNGLike = None) -> np.ndarray:
    """Unbiased stochastic rounding of ``H/bound`` (clipped to [−1, 1]) to integers u with value u/grid.

    >>> quantize(np.array([[1.0, -1.0]]), bound=1.0, grid=4, rng=0).tolist()
    [[4, -4]]
    """
    src = as_source(rng)
    x = np.clip(np.asarray(H, dtype=np.float64) / bound, -1.0, 1.0)
    y = (x + 1.0) * (grid / 2.0)  # in [0, L]
    k = np.minimum(np.floor(y), grid - 1).astype(np.int64)
    up = np.asarray(src.random(y.size)).reshape(y.shape) < (y - k)
    return 2 * (k + up) - grid


def exponential_mechanism(logits, rng: RNGLike = None) -> int:
    """Exact sample of index i with probability ∝ exp(logits[i]) (rejection with exact Bernoulli(e^−γ)).

    >>> exponential_mechanism(np.array([0.0, -1e9]), rng=0)
    0
    """
    src = as_source(rng)
    x = np.asarray(logits, dtype=np.float64)
    gaps = x.max() - x
    n = x.size
    while True:
        i = int(src.integers(n))
        if gaps[i] == 0.0 or bernoulli_exp(float(gaps[i]), rng=src):
            return i


class MWEMSketch:
    """The MWEM product-form state for one data set, warm-started across releases."""

    def __init__(self, n_features: int, grid: int = 64, sensitivity: int = 2):
        if grid < 2 or grid % 2:
            raise ValueError(f"grid must be an even integer >= 2, got {grid!r}")
        sensitivity = check_sensitivity(sensitivity)
        self.n_features = int(n_features)
        self.grid = int(grid)
        self.sensitivity = int(sensitivity)
        self.values = np.arange(-grid, grid + 1, 2, dtype=np.float64) / grid  # the grid S
        self.logw = np.full((self.n_features, self.values.size), -math.log(self.values.size))
        self.means = np.zeros(self.n_features)  # c_i under P_t
        self.iterations_run = 0

    def init_from_means(self, target_means) -> None:
        """Set every marginal to the max-entropy tilt with the given (public) mean, e.g. a public seed set."""
        m = np.clip(np.asarray(target_means, dtype=np.float64), -1 + 1e-9, 1 - 1e-9)
        lo = np.full(m.size, -60.0 * self.grid)
        hi = np.full(m.size, 60.0 * self.grid)
        for _ in range(80):  # bisection on the tilt λ, vectorized
            lam = 0.5 * (lo + hi)
            mean = self._tilt_mean(lam)
            big = mean > m
            hi = np.where(big, lam, hi)
            lo = np.where(big, lo, lam)
        lam = 0.5 * (lo + hi)
        z = lam[:, None] * self.values[None, :]
        self.logw = z - _logsumexp(z)[:, None]
        self.means = np.exp(self.logw) @ self.values

    def _tilt_mean(self, lam):
        z = lam[:, None] * self.values[None, :]
        p = np.exp(z - z.max(1, keepdims=True))
        return (p @ self.values) / p.sum(1)

    def update(self, i: int, mu: float, q: int) -> None:
        """Multiplicative weights on marginal i: log P(s) += s·(μ − q c_i)/(2q) (Lemma 1, product form)."""
        row = self.logw[i] + self.values * ((mu - q * self.means[i]) / (2.0 * q))
        row -= _logsumexp(row[None, :])[0]
        self.logw[i] = row
        self.means[i] = float(np.exp(row) @ self.values)

    def release(
        self, column_sums, q: int, iterations: int, epsilon: float, rng: RNGLike = None
    ) -> np.ndarray:
        """Run ``iterations`` MWEM steps against integer ``column_sums`` of q rows; return P_avg's means in [−1, 1]."""
        src: RandomSource = as_source(rng)
        U = np.asarray(column_sums, dtype=np.int64)
        T = int(iterations)
        if T < 1:
            raise ValueError("iterations must be >= 1")
        L, delta_sens = self.grid, self.sensitivity
        target = U / L  # w(D_Q, i), count units
        acc = self.means * T  # Σ_t c_t, corrected lazily below
        touched = np.zeros(self.n_features, dtype=bool)
        em_scale = epsilon / (2.0 * delta_sens)
        # the T Laplace draws do not depend on the chosen coordinates: draw them in one batch
        noise = add_count_noise(np.zeros(T, dtype=np.int64), epsilon, sensitivity=delta_sens * L, rng=src)
        for t in range(1, T + 1):
            psi = np.abs(q * self.means - target)
            i = exponential_mechanism(em_scale * psi, rng=src)
            mu = min(max((U[i] + noise[t - 1]) / L, -q), q)  # clipping is post-processing
            old = self.means[i]
            self.update(i, mu, q)
            acc[i] += (self.means[i] - old) * (T - t + 1)
            touched[i] = True
        self.iterations_run += T
        out = self.means.copy()  # untouched coordinates: exactly unchanged
        out[touched] = acc[touched] / T
        return out


def _logsumexp(z: np.ndarray) -> np.ndarray:
    mx = z.max(1)
    return mx + np.log(np.exp(z - mx[:, None]).sum(1))
