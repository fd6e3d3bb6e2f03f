"""What every shuffle-model protocol shares: the head of its ``params`` and the shape of its Estimate.

>>> from privstats.shuffle import ShuffledSum
>>> list(ShuffledSum(n=100, epsilon=1.0, delta=1e-6).params)
['n', 'epsilon', 'delta', 'blanket', 'gamma', 'inputs']
"""

from __future__ import annotations

from typing import Any

from privstats.estimate import Estimate
from privstats.privacy.guarantees import ApproxDP
from privstats.validation import check_delta, check_domain_size, check_epsilon, check_positive_int

__all__ = ["ShuffleProtocol", "base_params", "check_public_counts", "shuffle_estimate"]


class ShuffleProtocol:
    """A shuffle-model protocol's public parameters and the (ε, δ) guarantee its calibration targets."""

    name: str
    n: int
    epsilon: float
    delta: float

    @property
    def guarantee(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)


def check_public_counts(
    domain_size: int, n: int, epsilon: float, delta: float, *, n_minimum: int = 1
) -> tuple[int, int, float, float]:
    """A frequency protocol's checked ``domain_size, n, epsilon, delta`` (ValueError/TypeError naming the argument)."""
    return (
        check_domain_size(domain_size),
        check_positive_int(n, "n", minimum=n_minimum),
        check_epsilon(epsilon),
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
