"""What every shuffle-model protocol shares: the head of its ``params`` and the shape of its Estimate.

>>> from privstats.shuffle import ShuffledSum
>>> list(ShuffledSum(n=100, epsilon=1.0, delta=1e-6).params)
['n', 'epsilon', 'delta', 'blanket', 'gamma', 'inputs']
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from privstats.estimate import Estimate
from privstats.local.base import CountState
from privstats.privacy.guarantees import ApproxDP
from privstats.validation import check_delta, check_domain_size, check_epsilon, check_positive_int

__all__ = [
    "FrequencyProtocol",
    "PublicCounts",
    "ShuffleProtocol",
    "base_params",
    "check_public_counts",
    "shuffle_estimate",
]


class ShuffleProtocol:
    """A shuffle-model protocol's public parameters and the (ε, δ) guarantee its calibration targets."""

    name: str
    n: int
    epsilon: float
    delta: float

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)


class PublicCounts(TypedDict):
    """The public parameters every frequency protocol takes by keyword: ``n`` users and the (ε, δ)
    target.  The protocols take them as ``**public`` and pass them to :class:`FrequencyProtocol`."""

    n: int
    epsilon: float
    delta: float


class FrequencyProtocol(ShuffleProtocol):
    """A frequency protocol over the items [0, ``domain_size``): the checked public counts (ValueError
    or TypeError naming the argument), its empty aggregator state and the check of a given state."""

    domain_size: int
    n_minimum = 1  # fewest users the protocol's accountant accepts

    def __init__(self, domain_size: int, *, n: int, epsilon: float, delta: float):
        self.domain_size, self.n, self.epsilon, self.delta = check_public_counts(
            domain_size, n, epsilon, delta, n_minimum=self.n_minimum
        )

    @property
    def params(self) -> dict:
        raise NotImplementedError

    @property
    def state_size(self) -> int:
        """Counters of the aggregator's state (one per item unless the protocol hashes)."""
        return self.domain_size

    def new_state(self) -> CountState:
        return CountState(self.name, self.params, 0, np.zeros(self.state_size, dtype=np.int64))

    def check_state(self, state: Any) -> None:
        """ValueError unless ``state`` is a CountState of this protocol with these parameters."""
        if not isinstance(state, CountState) or state.protocol != self.name or state.params != self.params:
            raise ValueError(f"state must be a CountState of {self.name} with parameters {self.params}")


def check_public_counts(
    domain_size: int, n: int, epsilon: float, delta: float, *, n_minimum: int = 1
) -> tuple[int, int, float, float]:
    """A frequency protocol's checked ``domain_size, n, epsilon, delta`` (ValueError/TypeError naming the argument)."""
    return (
        check_domain_size(domain_size),
        check_positive_int(n, "n", minimum=n_minimum),
        check_epsilon(epsilon, model="shuffle"),  # e^ε of the accountants overflows above ε ≈ 709
        check_delta(delta),
    )


def base_params(protocol: Any, **own: Any) -> dict:
    """A protocol's ``params``: ``domain_size`` (where it has one), ``n``, ``epsilon``, ``delta``, then ``own``."""
    head = {"domain_size": protocol.domain_size} if hasattr(protocol, "domain_size") else {}
    return {**head, "n": protocol.n, "epsilon": protocol.epsilon, "delta": protocol.delta, **own}


def shuffle_estimate(
    protocol: Any,
    value: Any,
    stderr: Any,
    guarantee: ApproxDP,
    n: int,
    details: dict,
    params: dict | None = None,
) -> Estimate:
    """The protocol's Estimate: model ``"shuffle"``, its name, parameters and message counts."""
    return Estimate(
        value=value,
        stderr=stderr,
        guarantee=guarantee,
        model="shuffle",
        protocol=protocol.name,
        params=protocol.params if params is None else params,
        n=n,
        messages_per_user=protocol.messages_per_user,
        bits_per_user=protocol.bits_per_user,
        details=details,
    )
