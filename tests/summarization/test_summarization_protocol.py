"""The protocol: greedy equivalence, the auction, accounting, the public API and bad input."""

import math

import numpy as np
import pytest

import privstats
from privstats.privacy import advanced_composition, optimal_composition, zcdp_to_approx
from privstats.summarization import (
    Consumer,
    DataOwner,
    PrivateParams,
    ProtocolError,
    json_transport,
    plan_private,
    run_greedy,
    sketch_accounting,
)
from privstats.summarization.auction import PrivateAuction
from privstats.summarization.budget import expected_asks, paper_auction_parameters
from privstats.summarization.features import RandomFourierFeatures, mmd2
from privstats.summarization.messages import Bid, FetchRequest

GAMMA, D, SEED = 0.3, 64, 11


def _problem(seed=0, K=4, m=60, dim=3):
    rng = np.random.default_rng(seed)
    owners = [rng.normal(loc=0.4 * i, size=(m, dim)) for i in range(K)]
    target = rng.normal(loc=0.8, size=(40, dim))
    return owners, target


def _central_greedy(owners, target, size, seed_set=None):
    """Centralised greedy on J with the RFF (linear) kernel, by brute force on the objective."""
    h1 = RandomFourierFeatures(target.shape[1], D, GAMMA, SEED)
    pts = np.vstack(owners)
    who = np.concatenate([[(i, r) for r in range(len(o))] for i, o in enumerate(owners)])
    H, mv = h1.transform(pts), h1.transform(target).mean(0)
    S = list(h1.transform(seed_set)) if seed_set is not None else []
    chosen, free = [], np.ones(len(pts), bool)
    for _ in range(size):
        best, arg = -np.inf, -1
        for j in np.flatnonzero(free):
            T = np.array([*S, H[j]])
            J = 2 * (T @ mv).mean() - (T @ T.T).mean()
            if best < J:
                best, arg = J, j
        free[arg] = False
        S.append(H[arg])
        chosen.append(tuple(who[arg]))
    return chosen


@pytest.mark.parametrize("with_seed", [False, True])
def test_distributed_greedy_equals_centralised_greedy(with_seed):
    owners, target = _problem(1, m=25)
    seed_set = np.random.default_rng(9).normal(size=(5, 3)) if with_seed else None
    res = run_greedy(
        [DataOwner(o, i) for i, o in enumerate(owners)],
        Consumer(target),
        size=8,
        n_features=D,
        gamma=GAMMA,
        feature_seed=SEED,
        seed_set=seed_set,
        rng=0,
        transport=json_transport,
    )
    assert [tuple(x) for x in res.order] == _central_greedy(owners, target, 8, seed_set)
    assert res.accessed == 8


@pytest.mark.parametrize("eps_auc,tau", [(0.3, 2), (2.0, 3), (1e-3, 1)])
def test_private_auction_on_exact_sketches_picks_what_greedy_picks(eps_auc, tau):
    """ε → ∞ in the sketches: the auction + pool + no re-offering reproduces greedy exactly."""
    owners, target = _problem(2)
    mk = lambda: [DataOwner(o, i) for i, o in enumerate(owners)]
    greedy = run_greedy(mk(), Consumer(target), size=20, n_features=D, gamma=GAMMA, feature_seed=SEED, rng=0)
    auct = run_greedy(
        mk(),
        Consumer(target),
        size=20,
        n_features=D,
        gamma=GAMMA,
        feature_seed=SEED,
        rng=1,
        epsilon_auc=eps_auc,
        tau=tau,
        transport=json_transport,
    )
    assert np.array_equal(greedy.order, auct.order)
    assert auct.accessed >= greedy.accessed
    assert auct.rounds["asked_forced"].sum() <= 20 * len(owners) / tau


def test_auction_fetches_top_bidder_and_asks_as_many_as_expected():
    K, rounds, eps_auc = 8, 600, 0.4
    auc = PrivateAuction(eps_auc, tau=None, rng=3)
    rng = np.random.default_rng(4)
    asked = []
    for r in range(rounds):
        values = rng.normal(size=K)
        bids = [Bid(i, r, float(v), f"h{r}-{i}") for i, v in enumerate(values)]
        req = auc.requests(bids, r)
        assert req[0].owner == int(np.argmax(values))  # the top bidder always, first
        asked.append(len(req))
    p = np.exp(-eps_auc * np.arange(K))
    mean, se = p.sum(), math.sqrt((p * (1 - p)).sum() / rounds)
    assert abs(np.mean(asked) - mean) < 5 * se
    assert abs(expected_asks(K, eps_auc) - mean) < 1e-12
    p_wrong = np.exp(-eps_auc / 2 * np.arange(K))  # half the bias is detected
    assert abs(np.mean(asked) - p_wrong.sum()) > 5 * se


def test_tau_rule_forces_repeated_bids_and_bound():
    auc = PrivateAuction(float("inf"), tau=2, rng=0)
    b = lambda r: [Bid(0, r, 1.0, "top"), Bid(1, r, 0.5, "stay")]
    assert [q.handle for q in auc.requests(b(1), 1)] == ["top"]
    assert [q.handle for q in auc.requests([Bid(0, 2, 1.0, "next"), Bid(1, 2, 0.5, "stay")], 2)] == [
        "next",
        "stay",
    ]
    assert auc.asked_forced == [0, 1]


def test_private_protocol_run_bookkeeping():
    owners, target = _problem(3)
    res = privstats.summarize(
        owners,
        target,
        size=30,
        epsilon=1.0,
        delta=1e-5,
        rng=2,
        n_features=D,
        gamma=GAMMA,
        t_init=200,
        transport=json_transport,
        fallback=False,  # 40 target rows at ε = 1: the planner would sample uniformly
    )
    assert res.method == "private"
    assert sum(len(i) for i in res.indices) == 30
    assert len({tuple(x) for x in res.order}) == 30  # no point selected twice
    for i, idx in enumerate(res.indices):
        assert idx.dtype.kind == "i" and np.all((idx >= 0) & (idx < len(owners[i])))
    assert res.mmd2 == pytest.approx(mmd2(res.points(owners), target, GAMMA))
    rounds = res.rounds
    assert rounds["pool_uniform"] == 60  # the default uniform pool: 2·size rows, data-independent
    assert res.accessed == rounds["asked_biased"].sum() + rounds["asked_forced"].sum() + 60
    assert rounds["asked_forced"].sum() <= 30 * len(owners) / res.params["tau"]
    p = np.exp(-res.params["epsilon_auc"] * np.arange(len(owners)))
    assert rounds["asked_biased"].mean() <= rounds["expected_asked_biased"].mean() + 5 * math.sqrt(
        (p * (1 - p)).sum() / 30
    )
    assert res.accessed_target == len(target)


def test_owner_never_reoffers_and_rejects_unknown_handles():
    owner = DataOwner(np.arange(6.0).reshape(3, 2), 0)
    with pytest.raises(ProtocolError):
        owner.send(FetchRequest(0, 1, "nope"))
    owner.send_rows([1], round=0)
    with pytest.raises(ProtocolError):
        owner.send_rows([1], round=0)


def test_privacy_totals_match_composition_formulas():
    # the paper's §4 numbers under its own count (one mechanism per MWEM iteration, DRV)
    assert sketch_accounting(0.01, 1656, 0.01)["paper"].epsilon == pytest.approx(1.401, abs=1e-3)
    p = 200
    assert sketch_accounting(0.01 / math.sqrt(5 * p), 5 * p, 1e-4)["paper"].epsilon == pytest.approx(
        0.0430, abs=2e-4
    )
    # the correct count: 2 mechanisms per iteration; EM ε²/8-zCDP, Laplace ε²/2-zCDP
    eps, T, delta = 0.01, 1656, 0.01
    acc = sketch_accounting(eps, T, delta)
    expected = min(
        2 * T * eps,
        advanced_composition(eps, 2 * T, delta).epsilon,
        optimal_composition(eps, 2 * T, delta).epsilon,
        zcdp_to_approx(T * eps**2 * 5 / 8, delta).epsilon,
    )
    assert acc["tight"].epsilon == pytest.approx(expected, rel=1e-12)
    assert acc["advanced"].epsilon > acc["paper"].epsilon  # the paper undercounts under its own formula


@pytest.mark.parametrize("eps,delta,K,p", [(1.0, 1e-5, 5, 100), (0.3, 1e-6, 20, 50)])
def test_planner_spends_the_budget_per_party(eps, delta, K, p):
    params = plan_private(eps, delta, n_owners=K, size=p, n_features=64)
    acc = params.accounting(n_summary_releases=p - 1)
    for party in ("target", "owners"):
        assert 0.98 * eps <= acc[party].epsilon <= eps * (1 + 1e-9)
        assert acc[party].delta <= delta * (1 + 1e-12)
    assert params.tau == math.ceil(K ** (2 / 3))
    eps_auc, tau = paper_auction_parameters(1.0, 1e-4, 5)
    assert eps_auc == pytest.approx(0.0150, abs=1e-4) and tau == 3  # research note table A.1


def test_methods_and_inputs_unchanged():
    owners, target = _problem(4)
    before = [o.copy() for o in owners]
    uni = privstats.summarize(owners, target, size=10, method="uniform", rng=0)
    assert sorted(len(i) for i in uni.indices) == [2, 2, 3, 3]
    assert uni.accessed == 10 and uni.privacy["owners"].epsilon == 0
    greedy = privstats.summarize(owners, target, size=10, method="greedy", rng=0, n_features=D)
    assert greedy.privacy["target"] is None and greedy.accessed == 10
    assert all(np.array_equal(a, b) for a, b in zip(owners, before, strict=False))


def test_large_epsilon_private_is_close_to_greedy_and_beats_uniform():
    owners, target = _problem(5, m=80)
    kw = dict(size=25, rng=3, n_features=32, gamma=GAMMA)
    greedy = privstats.summarize(owners, target, method="greedy", **kw)
    uniform = privstats.summarize(owners, target, method="uniform", **kw)
    big = PrivateParams(5.0, 5.0, 50.0, 2, 3000, 40, 1e-5)
    private = privstats.summarize(owners, target, params=big, **kw)
    assert private.mmd2 < uniform.mmd2
    assert private.mmd2 < greedy.mmd2 + 0.5 * (uniform.mmd2 - greedy.mmd2)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(owners=[np.zeros((5, 2)), np.zeros((5, 3))]), "different feature dimensions"),
        (dict(size=100), "larger than"),
        (dict(target=np.zeros((0, 2))), "target"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(delta=1.5), "delta"),
        (dict(method="best"), "method"),
        (dict(owners=[]), "owners"),
        (dict(owners=[np.array([[np.nan, 1.0]])]), "NaN"),
        (dict(target=np.zeros((3, 5))), "features"),
        (dict(size=0), "size"),
    ],
)
def test_bad_input_clear_errors(kwargs, match):
    args = dict(
        owners=[np.zeros((5, 2)), np.ones((5, 2))], target=np.ones((3, 2)), size=3, epsilon=1.0, delta=1e-5
    )
    args.update(kwargs)
    owners, target = args.pop("owners"), args.pop("target")
    with pytest.raises(ValueError, match=match):
        privstats.summarize(owners, target, rng=0, **args)
