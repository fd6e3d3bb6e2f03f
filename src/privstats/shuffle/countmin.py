"""Public-coin multi-message Count-Min protocol (Ghazi et al., Algorithm 2).

τ hash functions h_r: [B] → [b] come from a *public* seed (multiply-add-shift,
h(x) = ((a·x + c) mod 2^64) >> (64 − log₂b), strongly universal for x < 2^32).
A user holding x sends the τ messages (r, h_r(x)), plus every cell of the τ × b table
independently with probability γ (drawn as K ~ Bin(τb, γ) distinct cells; the
client's binomial is exact for the dyadic γ it uses).  The analyzer's table is the
hashed true counts plus i.i.d. Bin(n, γ) noise per cell — which is also the exact
sufficient-statistic simulation.  γ is calibrated numerically
(:func:`~privstats.shuffle.calibrate.countmin_gamma`) or by the paper's lemmas.

Estimators: ``"min"`` (the paper's min_r C[r, h_r(x)], minus the exact mean of the minimum of
τ noise cells instead of the paper's γn, which is biased low by ≈ σ√(2 ln τ)) and ``"mean"``
(unbiased over the hash choice: mean_r (C[r, h_r(x)] − γn − n/b)/(1 − 1/b)).

>>> cm = CountMinMultiMessage(64, n=4096, epsilon=1.0, delta=1e-6, tau=2)
>>> est = cm.estimate(cm.simulate(np.zeros(4096, dtype=int), rng=0))
>>> bool(abs(est.value[0] - 4096) < 200)
True
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np
from scipy import stats

from privstats.estimate import Estimate
from privstats.local.base import CountState
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.shuffle.arrived import arrived_guarantee
from privstats.shuffle.calibrate import countmin_delta, countmin_gamma
from privstats.shuffle.common import FrequencyProtocol, PublicCounts, base_params, shuffle_estimate
from privstats.validation import (
    MAX_CELLS,
    as_domain_values,
    check_choice,
    check_domain_size,
    check_positive_int,
)

__all__ = ["DUMMY_CELL", "CountMinMultiMessage", "exact_binomial_dyadic"]

_DYADIC_BITS = 40

#: the cell id of a padding message (the shuffler service pads every user to the same public count)
DUMMY_CELL = np.uint64(2**64 - 1)


def exact_binomial_dyadic(trials: int, numerator: int, bits: int, rng: RNGLike = None) -> int:
    """Exact Bin(trials, numerator/2^bits) from uniform bits (each trial compares a uniform ``bits``-bit word).

    Walks the bits of the threshold: the trials still tied with its prefix halve at
    each step (an exact Bin(m, ½) = popcount of m random bits).
    """
    src = as_source(rng)
    tied, successes = int(trials), 0
    for i in range(bits - 1, -1, -1):
        if tied == 0:
            break
        words = src.uint64((tied + 63) // 64)
        if tied % 64:
            words[-1] &= np.uint64((1 << (tied % 64)) - 1)
        zeros = tied - int(np.bitwise_count(words).sum())  # trials whose next bit is 0
        if (numerator >> i) & 1:
            successes += zeros  # below the threshold for sure
            tied -= zeros  # bit 1 stays tied
        else:
            tied = zeros  # bit 1 is above: fails
    return successes


class CountMinMultiMessage(FrequencyProtocol):
    """Algorithm 2 for one item per user over [0, B)."""

    name = "shuffle-countmin"

    def __init__(
        self,
        domain_size: int,
        *,
        tau: int | None = None,
        buckets: int | None = None,
        gamma: float | None = None,
        seed: int = 0,
        calibration: str = "numeric",
        estimator: str = "min",
        beta: float = 0.05,
        **public: Unpack[PublicCounts],
    ):
        if check_domain_size(domain_size) > 2**32:
            raise ValueError("domain_size must be at most 2^32 for the Count-Min hash family")
        super().__init__(domain_size, **public)
        self.tau = (
            math.ceil(math.log2(2 * self.domain_size / beta))
            if tau is None
            else check_positive_int(tau, "tau")
        )
        b = 2 * self.n if buckets is None else check_positive_int(buckets, "buckets", minimum=2)
        self.buckets = 1 << math.ceil(math.log2(b))
        if self.tau * self.buckets > MAX_CELLS:  # the analyzer's table must fit in memory
            raise ValueError(
                f"{'buckets' if buckets is not None else 'n'}: the Count-Min table would have tau x buckets = "
                f"{self.tau} x {self.buckets} cells (buckets default to 2n, rounded up to a power of two), "
                f"more than {MAX_CELLS}; pass fewer buckets (n={self.n})"
            )
        self.estimator = check_choice(estimator, "estimator", ("min", "mean"))
        check_choice(calibration, "calibration", ("numeric", "paper"))
        if gamma is None:
            gamma, self.accounting = countmin_gamma(
                self.n, self.epsilon, self.delta, tau=self.tau, method=calibration
            )
        else:
            self.accounting = {"calibration": "given"}
        # round γ up to the dyadic grid the client samples exactly (more noise is never less private)
        self.gamma_num = math.ceil(float(gamma) * 2**_DYADIC_BITS)
        self.gamma = self.gamma_num / 2**_DYADIC_BITS
        self.seed = int(seed)
        g = np.random.default_rng(self.seed)
        self._a = g.integers(0, 2**63, size=self.tau, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        self._c = g.integers(0, 2**63, size=self.tau, dtype=np.uint64) * np.uint64(2) + g.integers(
            0, 2, size=self.tau, dtype=np.uint64
        )
        self._shift = np.uint64(64 - int(math.log2(self.buckets)))

    @property
    def params(self) -> dict:
        return base_params(self, tau=self.tau, buckets=self.buckets, gamma=self.gamma, seed=self.seed)

    @property
    def messages_per_user(self) -> float:
        return self.tau + self.gamma * self.tau * self.buckets

    @property
    def bits_per_user(self) -> float:
        return self.messages_per_user * (
            math.ceil(math.log2(self.tau)) + math.log2(self.buckets)
            if self.tau > 1
            else math.log2(self.buckets)
        )

    def hashes(self, items) -> np.ndarray:
        """Cells r·b + h_r(x), shape (len(items), τ)."""
        x = np.asarray(items, dtype=np.uint64)[:, None]
        with np.errstate(over="ignore"):
            h = (self._a[None, :] * x + self._c[None, :]) >> self._shift
        return (np.arange(self.tau, dtype=np.uint64)[None, :] * np.uint64(self.buckets) + h).astype(np.int64)

    @property
    def state_size(self) -> int:
        return self.tau * self.buckets

    # ---- client -------------------------------------------------------------------------------------------------
    def encode(self, value, rng: RNGLike = None) -> np.ndarray:
        """One user's messages (cell ids, uint64): τ real cells and a Bin(τb, γ) blanket of distinct cells."""
        x = as_domain_values([value], self.domain_size)
        src = as_source(rng)
        cells = self.tau * self.buckets
        k = exact_binomial_dyadic(cells, self.gamma_num, _DYADIC_BITS, src)
        chosen = np.zeros(0, dtype=np.int64)
        while chosen.size < k:
            chosen = np.unique(np.concatenate([chosen, src.integers(cells, size=k - chosen.size)]))
        chosen = chosen[src.permutation(chosen.size)] if chosen.size else chosen
        return np.concatenate([self.hashes(x).ravel(), chosen]).astype(np.uint64)

    def encode_batch(self, values, rng: RNGLike = None) -> np.ndarray:
        src = as_source(rng)
        return np.concatenate([self.encode(v, src) for v in as_domain_values(values, self.domain_size)])

    @property
    def message_cap(self) -> int:
        """Public number of messages per user when padded: τ plus the blanket's mean + 14 sd + 40.

        The blanket size K ~ Bin(τb, γ) does not depend on the user's value, so padding to a fixed
        count only hides K from the shuffler; K exceeds the cap with probability below 1e-40.
        """
        cells = self.tau * self.buckets
        mean = cells * self.gamma
        return self.tau + min(cells, math.ceil(mean + 14 * math.sqrt(mean * (1 - self.gamma)) + 40))

    def encode_padded(self, value, rng: RNGLike = None) -> np.ndarray:
        """One user's messages padded with :data:`DUMMY_CELL` to :attr:`message_cap` (shuffler service).

        A blanket larger than the cap (probability < 1e-40) is redrawn: the user's message law
        changes by less than 1e-40 in total variation, whatever its value.
        """
        src = as_source(rng)
        cap = self.message_cap
        while True:
            msgs = self.encode(value, src)
            if msgs.size <= cap:
                break
        out = np.full(cap, DUMMY_CELL, dtype=np.uint64)
        out[: msgs.size] = msgs
        return out

    # ---- aggregator ---------------------------------------------------------------------------------------------
    def aggregate(self, messages, state: CountState | None = None) -> CountState:
        state = self.new_state() if state is None else state
        self.check_state(state)
        m = np.asarray(messages)
        if m.ndim == 1 and m.dtype == np.uint64:
            m = m[m != DUMMY_CELL]  # padding messages of the shuffler service carry nothing
        if m.ndim != 1 or m.dtype.kind not in "iu" or (m.size and m.max() >= self.tau * self.buckets):
            raise ValueError(f"messages must be cell ids in [0, {self.tau * self.buckets})")
        counts = np.bincount(m.astype(np.int64), minlength=self.tau * self.buckets)
        return CountState(self.name, self.params, state.n + m.size, state.counts + counts)

    # ---- simulation ---------------------------------------------------------------------------------------------
    def simulate(self, values, rng: RNGLike = None) -> CountState:
        """Exact sufficient statistic: hashed true counts plus i.i.d. Bin(n, γ) per cell."""
        values = as_domain_values(values, self.domain_size)
        g = as_generator(rng)
        items, cnt = np.unique(values, return_counts=True)
        table = np.zeros(self.tau * self.buckets, dtype=np.int64)
        np.add.at(table, self.hashes(items).ravel(), np.repeat(cnt, self.tau))
        noise = g.binomial(values.size, self.gamma, size=table.size)
        return CountState(self.name, self.params, int(values.size * self.tau + noise.sum()), table + noise)

    def simulate_messages(self, values, rng: RNGLike = None) -> np.ndarray:
        """Message-level simulation (numpy Generator): every user's real and blanket cells, concatenated."""
        values = as_domain_values(values, self.domain_size)
        g = as_generator(rng)
        cells = self.tau * self.buckets
        k = g.binomial(cells, self.gamma, size=values.size)
        owner = np.repeat(np.arange(values.size), k)
        pick = g.integers(0, cells, size=owner.size)
        while True:  # redraw cells a user picked twice (sampling without replacement per user)
            key = owner * cells + pick
            order = np.argsort(key, kind="stable")
            dup = np.zeros(key.size, dtype=bool)
            dup[order[1:]] = key[order[1:]] == key[order[:-1]]
            if not dup.any():
                break
            pick[dup] = g.integers(0, cells, size=int(dup.sum()))
        return np.concatenate([self.hashes(values).ravel(), pick]).astype(np.uint64)

    def min_noise_moments(self, users: int | None = None) -> tuple[float, float]:
        """Mean and variance of the minimum of τ i.i.d. Bin(n, γ) cell noises (exact, from the survival function).

        The ``"min"`` estimator subtracts this mean (not γn: the minimum of τ cells sits about
        σ√(2 ln τ) below it), so it is unbiased for an item none of whose cells takes hash
        collisions (a collision only adds to a cell); its standard error is this standard deviation.
        """
        n = self.n if users is None else int(users)  # each cell's noise is Bin(users, γ)
        cache = self.__dict__.setdefault("_min_moments", {})
        if n not in cache:
            mu, sd = n * self.gamma, math.sqrt(n * self.gamma * (1 - self.gamma))
            k = np.arange(0, min(n, int(mu + 40 * sd + 40)) + 1)
            tail = stats.binom.sf(k, n, self.gamma) ** self.tau  # P(min > k)
            m1 = float(tail.sum())
            m2 = float(((2 * k + 1) * tail).sum())
            cache[n] = (m1, max(m2 - m1 * m1, 0.0))
        return cache[n]

    # ---- analyst ------------------------------------------------------------------------------------------------
    def query(self, state: CountState, items, users: int | None = None) -> np.ndarray:
        """Count estimates for ``items`` (O(τ) each) from the reports of ``users`` users (default n)."""
        n = self.n if users is None else int(users)
        table = state.counts
        c = table[self.hashes(np.asarray(items))].astype(np.float64)
        if self.estimator == "min":
            return c.min(axis=1) - self.min_noise_moments(n)[0]
        return (c.mean(axis=1) - self.gamma * n - n / self.buckets) / (1 - 1 / self.buckets)

    def users_from_messages(self, messages: int) -> tuple[int, int]:
        """(estimate, lower bound) of the users behind ``messages`` messages: each sends τ real ones and
        Bin(τb, γ) blanket ones.  A count within 7 standard deviations of n users' is taken as n (the
        messages cannot tell fewer apart); below that, the smallest m whose mean + 7 sd reaches the
        count (fewer than the users who came, except with probability < 1e-11)."""
        per_user = self.tau * (1 + self.buckets * self.gamma)
        var_user = self.tau * self.buckets * self.gamma * (1 - self.gamma)
        if messages >= self.n * per_user - 7 * math.sqrt(self.n * var_user):
            return self.n, self.n
        # smallest m with m·per_user + 7 sqrt(m var_user) >= messages: a quadratic in sqrt(m)
        r = (-7 * math.sqrt(var_user) + math.sqrt(49 * var_user + 4 * per_user * messages)) / (2 * per_user)
        low = max(0, math.floor(r * r))
        while low > 0 and (low - 1) * per_user + 7 * math.sqrt((low - 1) * var_user) >= messages:
            low -= 1
        while low * per_user + 7 * math.sqrt(low * var_user) < messages:
            low += 1
        return min(self.n, round(messages / per_user)), min(self.n, low)

    def estimate(self, state: CountState, users: int | None = None) -> Estimate:
        """Counts of the B items.  ``users``: how many users' reports the state holds (default: from the
        message count, :meth:`users_from_messages`); the guarantee is recomputed for fewer than n."""
        self.check_state(state)
        if users is None:
            users, low = self.users_from_messages(int(state.n))
        else:
            users = low = check_positive_int(users, "users", minimum=0)
            if users * self.tau > state.n:
                raise ValueError(
                    f"users: {users} users send at least {users * self.tau} messages, the state has fewer"
                )
        value = self.query(state, np.arange(self.domain_size), users)
        noise_var = users * self.gamma * (1 - self.gamma)
        se = (
            math.sqrt(noise_var / self.tau) / (1 - 1 / self.buckets)
            if self.estimator == "mean"
            else math.sqrt(self.min_noise_moments(users)[1])
        )
        guarantee, arrived = arrived_guarantee(
            self.epsilon, self.delta, self.n, low, lambda e: countmin_delta(e, low, self.gamma, self.tau)
        )
        return shuffle_estimate(
            self,
            value,
            np.full(self.domain_size, se),
            guarantee,
            users,
            {
                **arrived,
                "accounting": self.accounting,
                "stderr_note": "noise only; hash collisions add (sum of other counts^2)/b per row",
            },
            params={**self.params, "estimator": self.estimator},
        )
