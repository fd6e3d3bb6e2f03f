"""DP distributed data summarization under covariate shift (Sarpatwar et al., NeurIPS 2019).

``summarize`` chooses ``size`` rows from K owners' data sets so that the summary's
distribution matches a consumer's target set (minimum MMD² under the RBF kernel),
with the roles separated as in :mod:`privstats.summarization`:

* ``method="private"`` — the paper's protocol with the corrected bid: private sketches
  of the target's and of the summary's mean embeddings broadcast to the owners, and
  the private auction.  ``(epsilon, delta)`` is spent once *per party*: the consumer's
  target set gets (ε, δ)-DP from everything the owners see, and each owner gets
  (ε, δ)-DP with respect to the other owners' data (sketches + the auction, the
  auction's part being the paper's heuristic argument; see ``result.params``).
  ``sketch="gaussian"`` (default) releases the mean embeddings with the exact discrete
  Gaussian under zCDP, every ``release_every`` rounds, shrunk toward a public prior
  (:mod:`privstats.summarization.gaussian`); ``sketch="mwem"`` is the paper's h2
  (MWEM), kept for reproduction — on small summaries its Laplace measurements
  saturate the multiplicative weights and the private protocol falls below uniform
  sampling (``experiments/summarization.md``).
  **Fallback**: before running, :func:`~privstats.summarization.planner.plan_summary` compares,
  from public parameters only (ε, δ, target size, summary size, owners, dimension, γ), the noise
  the target sketch puts into a bid with the spread of the bids' signal on standardised data.
  When the noise is at least the spread (a target too small for the budget) the sketch is
  expected to be no better than uniform sampling, and no sketch is released: the curator draws a
  uniform sample of ``pool`` rows (default 2·size; data-independent requests) and its exact greedy
  keeps ``size`` of them (``result.method == "uniform-pool"``, nothing spent; ``pool <= size`` is
  plain uniform sampling, ``result.method == "uniform"``).  ``result.params["plan"]`` says what was
  chosen and why.  ``fallback=False`` forces the sketch.  The rule is the no-shift worst case:
  under a real covariate shift it also gives up cases the sketch would win
  (``docs/statistics/summarize.md``).
  **Pool**: with the Gaussian sketch the curator's pool also gets such a uniform sample of ``pool``
  rows before round 1 (``pool=0``: only the auction's fetches, the earlier protocol).  The request
  reads no data and the curator's choice is seen by no owner, so it costs no privacy, only access
  (``result.accessed``); on digits it closes most of the gap to greedy where the sketch alone does not
  (``experiments/summarization_real.py``).
  **Neighbours**: ``"replace"`` (default) keeps the target size public; under ``"add-remove"`` it is
  private, released first as a noisy count (a tenth of the target's budget) that the sketch and the
  planner use in its place (:mod:`privstats.summarization.gaussian` proves the owners learn no more).
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
>>> res = privstats.summarize(owners, target, size=20, epsilon=4.0, delta=1e-5, rng=1,
...                           n_features=64, t_init=300)
>>> res.params["plan"]["choice"], res.privacy["target"].epsilon <= 4.0
('sketch', True)
>>> small = privstats.summarize(owners, target[:10], size=20, epsilon=1.0, delta=1e-5, rng=1)
>>> small.method, small.params["plan"]["choice"], small.privacy["target"].epsilon
('uniform-pool', 'uniform', 0.0)
>>> bool(privstats.summarize(owners, target, size=20, method="greedy", rng=1).mmd2 < 0.1)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.summarization.budget import PrivateParams, plan_private
from privstats.summarization.gaussian import GaussianParams, count_sigma_for, noisy_count
from privstats.summarization.planner import plan_summary
from privstats.summarization.protocol import SummaryResult, run_greedy, run_pool, run_private, run_uniform
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


def _checked(owners, target, size, n_features, gamma, seed_set):
    """Validated inputs: (owners as DataOwner, target, size, n_features, gamma, seed_set)."""
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
    return parties, target, size, n_features, gamma, seed_set


def _plan(epsilon, delta, target_shape, gamma, sensitivity, opts: dict, shape: dict, src):
    """Plan the private run: (params, the plan's record, the released noisy target size or None, and
    whether the planner chose the fallback)."""
    sketch = check_choice(opts["sketch"], "sketch", {"gaussian", "mwem"})
    if not isinstance(opts["fallback"], (bool, np.bool_)):
        raise ValueError(f"fallback must be True or False, got {opts['fallback']!r}")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    share = opts["auction_share"]
    share = (0.25 if sketch == "gaussian" else 0.5) if share is None else share
    if not (0.0 < share < 1.0):
        raise ValueError(f"auction_share must be in (0, 1), got {share!r}")
    shape = {**shape, "auction_share": share}
    if sketch == "mwem":
        t_sub = check_positive_int(opts["t_sub"], "t_sub")
        params = plan_private(
            epsilon, delta, t_init=opts["t_init"], t_sub=t_sub, sensitivity=sensitivity, **shape
        )
        return (
            params,
            {
                "choice": "sketch",
                "reason": "sketch='mwem' (the paper's h2, kept for reproduction): no fallback",
            },
            None,
            False,
        )
    target_count = None
    if sensitivity == 1:  # released first; the planner and the sketch read only this
        target_count = noisy_count(target_shape[0], count_sigma_for(epsilon, delta), rng=src)
    clip_norm = opts["clip_norm"]
    plan = plan_summary(
        epsilon, delta, n_target=target_shape[0] if target_count is None else target_count,
        n_inputs=target_shape[1], gamma=gamma, sensitivity=sensitivity,
        release_every=check_positive_int(opts["release_every"], "release_every", minimum=0),
        clip_norm=None if clip_norm is None else check_epsilon(clip_norm, "clip_norm"),
        shrinkage=bool(opts["shrinkage"]), **shape,
    )  # fmt: skip
    if plan.choice == "uniform" and opts["fallback"]:
        return plan.params, plan.to_dict(), target_count, True
    planned = {**plan.to_dict(), "choice": "sketch"}
    if plan.choice == "uniform":
        planned["reason"] = "forced by fallback=False; the planner would use uniform: " + plan.reason
    return plan.params, planned, target_count, False


def _fallback(parties, consumer, planned, pool, features, common) -> SummaryResult:
    """No sketch: the curator's greedy on a uniform pool of ``pool`` rows (plain uniform if pool <= size)."""
    size = common["size"]
    n_pool = 2 * size if pool is None else pool
    if n_pool <= size:
        res = run_uniform(parties, consumer, gamma=features["gamma"], **common)
    else:
        res = run_pool(parties, consumer, pool=n_pool, **features, **common)
    res.params["plan"] = planned
    return res


def summarize(
    owners,
    target,
    *,
    size: int,
    epsilon: float | None = None,
    delta: float | None = None,
    rng: RNGLike = None,
    method: str = "private",
    n_features: int = 256,
    gamma: float | None = None,
    seed_set=None,
    feature_seed: int | None = None,
    sketch: str = "gaussian",
    release_every: int = 0,
    clip_norm: float | None = None,
    shrinkage: bool = False,
    t_init: int | None = None,
    t_sub: int = 5,
    grid: int = 64,
    auction_share: float | None = None,
    neighbours: str = "replace",
    params: PrivateParams | GaussianParams | None = None,
    fallback: bool = True,
    pool: int | None = None,
    transport=None,
) -> SummaryResult:
    """Choose ``size`` rows from ``owners`` matching ``target``; see the module docstring.

    ``rng``: None (OS CSPRNG, for real data) or a seed/Generator (simulation).  ``sketch="gaussian"``:
    ``release_every`` (summary sketch period in rounds), ``clip_norm`` (L2 clipping of h1 rows; default
    √(1 + 3/√(2d)): about 0.1 % of rows clipped) and ``shrinkage`` (James–Stein toward the public prior).
    ``sketch="mwem"``: ``t_init``, ``t_sub``, ``grid`` (paper's h2).  ``auction_share`` of each owner's ε
    goes to the auction (default 0.25 gaussian, 0.5 mwem).  ``params`` overrides the planned parameters
    (e.g. the paper's Table 1); its type selects the sketch and skips the planner.  ``fallback`` (default
    True): no sketch when the planner predicts it is no better than uniform.  ``pool``: rows of the
    curator's data-independent uniform sample (default 2·size with the Gaussian sketch and in the
    fallback, 0 with MWEM).  Returns a :class:`~privstats.summarization.protocol.SummaryResult`.
    """
    method = check_choice(method, "method", {"private", "greedy", "uniform"})
    pool = None if pool is None else check_positive_int(pool, "pool", minimum=0)
    parties, target, size, n_features, gamma, seed_set = _checked(
        owners, target, size, n_features, gamma, seed_set
    )
    src = as_source(rng)
    feature_seed = int(src.integers(2**62)) if feature_seed is None else feature_seed  # public (in Setup)
    consumer = Consumer(target)
    common: dict[str, Any] = dict(size=size, rng=src, transport=transport or (lambda m: m))
    features: dict[str, Any] = dict(
        n_features=n_features, gamma=gamma, feature_seed=feature_seed, seed_set=seed_set
    )
    if method == "uniform":
        return run_uniform(parties, consumer, gamma=gamma, **common)
    if method == "greedy":
        return run_greedy(parties, consumer, **features, **common)
    neighbours = check_choice(neighbours, "neighbours", {"replace", "add-remove"})
    sensitivity = 2 if neighbours == "replace" else 1
    planned: dict = {"choice": "sketch", "reason": "parameters given (params=): no planning, no fallback"}
    target_count = None  # add/remove: the released noisy target size (the exact one stays with the curator)
    if params is None:  # plan (and maybe fall back)
        opts = dict(
            sketch=sketch, auction_share=auction_share, t_init=t_init, t_sub=t_sub, release_every=release_every,
            clip_norm=clip_norm, shrinkage=shrinkage, fallback=fallback,
        )  # fmt: skip
        shape = dict(n_owners=len(parties), size=size, n_features=n_features)
        params, planned, target_count, fell_back = _plan(
            epsilon, delta, target.shape, gamma, sensitivity, opts, shape, src
        )
        if fell_back:
            return _fallback(parties, consumer, planned, pool, features, common)
    elif not isinstance(params, (PrivateParams, GaussianParams)):
        raise ValueError(f"params must be PrivateParams or GaussianParams, got {type(params).__name__}")
    pool = (2 * size if isinstance(params, GaussianParams) else 0) if pool is None else pool
    res = run_private(
        parties, consumer, params=params, grid=grid, sensitivity=sensitivity, pool=pool,
        target_count=target_count, **features, **common,
    )  # fmt: skip
    res.params["plan"] = planned
    return res
