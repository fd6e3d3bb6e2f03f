"""Running the protocol in one process: messages pass through a ``transport`` only.

:func:`run_private` and :func:`run_greedy` drive the same roles (owners bid, the
curator auctions and selects); :func:`run_uniform` is the data-independent
baseline.  ``transport`` is applied to every message; :func:`json_transport`
round-trips each one through JSON, proving nothing else passes between roles.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> owners = [DataOwner(rng.normal(size=(30, 2)), i) for i in range(2)]
>>> res = run_greedy(owners, Consumer(rng.normal(size=(10, 2))), size=5, n_features=64, gamma=0.5, feature_seed=1)
>>> sum(len(i) for i in res.indices), res.accessed
(5, 5)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.privacy.guarantees import Guarantee
from privstats.privacy.randomness import RNGLike, as_source
from privstats.summarization.budget import PrivateParams, expected_asks
from privstats.summarization.features import mmd2
from privstats.summarization.gaussian import GaussianParams
from privstats.summarization.messages import message_from_dict
from privstats.summarization.roles import Consumer, Curator, DataOwner

__all__ = ["SummaryResult", "json_transport", "run_greedy", "run_pool", "run_private", "run_uniform"]


def json_transport(msg):
    """Serialize a message to JSON and back (what a service layer would do)."""
    return message_from_dict(json.loads(json.dumps(msg.to_dict())))


def _identity(msg):
    return msg


@dataclass
class SummaryResult:
    """A summary chosen from K owners.

    ``indices[i]`` are rows of owner i in selection order; ``order`` is (owner, row) in
    global selection order; ``mmd2`` the exact-kernel MMD² between the summary and the
    target; ``privacy`` the guarantee per party (``target``: the consumer's set,
    ``owners``: each owner with respect to the others' data; None = not private);
    ``accessed`` the raw source points the curator received (``accessed_target`` = |D_v|).
    """

    method: str
    indices: list[np.ndarray]
    order: np.ndarray
    mmd2: float
    privacy: dict[str, Guarantee | None]
    accessed: int
    accessed_target: int
    params: dict = field(default_factory=dict)
    accounting: dict = field(default_factory=dict)
    rounds: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)

    def points(self, owners) -> np.ndarray:
        """The selected rows gathered from the owners' arrays, in selection order."""
        return (
            np.stack([np.asarray(owners[o])[r] for o, r in self.order])
            if len(self.order)
            else np.zeros((0, 0))
        )

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "indices": [i.tolist() for i in self.indices],
            "mmd2": self.mmd2,
            "privacy": {k: (None if v is None else v.to_dict()) for k, v in self.privacy.items()},
            "accessed": self.accessed,
            "accessed_target": self.accessed_target,
            "params": self.params,
            "timings": self.timings,
        }


def _result(method, owners, consumer, curator: Curator, privacy, **extra) -> SummaryResult:
    """The result of a finished run: the consumer's delivered summary, scored against its target, and
    the raw points the curator received."""
    delivery = consumer.summary
    owners_arr, rows = delivery.owners, delivery.rows
    indices = [rows[owners_arr == i].astype(np.int64) for i in range(len(owners))]
    value = mmd2(delivery.points, consumer._target, curator.gamma) if len(rows) else float("nan")
    return SummaryResult(
        method,
        indices,
        np.stack([owners_arr, rows], 1) if len(rows) else np.zeros((0, 2), np.int64),
        value,
        privacy,
        curator.accessed,
        curator.accessed_target,
        **extra,
    )


def _exact_curator(size, n_features, gamma, feature_seed, seed_set, rng, params=None) -> Curator:
    """The curator of the non-private runs: exact (RFF) sketches, an auction only with ``params``."""
    return Curator(
        size=size, n_features=n_features, gamma=gamma, feature_seed=feature_seed, sketch="exact",
        params=params, seed_set=seed_set, rng=rng,
    )  # fmt: skip


def uniform_allocation(owners, size: int, src) -> np.ndarray:
    """Rows per owner of a uniform sample of ``size``: ⌊size/K⌋ each, the rest to random owners with rows
    to spare (owner sizes are public; nothing else is read)."""
    sizes = np.array([o.n_points for o in owners])
    take = np.minimum(size // len(owners), sizes)
    while take.sum() < size:
        spare = np.flatnonzero(take < sizes)
        take[spare[src.permutation(spare.size)[: min(spare.size, size - take.sum())]]] += 1
    return take


def _uniform_pool(owners, curator: Curator, pool: int, transport) -> None:
    """The curator's data-independent uniform sample of ``pool`` rows, added to its pool."""
    if pool <= 0:
        return
    src = curator._src
    take = uniform_allocation(owners, min(pool, sum(o.n_points for o in owners)), src)
    for o, k in zip(owners, take, strict=True):
        rows = src.permutation(o.n_points)[:k]
        curator.receive_uniform([transport(t) for t in o.send_rows(rows, round=0)])


def _run_rounds(
    owners: list[DataOwner], consumer: Consumer, curator: Curator, size: int, transport, pool: int = 0
) -> dict:
    t_owner = 0.0
    t_start = time.perf_counter()
    curator.receive_target(transport(consumer.send_target()))
    setup = curator.setup()
    t0 = time.perf_counter()
    for o in owners:
        o.receive_setup(transport(setup))
    _uniform_pool(owners, curator, pool, transport)
    t_owner += time.perf_counter() - t0
    round_times = []
    for _ in range(size):
        r0 = time.perf_counter()
        msg = curator.broadcast()
        t0 = time.perf_counter()
        bids = [transport(o.bid(transport(msg))) for o in owners]
        t_owner += time.perf_counter() - t0
        requests = curator.requests(bids)
        t0 = time.perf_counter()
        transfers = [transport(owners[q.owner].send(transport(q))) for q in requests]
        t_owner += time.perf_counter() - t0
        curator.receive_points(transfers)
        curator.select()
        round_times.append(time.perf_counter() - r0)
    consumer.receive(transport(curator.deliver()))
    total = time.perf_counter() - t_start
    return {
        "total": total,
        "owners": t_owner,
        "mwem": curator.mwem_seconds,
        "curator": total - t_owner - curator.mwem_seconds,
        "per_round": float(np.mean(round_times)),
    }


def run_private(
    owners,
    consumer,
    *,
    size,
    params: PrivateParams | GaussianParams,
    n_features,
    gamma,
    feature_seed,
    grid=64,
    sensitivity=2,
    seed_set=None,
    rng: RNGLike = None,
    transport: Callable = _identity,
    pool: int = 0,
    target_count: int | None = None,
) -> SummaryResult:
    """The private protocol (Gaussian or MWEM sketches by the type of ``params``, and PrivAuction);
    ``pool`` uniformly sampled rows join the curator's pool first."""
    gaussian = isinstance(params, GaussianParams)
    curator = Curator(
        size=size,
        n_features=n_features,
        gamma=gamma,
        feature_seed=feature_seed,
        sketch="gaussian" if gaussian else "mwem",
        params=params,
        grid=grid,
        sensitivity=sensitivity,
        seed_set=seed_set,
        rng=rng,
        target_count=target_count,
    )
    timings = _run_rounds(owners, consumer, curator, size, transport, pool)
    acc = (
        params.accounting(n_features, sensitivity)
        if isinstance(params, GaussianParams)
        else params.accounting(n_summary_releases=size - 1)
    )
    auc = curator.auction
    bidders = np.array(auc.bidders)
    rounds = {
        "asked_biased": np.array(auc.asked_biased),
        "asked_forced": np.array(auc.asked_forced),
        "bidders": bidders,
        "pool_size": np.array(curator.pool_sizes),
        "expected_asked_biased": np.array([expected_asks(int(k), params.epsilon_auc) for k in bidders]),
        "sketch_error": np.array(curator.sketch_errors),
        "sketch_error_l2": np.array(curator.sketch_errors_l2),
        "shrink_factor": np.array(curator.shrink_factors),
        "target_sketch_error": curator.target_sketch_error,
        "pool_uniform": curator.pool_uniform,
    }
    extra: dict[str, Any] = {"sketch": "gaussian" if gaussian else "mwem"}
    if isinstance(params, GaussianParams):
        extra.update(summary_sigmas=list(params.summary_sigmas), lattice_step=curator._gauss.step)
    return _result(
        "private",
        owners,
        consumer,
        curator,
        {"target": acc["target"], "owners": acc["owners"]},
        params={
            **vars(params),
            **extra,
            "n_features": n_features,
            "gamma": gamma,
            "grid": grid,
            "sensitivity": sensitivity,
            "feature_seed": feature_seed,
            "seed_set_size": 0 if seed_set is None else len(seed_set),
            "auction_guarantee": "heuristic (Theorem 6 covers only the 'asked' event)",
        },
        accounting=acc["detail"],
        rounds=rounds,
        timings=timings,
    )


def run_greedy(
    owners,
    consumer,
    *,
    size,
    n_features,
    gamma,
    feature_seed,
    seed_set=None,
    rng: RNGLike = None,
    transport: Callable = _identity,
    epsilon_auc: float = float("inf"),
    tau: int | None = None,
) -> SummaryResult:
    """Non-private distributed greedy: exact RFF means broadcast, the winner fetched (Kim et al. 2016).

    A finite ``epsilon_auc`` runs the private auction on the exact sketches (for tests)."""
    params = None
    if np.isfinite(epsilon_auc):
        params = PrivateParams(0.0, 0.0, epsilon_auc, tau, 0, 0, 0.0)  # type: ignore[arg-type]  # None: no cap
    curator = _exact_curator(size, n_features, gamma, feature_seed, seed_set, rng, params)
    timings = _run_rounds(owners, consumer, curator, size, transport)
    rounds = {
        "asked_biased": np.array(curator.auction.asked_biased),
        "asked_forced": np.array(curator.auction.asked_forced),
        "pool_size": np.array(curator.pool_sizes),
    }
    return _result(
        "greedy",
        owners,
        consumer,
        curator,
        {"target": None, "owners": None},
        params={
            "n_features": n_features,
            "gamma": gamma,
            "feature_seed": feature_seed,
            "seed_set_size": 0 if seed_set is None else len(seed_set),
        },
        rounds=rounds,
        timings=timings,
    )


def run_uniform(
    owners, consumer, *, size, gamma, rng: RNGLike = None, transport: Callable = _identity
) -> SummaryResult:
    """Uniform sampling: ⌊p/K⌋ rows from each owner (the remainder to random owners with rows to spare)."""
    t0 = time.perf_counter()
    src = as_source(rng)
    take = uniform_allocation(owners, size, src)
    curator = Curator(size=size, n_features=1, gamma=gamma, feature_seed=0, sketch="exact")
    for o, k in zip(owners, take, strict=False):
        rows = src.permutation(o.n_points)[:k]
        curator.add_uniform([transport(t) for t in o.send_rows(rows, round=0)])
    consumer.receive(transport(curator.deliver()))
    nothing_spent = {"target": _zero(), "owners": _zero()}
    res = _result("uniform", owners, consumer, curator, nothing_spent, params={"per_owner": take.tolist()})
    res.timings = {"total": time.perf_counter() - t0}
    return res


def run_pool(
    owners,
    consumer,
    *,
    size,
    pool,
    n_features,
    gamma,
    feature_seed,
    seed_set=None,
    rng: RNGLike = None,
    transport: Callable = _identity,
) -> SummaryResult:
    """No sketch, no auction: the curator draws a uniform sample of ``pool`` ≥ ``size`` rows (data-independent)
    and keeps the ``size`` its exact (RFF) greedy step prefers.  Owners see only data-independent requests and
    nothing is released to them, so no party spends privacy budget; with ``pool == size`` this is uniform
    sampling."""
    t0 = time.perf_counter()
    curator = _exact_curator(size, n_features, gamma, feature_seed, seed_set, rng)
    curator.receive_target(transport(consumer.send_target()))
    curator.setup()  # h1 and the exact target mean stay with the trusted curator: nothing is sent
    _uniform_pool(owners, curator, max(int(pool), size), transport)
    for _ in range(size):
        curator.select()
    consumer.receive(transport(curator.deliver()))
    res = _result(
        "uniform-pool",
        owners,
        consumer,
        curator,
        {"target": _zero(), "owners": _zero()},
        params={"sketch": None, "pool": curator.pool_uniform, "n_features": n_features, "gamma": gamma},
        rounds={"pool_uniform": curator.pool_uniform, "pool_size": np.array(curator.pool_sizes)},
    )
    res.timings = {"total": time.perf_counter() - t0}
    return res


def _zero():
    from privstats.privacy.guarantees import PureDP

    return PureDP(0.0)
