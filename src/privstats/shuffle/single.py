"""Single-message shuffled protocols: k-ary randomized response and RAPPOR (unary encoding).

* :class:`ShuffledKRR` — k-RR with blanket probability γ (report the true value w.p.
  1−γ, else a uniform value).  γ is the smallest value whose shuffled output is
  (ε, δ)-DP by the smallest of the exact blanket computation
  :func:`~privstats.privacy.amplification.krr_blanket_delta` and the generic clone bounds
  :func:`~privstats.privacy.amplification.tightest_delta` (``calibration="exact"``), or by
  Balle et al.'s Thm 3.1 (``"balle"``).  The client,
  aggregator and exact simulation are those of :class:`privstats.local.GRR` at the
  equivalent local ε0 = ln(k/γ − k + 1).
* :class:`ShuffledRAPPOR` — each user sends the B-bit indicator of its value with every
  bit flipped w.p. p = 1/(1 + e^{ε0/2}), where ε0 is the largest local ε whose shuffled
  output is (ε, δ)-DP by the accountant (``method``, default ``"tightest"``, which also uses
  RAPPOR's variation-ratio parameters: only two bits differ between two inputs).

Both report, in ``Estimate.details["epsilon_lower_bound"]``, an ε below which the protocol
is provably not (ε, δ)-DP (:func:`~privstats.privacy.variation_ratio.shuffled_epsilon_lower`),
so a user sees how far from tight the claimed ε is.

>>> rr = ShuffledKRR(4, n=10_000, epsilon=1.0, delta=1e-6)
>>> 0 < rr.gamma < 1
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Unpack

import numpy as np

from privstats.estimate import Estimate
from privstats.local.base import CountState
from privstats.local.grr import GRR
from privstats.privacy.amplification import krr_blanket_delta, local_epsilon_for, tightest_delta
from privstats.privacy.guarantees import ApproxDP
from privstats.privacy.randomness import RNGLike, as_generator, as_source, dyadic_threshold
from privstats.privacy.variation_ratio import shuffled_epsilon_lower
from privstats.shuffle.arrived import arrived_guarantee
from privstats.shuffle.common import FrequencyProtocol, PublicCounts, base_params, shuffle_estimate
from privstats.validation import as_domain_values, check_epsilon, check_probability

__all__ = ["ShuffledKRR", "ShuffledRAPPOR", "krr_exact_delta", "krr_gamma"]


def krr_exact_delta(eps: float, gamma: float, k: int, n: int) -> float:
    """Smallest valid bound on δ(ε) of shuffled k-RR with blanket γ: k-RR's own blanket or the generic clones."""
    d = krr_blanket_delta(eps, gamma, k, n)
    if d > 0 and 0 < gamma < 1:
        d = min(d, tightest_delta(eps, math.log(k / gamma - k + 1), n))
    return d


def _krr_reaches(eps: float, gamma: float, k: int, n: int, delta: float) -> bool:
    """``krr_exact_delta(eps, gamma, k, n) <= delta``, the cheap bound first.

    The generic clone bound costs ~1 ms; k-RR's own blanket bound up to seconds at n = 10^7 (its
    binomial windows grow with γn).  Where the clone bound already reaches δ the minimum does too,
    so the blanket bound is only computed where it decides: the same answer, in a fraction of the time.
    """
    if 0 < gamma < 1 and tightest_delta(eps, math.log(k / gamma - k + 1), n) <= delta:
        return True
    return krr_blanket_delta(eps, gamma, k, n) <= delta


def krr_gamma(k: int, n: int, epsilon: float, delta: float, calibration: str = "exact") -> float:
    """Smallest blanket probability γ for shuffled k-RR; ValueError if none ≤ 1 works."""
    if calibration == "balle":
        if epsilon > 1:
            raise ValueError(f"calibration='balle' (Balle et al. Thm 3.1) needs epsilon <= 1, got {epsilon}")
        gamma = max(14 * k * math.log(2 / delta) / ((n - 1) * epsilon**2), 27 * k / ((n - 1) * epsilon))
    elif calibration == "exact":
        if not _krr_reaches(epsilon, 1.0, k, n, delta):
            gamma = math.inf
        else:
            lo, hi = 0.0, 1.0
            while hi - lo > 1e-4 * hi:
                mid = 0.5 * (lo + hi)
                if _krr_reaches(epsilon, mid, k, n, delta):
                    hi = mid
                else:
                    lo = mid
            gamma = hi
    else:
        raise ValueError(f"calibration must be 'exact' or 'balle', got {calibration!r}")
    if gamma >= 1:
        raise ValueError(
            f"shuffled k-RR cannot reach (epsilon={epsilon}, delta={delta}) with n={n} users over "
            f"k={k} values (blanket probability would be {gamma:.3g} >= 1); use protocol='single-rappor' "
            "or a multi-message protocol"
        )
    return gamma


LOWER_BOUND_MAX_N = {"krr": 10**8, "rappor": 10**10}
"""Largest n at which ``epsilon_lower_bound`` is computed (~1 s for k-RR at 10^8, RAPPOR at 10^10)."""


def _check_gamma(gamma: Any) -> float:
    """A given blanket probability γ in (0, 1] (γ = 0 would be plain, un-amplified reporting)."""
    if check_probability(gamma, "gamma") == 0:
        raise ValueError("gamma must be a number in (0, 1], got 0")
    return float(gamma)


class _ShuffleBase(FrequencyProtocol):
    """What the single-message protocols share: one message per user from a local randomizer at ε0,
    which the protocol's accountant calibrates unless given."""

    name = ""
    messages_per_user = 1
    n_minimum = 2

    @staticmethod
    def _calibrated(
        accountant: str, given: float | None, calibrate: Callable[[], float], check: Callable[[Any], float]
    ) -> tuple[str, float]:
        """(how, value) of the randomizer's parameter: the accountant's calibration, or ``given``
        (checked, naming its argument) with how = "given"."""
        return (accountant, calibrate()) if given is None else ("given", check(given))

    def encode_batch(self, values, rng: RNGLike = None) -> np.ndarray:
        raise NotImplementedError

    def encode(self, value, rng: RNGLike = None) -> np.ndarray:
        """One user's message (a batch of one); OS CSPRNG by default."""
        return self.encode_batch([value], rng)

    @property
    def epsilon_lower_bound(self) -> float | None:
        """An ε below which this protocol's shuffled output is provably not (ε, δ)-DP (None: not computed:
        above :data:`LOWER_BOUND_MAX_N` users its bisection costs seconds to minutes, e.g. 30 s for
        k-RR at n = 10^10, and it is a diagnostic, not part of the guarantee)."""
        randomizer = "krr" if isinstance(self, ShuffledKRR) else "rappor"
        if self.n > LOWER_BOUND_MAX_N[randomizer]:
            return None
        e0 = float(self.params["epsilon0"])
        return shuffled_epsilon_lower(e0, self.n, self.delta, randomizer, k=self.domain_size)

    def _delta_at(self, eps: float, n: int) -> float:
        raise NotImplementedError

    def arrived_guarantee(self, n_arrived: int) -> tuple[ApproxDP, dict]:
        """The guarantee for the ``n_arrived`` reports that came (:func:`~privstats.shuffle.arrived.arrived_guarantee`:
        recomputed with this protocol's accountant, at most the local ε0, when fewer than n came)."""
        e0 = float(self.params["epsilon0"])
        return arrived_guarantee(
            self.epsilon,
            self.delta,
            self.n,
            int(n_arrived),
            lambda e: self._delta_at(e, int(n_arrived)),
            cap=e0,
            stacklevel=4,
        )


class ShuffledKRR(_ShuffleBase):
    """Shuffled k-ary randomized response with blanket calibration."""

    name = "shuffle-krr"

    def __init__(
        self,
        domain_size: int,
        *,
        calibration: str = "exact",
        gamma: float | None = None,
        **public: Unpack[PublicCounts],
    ):
        super().__init__(domain_size, **public)
        self.calibration, self.gamma = self._calibrated(
            calibration,
            gamma,
            lambda: krr_gamma(self.domain_size, self.n, self.epsilon, self.delta, calibration),
            _check_gamma,
        )
        k = self.domain_size
        self.epsilon0 = math.log(k / self.gamma - k + 1)
        self.local = GRR(k, self.epsilon0)

    @property
    def params(self) -> dict:
        return base_params(self, gamma=self.gamma, epsilon0=self.epsilon0)

    @property
    def bits_per_user(self) -> float:
        return max(1, math.ceil(math.log2(self.domain_size)))

    def encode_batch(self, values, rng: RNGLike = None) -> np.ndarray:
        """One message (a value in [0, k)) per user; CSPRNG by default."""
        return self.local.encode_batch(values, rng)["value"]

    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        state = self.new_state() if state is None else state
        self.check_state(state)
        msgs = np.asarray(messages)
        local_state = self.local.aggregate({"value": msgs})
        return CountState(self.name, self.params, state.n + local_state.n, state.counts + local_state.counts)

    def simulate(self, values, rng: RNGLike = None) -> CountState:
        """Exact sufficient-statistic simulation (binomial keep/resample + multinomial)."""
        s = self.local.simulate(values, as_generator(rng))
        return CountState(self.name, self.params, s.n, s.counts)

    def variance(self, true_counts) -> np.ndarray:
        return self.local.variance(self.n, true_counts)

    def _delta_at(self, eps: float, n: int) -> float:
        return krr_exact_delta(eps, self.gamma, self.domain_size, n)

    def estimate(self, state: CountState) -> Estimate:
        self.check_state(state)
        est = self.local.estimate(CountState(self.local.name, self.local.params, state.n, state.counts))
        guarantee, arrived = self.arrived_guarantee(state.n)
        return shuffle_estimate(
            self,
            est.value,
            est.stderr,
            guarantee,
            state.n,
            {"epsilon_lower_bound": self.epsilon_lower_bound, **arrived},
            params={**self.params, "calibration": self.calibration},
        )


class ShuffledRAPPOR(_ShuffleBase):
    """Shuffled RAPPOR / symmetric unary encoding, ε0 from the amplification accountant."""

    name = "shuffle-rappor"

    def __init__(
        self,
        domain_size: int,
        *,
        method: str = "tightest",
        epsilon0: float | None = None,
        **public: Unpack[PublicCounts],
    ):
        super().__init__(domain_size, **public)
        self.method, self.epsilon0 = self._calibrated(
            method,
            epsilon0,
            lambda: local_epsilon_for(
                self.epsilon, self.n, self.delta, method, k=self.domain_size, randomizer="rappor"
            ),
            lambda e: check_epsilon(e, "epsilon0", model="shuffle"),
        )
        self.p = 1.0 / (1.0 + math.exp(self.epsilon0 / 2))

    @property
    def params(self) -> dict:
        return base_params(self, flip_probability=self.p, epsilon0=self.epsilon0)

    @property
    def bits_per_user(self) -> float:
        return float(self.domain_size)

    def encode_batch(self, values, rng: RNGLike = None) -> np.ndarray:
        """One message per user: its packed B-bit noisy indicator (rows of uint8)."""
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        bits = np.zeros((values.size, self.domain_size), dtype=bool)
        bits[np.arange(values.size), values] = True
        # exact Bernoulli, flip probability rounded up toward 1/2 (ratio <= e^(ε0/2) per bit)
        t = dyadic_threshold(self.p, round_up=True)
        flips = src.bernoulli_dyadic(t, values.size * self.domain_size).reshape(bits.shape)
        return np.packbits(bits ^ flips, axis=1)

    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        state = self.new_state() if state is None else state
        self.check_state(state)
        msgs = np.asarray(messages)
        width = (self.domain_size + 7) // 8
        if msgs.ndim != 2 or msgs.shape[1] != width or msgs.dtype != np.uint8:
            raise ValueError(f"messages must be uint8 rows of {width} packed bytes")
        bits = np.unpackbits(msgs, axis=1, count=self.domain_size)
        return CountState(
            self.name, self.params, state.n + msgs.shape[0], state.counts + bits.sum(axis=0, dtype=np.int64)
        )

    def simulate(self, values, rng: RNGLike = None) -> CountState:
        """Exact sufficient statistic: column j sums Bin(x_j, 1−p) + Bin(n − x_j, p)."""
        values = as_domain_values(values, self.domain_size)
        g = as_generator(rng)
        x = np.bincount(values, minlength=self.domain_size)
        counts = g.binomial(x, 1 - self.p) + g.binomial(values.size - x, self.p)
        return CountState(self.name, self.params, int(values.size), counts.astype(np.int64))

    def variance(self, true_counts=None) -> np.ndarray | float:
        """Var(x̂_j) = n p(1−p)/(1−2p)², independent of the data."""
        v = self.n * self.p * (1 - self.p) / (1 - 2 * self.p) ** 2
        return v if true_counts is None else np.full(np.shape(true_counts), v)

    def _delta_at(self, eps: float, n: int) -> float:
        return tightest_delta(eps, self.epsilon0, n, "rappor", self.domain_size)

    def estimate(self, state: CountState) -> Estimate:
        self.check_state(state)
        guarantee, arrived = self.arrived_guarantee(state.n)
        value = (state.counts - state.n * self.p) / (1 - 2 * self.p)
        se = math.sqrt(state.n * self.p * (1 - self.p)) / (1 - 2 * self.p)
        return shuffle_estimate(
            self,
            value,
            np.full(self.domain_size, se),
            guarantee,
            state.n,
            {"epsilon_lower_bound": self.epsilon_lower_bound, **arrived},
            params={**self.params, "accountant": self.method},
        )
