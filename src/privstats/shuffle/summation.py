"""Multi-message counting/summation in the shuffle model.

Each user holding a bit x sends exactly s + 1 one-bit messages: its bit, and s blanket
bits each equal to 1 with probability γ.  Every user sends the same number of
messages, so the only thing the analyzer learns is the number of ones,
Σx + Bin(n s, γ) — one Count-Min cell — and a change of one user's bit shifts it by
±1.  γ is the smallest value whose exact privacy-loss computation gives (ε, δ).
Real values in [0, 1] are first randomly rounded to a bit (unbiased).

>>> sm = ShuffledSum(n=10_000, epsilon=1.0, delta=1e-6, blanket=4)
>>> est = sm.estimate(sm.simulate(np.ones(10_000), rng=0))
>>> bool(abs(est.value - 10_000) < 6 * est.stderr)
True
"""

from __future__ import annotations

import math

import numpy as np

from privstats.estimate import Estimate
from privstats.local.base import CountState
from privstats.privacy.guarantees import ApproxDP
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.shuffle.calibrate import countmin_delta
from privstats.validation import as_float_array, check_delta, check_epsilon, check_positive_int

__all__ = ["ShuffledSum"]


def _sum_gamma(trials: int, epsilon: float, delta: float) -> float:
    def dlt(gamma: float) -> float:
        # one cell moved by +1 or by −1: take the worse direction
        return max(countmin_delta(epsilon, trials, gamma, 1, up_only=True),
                   countmin_delta(epsilon, trials, gamma, 1, down_only=True))
    if dlt(0.5) > delta:
        raise ValueError(f"summation cannot reach (epsilon={epsilon}, delta={delta}) with {trials} blanket bits; "
                         "increase n or blanket")
    lo, hi = 0.0, 0.5
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        if dlt(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


class ShuffledSum:
    """Counting bits (or summing values in [0, 1]) with s blanket bits per user."""

    name = "shuffle-sum"

    def __init__(self, *, n: int, epsilon: float, delta: float, blanket: int = 8, gamma: float | None = None):
        self.n = check_positive_int(n, "n")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.blanket = check_positive_int(blanket, "blanket")
        self.gamma = _sum_gamma(self.n * self.blanket, self.epsilon, self.delta) if gamma is None else float(gamma)

    @property
    def params(self) -> dict:
        return {"n": self.n, "epsilon": self.epsilon, "delta": self.delta, "blanket": self.blanket,
                "gamma": self.gamma}

    messages_per_user = property(lambda self: self.blanket + 1)
    bits_per_user = property(lambda self: float(self.blanket + 1))

    def new_state(self) -> CountState:
        return CountState(self.name, self.params, 0, np.zeros(2, dtype=np.int64))

    def encode_batch(self, x, rng: RNGLike = None) -> np.ndarray:
        """s + 1 one-bit messages per user (uint8), CSPRNG by default."""
        x = as_float_array(x, "x", bounds=(0.0, 1.0))
        src = as_source(rng)
        bit = src.random(x.size) < x                                      # unbiased randomized rounding
        blank = src.random(x.size * self.blanket) < self.gamma
        return np.concatenate([bit, blank]).astype(np.uint8)

    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        state = self.new_state() if state is None else state
        m = np.asarray(messages)
        if m.ndim != 1 or (m.size and (m.min() < 0 or m.max() > 1)):
            raise ValueError("messages must be bits (0 or 1)")
        return CountState(self.name, self.params, state.n + m.size,
                          state.counts + np.bincount(m.astype(np.int64), minlength=2))

    def simulate(self, x, rng: RNGLike = None) -> CountState:
        """Exact sufficient statistic: ones = Σ Bern(x_i) + Bin(n s, γ)."""
        x = as_float_array(x, "x", bounds=(0.0, 1.0))
        g = as_generator(rng)
        ones = int((g.random(x.size) < x).sum()) + int(g.binomial(x.size * self.blanket, self.gamma))
        total = x.size * (self.blanket + 1)
        return CountState(self.name, self.params, total, np.array([total - ones, ones], dtype=np.int64))

    def estimate(self, state: CountState) -> Estimate:
        users = state.n // (self.blanket + 1)
        value = float(state.counts[1] - users * self.blanket * self.gamma)
        var = users * self.blanket * self.gamma * (1 - self.gamma) + users / 4.0   # rounding variance ≤ n/4
        return Estimate(value=value, stderr=math.sqrt(var), guarantee=ApproxDP(self.epsilon, self.delta),
                        model="shuffle", protocol=self.name, params=self.params, n=users,
                        messages_per_user=self.messages_per_user, bits_per_user=self.bits_per_user,
                        details={"stderr_note": "includes a worst-case n/4 randomized-rounding term; 0 for bits"})
