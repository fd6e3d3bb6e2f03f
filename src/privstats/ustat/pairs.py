"""Protocol C (Bell et al. 2020, §5): noisy kernel values computed by pairs of users.

Roles, kept apart so a real two-party-computation backend can replace the simulation:

* **aggregator** — :meth:`PairsProtocol.make_pairs` draws P random permutations and
  pairs ``(σ_p(2i−1), σ_p(2i))`` (one user per permutation sits out when n is odd);
  :meth:`make_bipartite_pairs` matches positives with negatives for two-sample AUC.
  It later only sees the pairs' outputs and averages them (:meth:`estimate`).
* **users** — each holds its own value and is the input of the P pairs it is in.
* **pair** — a :class:`TwoPartyBackend` computes ``f(x_i, x_j)`` plus noise and releases
  only that.  :class:`SimulatedTwoParty` computes it in the clear (the output is exactly
  what an ideal 2PC would release): discrete Laplace on a grid of the kernel range
  Δ with ε/P per pair (scale PΔ/ε, P-C2/P-C5), or randomized response with keep
  probability e^{ε/P}/(1+e^{ε/P}) for binary kernels, debiased.

Each user is in at most P pairs, so the release is ε-DP for each user's value by
basic composition (computational DP, semi-honest pairs).  Variances: corrected
Theorem 5 (noise term 4PΔ²/(nε²)), in a general form that also covers odd n and the
bipartite design; standard errors plug in ζ estimates from the noisy outputs.

>>> import numpy as np
>>> proto = PairsProtocol(lambda a, b: np.abs(a - b), epsilon=1.0, P=2, kernel_range=(0.0, 1.0))
>>> x = np.random.default_rng(0).random(20000)
>>> pairs = proto.make_pairs(x.size, rng=1)
>>> out = proto.backend.compute(x[pairs[:, 0]], x[pairs[:, 1]], rng=2)
>>> value, var, info = proto.estimate(out, pairs, n=x.size)
>>> bool(abs(value - 1 / 3) < 5 * var ** 0.5)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

from privstats.central import real_noise_scale
from privstats.privacy.randomness import GeneratorSource, RNGLike, as_source
from privstats.privacy.samplers import discrete_laplace
from privstats.validation import check_choice, check_epsilon, check_positive_int

from .noise_law import NoiseLaw

__all__ = [
    "MECHANISMS",
    "NoiseLaw",
    "PairsProtocol",
    "SimulatedTwoParty",
    "TwoPartyBackend",
    "combination_variance",
    "simulated_two_party",
]

MECHANISMS = ("laplace", "rr")
GRID_BITS = 20  # kernel outputs are snapped to a grid of Δ/2^20 before discrete Laplace noise


class TwoPartyBackend(Protocol):
    """What a pair of users computes: ``compute(x_left, x_right, rng)`` → released (debiased) outputs."""

    def compute(self, x_left: np.ndarray, x_right: np.ndarray, rng: RNGLike = None) -> np.ndarray: ...

    @property
    def noise_variance(self) -> float: ...


class SimulatedTwoParty:
    """Ideal-functionality simulation of the pair computation (the output is exactly f + noise).

    ``law``: draw from a real backend's exact realised law instead of the ideal mechanism (e.g.
    :func:`simulated_two_party`: the SPU path's rounded coins), so that the simulation is equal in
    distribution to that backend's releases.
    """

    def __init__(
        self,
        kernel: Callable,
        kernel_range: tuple[float, float],
        pair_epsilon: float,
        mechanism: str,
        law: NoiseLaw | None = None,
    ):
        self.kernel, self.lo, self.hi = kernel, float(kernel_range[0]), float(kernel_range[1])
        self.width = self.hi - self.lo
        self.pair_epsilon, self.mechanism, self.law = pair_epsilon, mechanism, law
        if mechanism == "rr":
            self.keep = 1.0 / (1.0 + math.exp(-pair_epsilon))  # e^ε/(1 + e^ε), overflow-free
            if law is not None and law.keep is not None:
                self.keep = law.keep
        elif law is not None:
            if law.cycle_pmf is None:
                raise ValueError("a Laplace noise law needs its cycle pmf")
            self.granularity = law.unit
            self.std = math.sqrt(law.variance) * law.unit
        else:
            self.granularity = self.width / 2**GRID_BITS
            self.scale, self.std = real_noise_scale(self.width, pair_epsilon, self.granularity)

    @property
    def noise_variance(self) -> float:
        """Variance added to each released kernel value (on the kernel's scale)."""
        if self.mechanism == "rr":
            p = self.keep
            return self.width**2 * p * (1 - p) / (2 * p - 1) ** 2
        if self.law is not None:
            return self.law.variance * self.law.unit**2
        return self.std**2

    def kernel_values(self, x_left, x_right) -> np.ndarray:
        """f inside the circuit, clipped to the public kernel range (so the sensitivity holds)."""
        out = np.asarray(self.kernel(x_left, x_right), dtype=np.float64)
        return np.clip(
            np.full(len(x_left), float(out)) if out.ndim == 0 else out, self.lo, self.hi
        )  # constant kernel

    def compute(self, x_left, x_right, rng: RNGLike = None) -> np.ndarray:
        f = self.kernel_values(x_left, x_right)
        src = as_source(rng)
        if self.mechanism == "rr":
            bit = (f - self.lo) / self.width
            if np.any((bit != 0) & (bit != 1)):
                raise ValueError("randomized response needs a binary kernel (values lo or hi only)")
            flip = np.asarray(src.random(f.size)).reshape(f.shape) >= self.keep
            noisy = np.where(flip, 1 - bit, bit)
            return self.lo + self.width * (noisy - (1 - self.keep)) / (2 * self.keep - 1)
        if self.law is not None:
            return self._law_release(f, src)
        grid = np.rint(f / self.granularity).astype(np.int64)
        if isinstance(src, GeneratorSource):  # simulation: the same distribution drawn with numpy
            g = src.generator
            prob = -math.expm1(-1.0 / float(self.scale))
            noise = g.geometric(prob, f.size) - g.geometric(prob, f.size)
        else:
            noise = np.asarray(discrete_laplace(self.scale, size=f.size, rng=src), dtype=np.int64)
        return (grid + noise.reshape(f.shape)) * self.granularity

    def _law_release(self, f: np.ndarray, src) -> np.ndarray:
        """The real backend's release: ``(v + z) mod 2^B`` decoded into its window, z from the cycle pmf."""
        law = self.law
        assert law is not None and law.cycle_pmf is not None
        v = np.rint((f - self.lo) / law.unit).astype(np.int64)
        cdf = np.cumsum(law.cycle_pmf)
        u = np.asarray(src.random(f.size), dtype=np.float64).reshape(f.shape) * cdf[-1]
        z = np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)  # inverse CDF
        released = (v + z - law.low) % cdf.size + law.low
        return self.lo + (released - law.offset) * law.unit


class PairsProtocol:
    """Protocol C for a symmetric kernel with public range ``kernel_range``."""

    def __init__(
        self,
        kernel: Callable,
        *,
        epsilon: float,
        P: int = 1,
        kernel_range: tuple[float, float],
        mechanism: str = "laplace",
        backend: TwoPartyBackend | str | None = None,
    ):
        self.epsilon = check_epsilon(epsilon)
        self.P = check_positive_int(P, "P")
        self.mechanism = check_choice(mechanism, "mechanism", MECHANISMS)
        lo, hi = kernel_range
        if not hi > lo:
            raise ValueError(f"kernel_range must have lo < hi, got {kernel_range!r}")
        self.kernel_range = (float(lo), float(hi))
        if isinstance(backend, str):  # "spu": ``kernel`` names a two-party kernel of privstats.ustat.mpc
            backend = _named_backend(backend, kernel, self.epsilon / self.P, mechanism)
        self.backend = backend or SimulatedTwoParty(
            kernel, self.kernel_range, self.epsilon / self.P, mechanism
        )

    # ---- aggregator: pairing -----------------------------------------------------------------
    def make_pairs(self, n: int, rng: RNGLike = None) -> np.ndarray:
        """(P·⌊n/2⌋, 2) user indices: P permutations, consecutive users paired; odd n: the last sits out."""
        if n < 2:
            raise ValueError("at least two users are needed for the pairs protocol")
        src, m = as_source(rng), n // 2
        return np.concatenate([src.permutation(n)[: 2 * m].reshape(m, 2) for _ in range(self.P)])

    def make_bipartite_pairs(self, n_pos: int, n_neg: int, rng: RNGLike = None) -> np.ndarray:
        """(P·min(n⁺, n⁻), 2) pairs (positive index, negative index): per round a random matching
        of the smaller class into the larger one; every user is in at most P pairs."""
        src, m = as_source(rng), min(n_pos, n_neg)
        rounds = [
            np.stack([src.permutation(n_pos)[:m], src.permutation(n_neg)[:m]], axis=1) for _ in range(self.P)
        ]
        return np.concatenate(rounds)

    # ---- aggregator: estimate --------------------------------------------------------------------
    def estimate(self, outputs: np.ndarray, pairs: np.ndarray, *, n: int) -> tuple[float, float, dict]:
        """One-sample estimate ``mean(outputs)`` = (2/(Pn))Σ f̃ for even n, with plug-in variance."""
        v = np.asarray(outputs, dtype=np.float64)
        N, m = v.size, v.size // self.P
        theta = float(v.mean())
        sigma2 = self.backend.noise_variance
        zeta2 = max(0.0, float(v.var()) - sigma2)
        zeta1 = min(_shared_cov(v, [pairs[:, 0], pairs[:, 1]], n, theta), zeta2 / 2) if self.P > 1 else 0.0
        var = self.variance(n, zeta1, zeta2)
        info = {
            "pairs": N,
            "sat_out_per_permutation": n - 2 * m,
            "zeta1": zeta1,
            "zeta2": zeta2,
            "noise_variance_per_pair": sigma2,
            "security": self.security,
        }
        return theta, var, info

    def variance(self, n: int, zeta1: float, zeta2: float) -> float:
        """Exact MSE against the population U_f (Theorem 5 corrected; odd n: one user sits out per permutation)."""
        return _design_variance(n, self.P, zeta1, zeta2, self.backend.noise_variance)

    def estimate_two_sample(
        self, outputs: np.ndarray, pairs: np.ndarray, *, n_pos: int, n_neg: int
    ) -> tuple[float, float, dict]:
        """Bipartite estimate (mean of the pairs' outputs) with plug-in variance."""
        v = np.asarray(outputs, dtype=np.float64)
        theta = float(v.mean())
        sigma2 = self.backend.noise_variance
        zeta2 = max(0.0, float(v.var()) - sigma2)
        z_pos = min(max(_shared_cov(v, [pairs[:, 0]], n_pos, theta), 0.0), zeta2) if self.P > 1 else 0.0
        z_neg = min(max(_shared_cov(v, [pairs[:, 1]], n_neg, theta), 0.0), zeta2) if self.P > 1 else 0.0
        var = self.two_sample_variance(n_pos, n_neg, z_pos, z_neg, zeta2)
        info = {
            "pairs": v.size,
            "zeta_pos": z_pos,
            "zeta_neg": z_neg,
            "zeta2": zeta2,
            "noise_variance_per_pair": sigma2,
            "security": self.security,
        }
        return theta, var, info

    def two_sample_variance(
        self, n_pos: int, n_neg: int, zeta_pos: float, zeta_neg: float, zeta2: float
    ) -> float:
        """Exact MSE against the population two-sample statistic for the bipartite design."""
        P, m, M = self.P, min(n_pos, n_neg), max(n_pos, n_neg)
        z_small, z_large = (zeta_pos, zeta_neg) if n_pos <= n_neg else (zeta_neg, zeta_pos)
        N = P * m
        var_sum = (
            zeta2 * (N + P * (P - 1) * m / M)
            + z_small * P * (P - 1) * m * (1 - 1 / M)
            + z_large * P * (P - 1) * m * (m - 1) / M
        )
        return var_sum / N**2 + self.backend.noise_variance / N

    @property
    def security(self) -> str:
        stated = getattr(self.backend, "security", None)
        if isinstance(stated, str):  # a real 2PC backend states its security model
            return f"ε-CDP per user against semi-honest pairs; {stated}"
        kind = "simulated" if isinstance(self.backend, SimulatedTwoParty) else type(self.backend).__name__
        return f"ε-CDP per user against semi-honest pairs; two-party computation {kind}"

    @property
    def params(self) -> dict:
        return {
            "P": self.P,
            "mechanism": self.mechanism,
            "pair_epsilon": self.epsilon / self.P,
            "kernel_range": list(self.kernel_range),
        }


def _named_backend(name: str, kernel, pair_epsilon: float, mechanism: str) -> TwoPartyBackend | None:
    check_choice(name, "backend", ("simulated", "spu"))
    if name == "simulated" and not isinstance(kernel, str):
        return None
    if not isinstance(kernel, str):
        raise ValueError("backend='spu' needs the kernel as a name from privstats.ustat.mpc.SPECS")
    from privstats.ustat.mpc import SpuTwoParty

    if name == "simulated":  # a named SPU kernel, simulated: the SPU path's exact realised law
        return simulated_two_party(kernel, pair_epsilon=pair_epsilon, mechanism=mechanism)

    return SpuTwoParty(kernel, pair_epsilon=pair_epsilon, mechanism=mechanism)


def simulated_two_party(
    kernel: str, *, pair_epsilon: float, mechanism: str = "laplace", grid_bits: int = 10
) -> SimulatedTwoParty:
    """The simulated backend equal in distribution to the SPU backend (``privstats.ustat.mpc``; numpy
    only, no SPU): the same named kernel on the same grid, noise drawn from the SPU path's exact
    realised law (the rounded coins' pmf, the same wrap and decoding; randomized response at the
    realised keep probability), and the same reported variance.

    >>> sim = simulated_two_party("greater_half", pair_epsilon=1.0)
    >>> from privstats.ustat.mpc import laplace_plan
    >>> sim.noise_variance == laplace_plan(1.0, 2).variance * 0.5**2  # grid ½: the same variance
    True
    """
    from privstats.ustat.mpc import SPECS, JobSpec, noise_law

    check_choice(kernel, "kernel", SPECS)
    o = JobSpec.build([(kernel, mechanism, check_epsilon(pair_epsilon))], grid_bits).outputs[0]
    spec = o.spec

    def f(a, b):
        return spec.lo + spec.unit * spec.reference(np.asarray(a), np.asarray(b))

    return SimulatedTwoParty(f, (spec.lo, spec.hi), o.pair_epsilon, mechanism, law=noise_law(o))


def _design_variance(n: int, P: int, zeta1: float, zeta2: float, noise_variance: float) -> float:
    m = n // 2
    N = P * m
    p_pair = m / (n * (n - 1) / 2)
    dup = P * (P - 1) * m * p_pair
    one = n * P * (P - 1) * (2 * m / n) ** 2 - 2 * dup
    return ((N + dup) * zeta2 + one * zeta1) / N**2 + noise_variance / N


def combination_variance(outputs, coefs, noise_variances, pairs: np.ndarray, *, n: int, P: int) -> float:
    """Plug-in MSE of ``Σ c_i · mean(outputs_i)`` when several kernels are released on the same pairs
    with independent noises (the delta method for a function of several pairs estimates, e.g. tau-b)."""
    v = sum(c * np.asarray(o, dtype=np.float64) for c, o in zip(coefs, outputs, strict=False))
    sigma2 = float(sum(c * c * s for c, s in zip(coefs, noise_variances, strict=False)))
    zeta2 = max(0.0, float(v.var()) - sigma2)
    zeta1 = (
        min(max(_shared_cov(v, [pairs[:, 0], pairs[:, 1]], n, float(v.mean())), 0.0), zeta2 / 2)
        if P > 1
        else 0.0
    )
    return _design_variance(n, P, zeta1, zeta2, sigma2)


def _shared_cov(v: np.ndarray, user_cols: list[np.ndarray], n: int, theta: float) -> float:
    """Plug-in covariance of two outputs sharing one user: mean over users of products of their outputs − θ²."""
    s = np.zeros(n)
    s2 = np.zeros(n)
    c = np.zeros(n)
    for col in user_cols:
        s += np.bincount(col, weights=v, minlength=n)
        s2 += np.bincount(col, weights=v * v, minlength=n)
        c += np.bincount(col, minlength=n)
    denom = float(np.sum(c * (c - 1)))
    return float(np.sum(s * s - s2) / denom - theta**2) if denom > 0 else 0.0
