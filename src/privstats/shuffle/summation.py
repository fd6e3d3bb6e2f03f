"""Multi-message counting/summation in the shuffle model.

Each user holding a bit x sends exactly s + 1 one-bit messages: its bit, and s blanket
bits each equal to 1 with probability γ.  Every user sends the same number of
messages, so the only thing the analyzer learns is the number of ones,
Σx + Bin(n s, γ) — one Count-Min cell — and a change of one user's bit shifts it by
±1.  γ is the smallest value whose exact privacy-loss computation gives (ε, δ).
With ``inputs="unit"`` (default) real values in [0, 1] are first randomly rounded to a
bit (unbiased); the standard error then adds the rounding variance Σ x_i(1 − x_i), bounded
by S(1 − S/n) at the estimated sum S (equal for constant x, never more than n/4).  With
``inputs="bits"`` values must be 0/1, nothing is rounded and no rounding term is added.

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
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.shuffle.arrived import arrived_guarantee
from privstats.shuffle.calibrate import countmin_delta
from privstats.shuffle.common import base_params, shuffle_estimate
from privstats.validation import as_float_array, check_choice, check_delta, check_epsilon, check_positive_int

__all__ = ["ShuffledSum"]


def _sum_delta(epsilon: float, trials: int, gamma: float) -> float:
    """δ(ε) of the count of ones: one cell moved by +1 or by −1, the worse direction."""
    return max(
        countmin_delta(epsilon, trials, gamma, 1, up_only=True),
        countmin_delta(epsilon, trials, gamma, 1, down_only=True),
    )


def _known_good_gamma(trials: int, epsilon: float, delta: float) -> float:
    """A γ whose δ(ε) is at most ``delta``, found by doubling the expected blanket count γ·trials
    from 16 (cheap: a cell's noise law costs ~ its standard deviation, not ``trials``); 0.5 if none
    below 1/2 is."""
    mean = 16.0
    while mean / trials < 0.5:
        if _sum_delta(epsilon, trials, mean / trials) <= delta:
            return mean / trials
        mean *= 2
    return 0.5


def _sum_gamma(trials: int, epsilon: float, delta: float) -> float:
    """The smallest γ (to 0.1%) whose δ(ε) is at most ``delta``: bisection on [0, 1/2].

    δ(ε) decreases as γ grows, so every γ at or above a known-good one passes without being
    computed: at 10^12 users the bisection's first steps (γ near 1/2, whose noise law has ~10^7
    values) would otherwise run for minutes.  The bisection's steps, and so γ, are those of the
    plain search.
    """
    good = _known_good_gamma(trials, epsilon, delta)

    def dlt(gamma: float) -> float:
        return 0.0 if gamma >= good else _sum_delta(epsilon, trials, gamma)

    if good >= 0.5 and _sum_delta(epsilon, trials, 0.5) > delta:
        raise ValueError(
            f"summation cannot reach (epsilon={epsilon}, delta={delta}) with {trials} blanket bits; "
            "increase n or blanket"
        )
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

    def __init__(
        self,
        *,
        n: int,
        epsilon: float,
        delta: float,
        blanket: int = 8,
        gamma: float | None = None,
        inputs: str = "unit",
    ):
        self.n = check_positive_int(n, "n")
        self.inputs = check_choice(inputs, "inputs", ("unit", "bits"))
        self.epsilon = check_epsilon(epsilon, model="shuffle")
        self.delta = check_delta(delta)
        self.blanket = check_positive_int(blanket, "blanket")
        self.gamma = (
            _sum_gamma(self.n * self.blanket, self.epsilon, self.delta) if gamma is None else float(gamma)
        )

    @property
    def params(self) -> dict:
        return base_params(self, blanket=self.blanket, gamma=self.gamma, inputs=self.inputs)

    messages_per_user = property(lambda self: self.blanket + 1)
    bits_per_user = property(lambda self: float(self.blanket + 1))

    def new_state(self) -> CountState:
        return CountState(self.name, self.params, 0, np.zeros(2, dtype=np.int64))

    def _values(self, x) -> np.ndarray:
        x = as_float_array(x, "x", bounds=(0.0, 1.0))
        if self.inputs == "bits" and np.any((x != 0) & (x != 1)):
            raise ValueError(
                "x must hold only 0 and 1 with inputs='bits' (use inputs='unit' for values in [0, 1])"
            )
        return x

    def encode_batch(self, x, rng: RNGLike = None) -> np.ndarray:
        """s + 1 one-bit messages per user (uint8), CSPRNG by default."""
        x = self._values(x)
        src = as_source(rng)
        bit = src.random(x.size) < x  # unbiased randomized rounding
        blank = src.random(x.size * self.blanket) < self.gamma
        return np.concatenate([bit, blank]).astype(np.uint8)

    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        state = self.new_state() if state is None else state
        self._check_state(state)
        m = np.asarray(messages)
        if m.ndim != 1 or (m.size and (m.min() < 0 or m.max() > 1)):
            raise ValueError("messages must be bits (0 or 1)")
        return CountState(
            self.name,
            self.params,
            state.n + m.size,
            state.counts + np.bincount(m.astype(np.int64), minlength=2),
        )

    def simulate(self, x, rng: RNGLike = None) -> CountState:
        """Exact sufficient statistic: ones = Σ Bern(x_i) + Bin(n s, γ)."""
        x = self._values(x)
        g = as_generator(rng)
        ones = int((g.random(x.size) < x).sum()) + int(g.binomial(x.size * self.blanket, self.gamma))
        total = x.size * (self.blanket + 1)
        return CountState(self.name, self.params, total, np.array([total - ones, ones], dtype=np.int64))

    def _check_state(self, state) -> None:
        if not isinstance(state, CountState) or state.protocol != self.name or state.params != self.params:
            raise ValueError(f"state must be a CountState of {self.name} with parameters {self.params}")

    def estimate(self, state: CountState) -> Estimate:
        self._check_state(state)
        users = state.n // (self.blanket + 1)
        value = float(state.counts[1] - users * self.blanket * self.gamma)
        var = users * self.blanket * self.gamma * (1 - self.gamma)
        if self.inputs == "unit" and users:
            s = min(max(value, 0.0), float(users))
            var += s * (1 - s / users)  # Σ x(1−x) ≤ S(1 − S/n) (Cauchy–Schwarz), plug-in S
        # the blanket is users·s bits: for fewer users than planned the guarantee is recomputed (or refused)
        trials = users * self.blanket
        guarantee, arrived = arrived_guarantee(
            self.epsilon, self.delta, self.n, users, lambda e: _sum_delta(e, trials, self.gamma)
        )
        return shuffle_estimate(
            self,
            value,
            math.sqrt(var),
            guarantee,
            users,
            {
                "stderr_note": "blanket noise only"
                if self.inputs == "bits"
                else "blanket noise plus the rounding bound S(1 - S/n) at the estimated S",
                **arrived,
            },
        )
