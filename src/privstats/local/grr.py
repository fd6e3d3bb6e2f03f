"""k-ary randomized response (generalized randomized response, GRR) and binary RR.

A user with value x reports x with probability p = e^ε / (e^ε + d − 1) and each other
value with probability q = 1 / (e^ε + d − 1).  Equivalently: with probability
r = d·q replace x by a uniform draw from the whole domain, which is how both the
client and the simulation draw it.

>>> from privstats.local import GRR
>>> oracle = GRR(8, epsilon=1.0)
>>> est = oracle.estimate(oracle.simulate([1] * 5000 + [2] * 5000, rng=0))
>>> bool(abs(est.value[1] - 5000) < 6 * est.stderr[1])
True
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from privstats.local.base import CountState, SupportOracle
from privstats.privacy.randomness import RNGLike, as_generator, as_source, dyadic_threshold
from privstats.validation import as_domain_values

__all__ = ["GRR", "BinaryRR", "KaryResponse"]


class KaryResponse:
    """p and q of k-ary randomized response over ``outcomes`` values (GRR: the domain; OLH: the buckets)."""

    epsilon: float

    @property
    def outcomes(self) -> int:
        """The number k of outcomes a report can take."""
        raise NotImplementedError

    # e^ε/(e^ε + k − 1) written with e^−ε: no overflow for huge ε (p − q: each oracle's gap, via expm1)
    @property
    def p(self) -> float:
        """Probability of reporting the true outcome."""
        return 1.0 / (1.0 + (self.outcomes - 1) * math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        """Probability of reporting one given other outcome."""
        return math.exp(-self.epsilon) / (1.0 + (self.outcomes - 1) * math.exp(-self.epsilon))


class GRR(KaryResponse, SupportOracle):
    """Generalized (k-ary) randomized response over ``domain_size`` values."""

    name = "grr"
    report_fields: ClassVar[dict[str, str]] = {"value": "int64"}

    @property
    def outcomes(self) -> int:
        return self.domain_size

    @property
    def gap(self) -> float:
        """p − q = (1 − e^−ε)/(1 + (d − 1)e^−ε), accurate for tiny ε."""
        return -math.expm1(-self.epsilon) / (1.0 + (self.domain_size - 1) * math.exp(-self.epsilon))

    @property
    def bits_per_user(self) -> float:
        return self._bits(self.domain_size)

    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        # exact Bernoulli with an integer threshold, rounded up (more resampling: ratio <= e^ε)
        resample = src.bernoulli_dyadic(
            dyadic_threshold(min(1.0, self.domain_size * self.q), round_up=True), values.size
        )
        out = values.copy()
        out[resample] = src.integers(self.domain_size, size=int(resample.sum()))
        return {"value": out}

    def output_probabilities(self, value: int) -> np.ndarray:
        probs = np.full(self.domain_size, self.q)
        probs[value] = self.p
        return probs

    def _accumulate(self, reports: dict[str, np.ndarray]) -> np.ndarray:
        v = reports["value"]
        if v.size and (v.dtype.kind not in "iu" or v.min() < 0 or v.max() >= self.domain_size):
            raise ValueError(f"reports['value'] must be integers in [0, {self.domain_size})")
        return np.bincount(v.astype(np.int64, copy=False), minlength=self.domain_size)

    def simulate_counts(self, true_counts, rng: RNGLike = None) -> CountState:
        """Per value x, Binomial(n_x, r) users resample uniformly: one multinomial over d cells."""
        c = self._check_true_counts(true_counts)
        g = as_generator(rng)
        resampled = g.binomial(c, self.domain_size * self.q)
        counts = (
            c
            - resampled
            + g.multinomial(int(resampled.sum()), np.full(self.domain_size, 1.0 / self.domain_size))
        )
        return CountState(self.name, self.params, int(c.sum()), counts.astype(np.int64))

    @property
    def support_probabilities(self) -> tuple[float, float]:
        return self.p, self.q


class BinaryRR(GRR):
    """Warner's randomized response for one bit: report the truth with probability e^ε/(e^ε+1)."""

    name = "binary-rr"

    def __init__(self, epsilon: float):
        super().__init__(2, epsilon)

    @property
    def params(self) -> dict:
        return {"domain_size": 2, "epsilon": self.epsilon}

    def __repr__(self) -> str:
        return f"BinaryRR(epsilon={self.epsilon!r})"
