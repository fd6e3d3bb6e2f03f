"""PrivAuction: the paper's "noiseless" winner notification (Algorithm 3, steps 12–18).

Each round the curator ranks the owners' bids (ties broken uniformly at random, so
owner ids leak nothing) and asks the owner at rank r = 1, 2, … for its bid point
independently with probability ``exp(−ε_auc (r−1))`` — exactly, by
:func:`~privstats.privacy.samplers.bernoulli_exp` with a rational exponent; rank 1 is
always asked.  A point that has been its owner's bid ``τ`` times is fetched too.
Fetched points go to the curator's pool; owners never offer them again.

The top bidder is always fetched, so the pool's best point is the global greedy
choice: the auction costs nothing in optimality, only in accessed points — at most
``Σ_r e^{−ε_auc(r−1)}`` per round on average plus ``pK/τ`` forced fetches in all.

Privacy caveat (research note P-priv-4): Theorem 6 bounds the ratio of the "asked"
probabilities only; the "not asked" event near the top of the ranking has no pure-ε
bound.  :mod:`privstats.summarization.budget` reports the paper's figure for it,
flagged as heuristic.

>>> from privstats.summarization.messages import Bid
>>> auc = PrivateAuction(epsilon_auc=float("inf"), tau=None, rng=0)
>>> [r.owner for r in auc.requests([Bid(0, 1, 0.2, "a"), Bid(1, 1, 0.9, "b")], round=1)]
[1]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.privacy.samplers import bernoulli_exp
from privstats.summarization.messages import Bid, FetchRequest

__all__ = ["PrivateAuction"]


class PrivateAuction:
    """Rank-biased asking with ε_auc plus the τ-repeat rule; ``epsilon_auc=inf`` asks the winner only."""

    def __init__(self, epsilon_auc: float, tau: int | None, rng: RNGLike = None):
        if not (epsilon_auc > 0):
            raise ValueError(f"epsilon_auc must be > 0, got {epsilon_auc!r}")
        if tau is not None and tau < 1:
            raise ValueError(f"tau must be >= 1 or None, got {tau!r}")
        self.epsilon_auc = float(epsilon_auc)
        self.tau = tau
        self._src = as_source(rng)
        self._bid_counts: dict[tuple[int, str | None], int] = {}
        self._fetched: set[tuple[int, str | None]] = set()
        self.asked_biased: list[int] = []
        self.asked_forced: list[int] = []
        self.bidders: list[int] = []

    def _asked(self, rank: int) -> bool:
        if rank == 0:
            return True
        if math.isinf(self.epsilon_auc):
            return False
        return bool(bernoulli_exp(Fraction(self.epsilon_auc) * rank, rng=self._src))

    def requests(self, bids: list[Bid], round: int) -> list[FetchRequest]:
        """The fetch requests of one round (the top bidder first)."""
        active = [b for b in bids if b.value is not None]
        for b in active:
            key = (b.owner, b.handle)
            self._bid_counts[key] = self._bid_counts.get(key, 0) + 1
        order = self._src.permutation(len(active))  # uniform tie-breaking
        values = np.array([active[i].value for i in order], dtype=np.float64)
        ranked = [active[order[j]] for j in np.argsort(-values, kind="stable")]
        out: list[FetchRequest] = []
        for rank, b in enumerate(ranked):
            key = (b.owner, b.handle)
            if key not in self._fetched and self._asked(rank):
                self._fetched.add(key)
                out.append(FetchRequest(b.owner, round, b.handle))
        n_biased = len(out)
        if self.tau is not None:
            for key, count in self._bid_counts.items():
                if count >= self.tau and key not in self._fetched:
                    self._fetched.add(key)
                    out.append(FetchRequest(key[0], round, key[1]))  # type: ignore[arg-type]  # valued bids have handles
        self.bidders.append(len(active))
        self.asked_biased.append(n_biased)
        self.asked_forced.append(len(out) - n_biased)
        return out
