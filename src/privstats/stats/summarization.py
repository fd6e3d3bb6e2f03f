"""DP distributed data summarization under covariate shift (Sarpatwar et al., NeurIPS 2019).

``summarize`` chooses ``size`` rows from K owners' data sets so that the summary's
distribution matches a consumer's target set (minimum MMD² under the RBF kernel),
with the roles separated as in :mod:`privstats.summarization`:

* ``method="private"`` — the paper's protocol with the corrected bid: MWEM sketches
  (h2) of the target and of the summary broadcast to the owners, and the private
  auction.  ``(epsilon, delta)`` is spent once *per party*: the consumer's target set
  gets (ε, δ)-DP from everything the owners see, and each owner gets (ε, δ)-DP
  with respect to the other owners' data (sketches + the auction, the auction's
  part being the paper's heuristic argument; see ``result.params``).
* ``method="greedy"`` — non-private distributed greedy on exact RFF means.
* ``method="uniform"`` — ⌊size/K⌋ uniformly random rows per owner.

The kernel bandwidth ``gamma`` must be public (default 1/n_inputs, which needs only
the dimension): standardise features with public statistics first.  The summary
delivered to the consumer consists of raw rows (that is its purpose) and is outside
the DP guarantee, which covers what owners learn.

>>> import numpy as np, privstats
>>> rng = np.random.default_rng(0)
>>> owners = [rng.normal(size=(200, 3)), rng.normal(1.0, size=(200, 3))]
>>> target = rng.normal(1.0, size=(50, 3))
>>> res = privstats.summarize(owners, target, size=20, epsilon=1.0, delta=1e-5, rng=1,
...                           n_features=64, t_init=300)
>>> [len(i) for i in res.indices], res.privacy["target"].epsilon <= 1.0
([...], True)
>>> bool(privstats.summarize(owners, target, size=20, method="greedy", rng=1).mmd2 < 0.1)
True
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.summarization.budget import PrivateParams, plan_private
from privstats.summarization.protocol import SummaryResult, run_greedy, run_private, run_uniform
from privstats.summarization.roles import Consumer, DataOwner
from privstats.validation import as_float_array, check_choice, check_delta, check_epsilon, check_positive_int

__all__ = ["summarize"]


def _owners(owners) -> list[DataOwner]:
    if isinstance(owners, np.ndarray) or not isinstance(owners, Sequence) or len(owners) == 0:
        raise ValueError("owners must be a non-empty list of 2-d arrays (one per owner) or DataOwner objects")
    out, dims = [], set()
    for i, o in enumerate(owners):
        if isinstance(o, DataOwner):
            out.append(o)
            dims.add(o.n_inputs)
            continue
        arr = as_float_array(o, f"owners[{i}]", ndim=2)
        dims.add(arr.shape[1])
        out.append(DataOwner(arr, i))
    if len(dims) > 1:
        raise ValueError(f"owners have different feature dimensions: {sorted(dims)}")
    return out


def summarize(owners, target, *, size: int, epsilon: float | None = None, delta: float | None = None,
              rng: RNGLike = None, method: str = "private", n_features: int = 256, gamma: float | None = None,
              seed_set=None, feature_seed: int | None = None, t_init: int | None = None, t_sub: int = 5,
              grid: int = 64, auction_share: float = 0.5, neighbours: str = "replace",
              params: PrivateParams | None = None, transport=None) -> SummaryResult:
    """Choose ``size`` rows from ``owners`` matching ``target``; see the module docstring.

    ``rng``: None (OS CSPRNG, for real data) or a seed/Generator (simulation).  ``params``
    overrides the planned per-mechanism privacy parameters (e.g. the paper's Table 1).
    Returns a :class:`~privstats.summarization.protocol.SummaryResult`.
    """
    method = check_choice(method, "method", {"private", "greedy", "uniform"})
    parties = _owners(owners)
    target = as_float_array(target, "target", ndim=2)
    n_inputs = parties[0].n_inputs
    if target.shape[1] != n_inputs:
        raise ValueError(f"target has {target.shape[1]} features, the owners have {n_inputs}")
    total = sum(o.n_points for o in parties)
    size = check_positive_int(size, "size")
    if size > total:
        raise ValueError(f"size ({size}) is larger than the owners' data ({total} rows)")
    n_features = check_positive_int(n_features, "n_features", minimum=2)
    gamma = 1.0 / n_inputs if gamma is None else check_epsilon(gamma, "gamma")
    if seed_set is not None:
        seed_set = as_float_array(seed_set, "seed_set", ndim=2, allow_empty=True)
        if seed_set.size and seed_set.shape[1] != n_inputs:
            raise ValueError(f"seed_set has {seed_set.shape[1]} features, the owners have {n_inputs}")
    src = as_source(rng)
    if feature_seed is None:
        feature_seed = int(src.integers(2**62))           # public, sent to every party in Setup
    transport = transport or (lambda m: m)
    consumer = Consumer(target)
    if method == "uniform":
        return run_uniform(parties, consumer, size=size, gamma=gamma, rng=src, transport=transport)
    if method == "greedy":
        return run_greedy(parties, consumer, size=size, n_features=n_features, gamma=gamma,
                          feature_seed=feature_seed, seed_set=seed_set, rng=src, transport=transport)
    neighbours = check_choice(neighbours, "neighbours", {"replace", "add-remove"})
    if params is None:
        epsilon = check_epsilon(epsilon)
        delta = check_delta(delta)
        if not (0.0 < auction_share < 1.0):
            raise ValueError(f"auction_share must be in (0, 1), got {auction_share!r}")
        params = plan_private(epsilon, delta, n_owners=len(parties), size=size, n_features=n_features,
                              t_init=t_init, t_sub=check_positive_int(t_sub, "t_sub"), auction_share=auction_share)
    return run_private(parties, consumer, size=size, params=params, n_features=n_features, gamma=gamma,
                       feature_seed=feature_seed, grid=grid, sensitivity=2 if neighbours == "replace" else 1,
                       seed_set=seed_set, rng=src, transport=transport)
