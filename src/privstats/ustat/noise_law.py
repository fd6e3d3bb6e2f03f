"""The exact noise law of a real pair backend, shared by the backend and its simulation.

>>> NoiseLaw(unit=0.5, variance=7.9).offset
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NoiseLaw"]


@dataclass(frozen=True)
class NoiseLaw:
    """The exact noise law of a real pair backend, so that a simulation is equal in distribution to it.

    ``unit``: the kernel grid (the kernel enters as the integer ``v = (f − lo)/unit``); ``variance``: the
    law's noise variance in grid units² (what the real backend reports); ``keep``: randomized
    response's realised keep probability; ``cycle_pmf``: P(noise ≡ z mod 2^B), z = 0..2^B − 1, of a
    release ``(v + noise) mod 2^B`` read into the window of 2^B integers from ``low``; ``offset``:
    E[noise], removed by the aggregator.
    """

    unit: float
    variance: float
    keep: float | None = None
    cycle_pmf: np.ndarray | None = None
    low: int = 0
    offset: float = 0.0
