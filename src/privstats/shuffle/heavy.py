"""Heavy hitters by a prefix tree (Ghazi et al. App. D, after Bassily et al. 2017).

The users are split uniformly at random into L = log₂B groups; group ℓ reports the
length-ℓ prefix of its item to its own frequency oracle (domain 2^ℓ).  Each user is in
one group, so the guarantee is the oracle's (ε, δ) by parallel composition (the paper
instead sends every prefix with (ε/L, δ/L), which costs ~L³ times the blanket messages).
Group counts are scaled by n/n_ℓ.  Decoding goes down the tree keeping prefixes whose
scaled estimate is at least threshold/2 and expanding only their two children.

>>> import numpy as np
>>> def exact(level, items, rng):            # a noiseless "oracle" for the example
...     return np.bincount(items, minlength=2 ** level).astype(float), np.zeros(2 ** level)
>>> x = np.array([5] * 60 + [2] * 30 + list(range(8)))
>>> found, counts, _ = prefix_tree_heavy_hitters(x, 8, threshold=20, level_estimator=exact, rng=0)
>>> found.tolist()
[2, 5]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privstats.privacy.randomness import RNGLike, as_generator, as_source

__all__ = ["prefix_tree_heavy_hitters"]


def prefix_tree_heavy_hitters(
    values: np.ndarray,
    B: int,
    *,
    threshold: float,
    level_estimator: Callable[[int, np.ndarray, RNGLike], tuple[np.ndarray, np.ndarray]],
    rng: RNGLike = None,
    max_frontier: int | None = None,
):
    """Items with estimated count ≥ threshold, their estimates and stderrs.

    ``level_estimator(level, prefixes, rng)`` runs the level's oracle on the group's
    prefixes (values in [0, 2^level)) and returns (count estimates, stderrs) over [0, 2^level).
    """
    L = round(math.log2(B))
    n = values.size
    # rng=None (real data): the level assignment comes from the OS CSPRNG and the level estimators
    # receive None (their own secure path); a seed gives one reproducible numpy stream
    g = None if rng is None else as_generator(rng)
    group = as_source(None).integers(L, size=n) if g is None else g.integers(0, L, size=n)
    frontier = np.array([0], dtype=np.int64)
    max_frontier = max_frontier or max(4, int(4 * n / max(threshold, 1.0)))
    est_last = se_last = None
    for level in range(1, L + 1):
        members = values[group == level - 1] >> (L - level)
        scale = n / max(members.size, 1)
        est, se = level_estimator(level, members, g)
        # the level's users are a random sample of m of the n: scaling their count by n/m adds the
        # sampling variance c (1 - c/n)(n/m - 1) of a count c (plug-in at the clipped estimate)
        est = est * scale
        c = np.clip(est, 0, n)
        se = np.sqrt((se * scale) ** 2 + c * (1 - c / max(n, 1)) * max(scale - 1.0, 0.0))
        cand = np.concatenate([2 * frontier, 2 * frontier + 1])
        keep = cand[est[cand] >= threshold / 2]
        if keep.size > max_frontier:
            keep = keep[np.argsort(-est[keep])[:max_frontier]]
        frontier = np.sort(keep)
        est_last, se_last = est, se
        if frontier.size == 0:
            break
    if frontier.size == 0 or est_last is None or se_last is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    final = frontier[est_last[frontier] >= threshold]
    return final, est_last[final], se_last[final]
