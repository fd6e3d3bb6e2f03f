"""Shared helpers of the distribution statistics: neighbour relations, widths, the simulation sampler,
the pure-DP estimate of a curve."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from privstats.cdf.tree import choose_mechanism
from privstats.estimate import Estimate
from privstats.privacy import PureDP

if TYPE_CHECKING:
    from privstats.stats.units import Call

NEIGHBOURS = ("replace", "add-remove")


def _width(bounds):
    return 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])


def _quantile_levels(q) -> tuple[float, ...]:
    return tuple(float(v) for v in np.atleast_1d(q))


def _short(params: dict) -> dict:
    return {k: params[k] for k in ("branching", "height") if k in params}


def _central_curve(n, epsilon, grid, method="auto"):
    mech = choose_mechanism(int(grid), epsilon, "replace", method)  # one cell per threshold
    return mech, float(np.sqrt(np.mean(mech.count_variance()[:-1]))) / n


def _pure_estimate(values, stderr, c: Call, protocol: str, params: dict, cost: dict, **more) -> Estimate:
    """The ε-DP :class:`Estimate` of a distribution statistic; ``n`` is published only under
    replace-one neighbours (under add/remove it is private)."""
    return Estimate(
        values,
        stderr=stderr,
        guarantee=PureDP(c.epsilon),
        model=c.model,
        protocol=protocol,
        params=params,
        n=int(c.n) if c.neighbours == "replace" else None,
        neighbours=c.neighbours,
        **cost,
        **more,
    )
