"""Shared helpers of the distribution statistics: neighbour relations, widths, the simulation sampler."""

from __future__ import annotations

import numpy as np

from privstats.cdf.tree import choose_mechanism

NEIGHBOURS = ("replace", "add-remove")


def _dlap_sim(gen: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Discrete Laplace draws for simulation only (difference of two geometrics)."""
    q = -np.expm1(-1.0 / scale)
    return (gen.geometric(q, shape) - gen.geometric(q, shape)).astype(np.float64)


def _width(bounds):
    return 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])


def _quantile_levels(q) -> tuple[float, ...]:
    return tuple(float(v) for v in np.atleast_1d(q))


def _short(params: dict) -> dict:
    return {k: params[k] for k in ("branching", "height") if k in params}


def _central_curve(n, epsilon, grid, method="auto"):
    mech = choose_mechanism(int(grid), epsilon, "replace", method)  # one cell per threshold
    return mech, float(np.sqrt(np.mean(mech.count_variance()[:-1]))) / n
