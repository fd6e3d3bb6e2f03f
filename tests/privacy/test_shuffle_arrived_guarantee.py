"""Shuffled estimates never claim a guarantee computed for users who never came (issue 22, leak 5).

``ShuffledKRR(8, n=200, epsilon=1, delta=1e-6).simulate(two values).estimate()`` used to claim
(1, 1e-6) with n = 2 though each report used ε0 = 1.98; the multi-message classes reported n = 200
after 5 reports.  Now the estimate's n is the arrived n, its guarantee is recomputed for that n with
the protocol's own accountant (valid: the bound holds at the claimed ε; recomputed: it fails just
below), a WeakerGuaranteeWarning says so, and a protocol with no finite ε refuses by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privstats.privacy.amplification import tightest_delta
from privstats.shuffle import (
    CountMinMultiMessage,
    HadamardMultiMessage,
    ShuffledKRR,
    ShuffledRAPPOR,
    ShuffledSum,
)
from privstats.shuffle.arrived import TooFewUsersError, WeakerGuaranteeWarning
from privstats.shuffle.calibrate import countmin_delta, hadamard_swap_delta
from privstats.shuffle.single import krr_exact_delta
from privstats.shuffle.summation import _sum_delta


def _weaker(proto, state, **kw):
    with pytest.warns(WeakerGuaranteeWarning, match="were planned"):
        est = proto.estimate(state, **kw)
    assert est.details["guarantee_weaker_than_planned"] is True
    assert est.details["planned_guarantee"] == {"epsilon": 1.0, "delta": 1e-6, "n": proto.n}
    assert est.guarantee.delta == 1e-6 and est.guarantee.epsilon > 1.0
    return est


def _planned(proto, state, n):
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeakerGuaranteeWarning)
        est = proto.estimate(state)
    assert est.n == n and (est.guarantee.epsilon, est.guarantee.delta) == (1.0, 1e-6)
    assert "guarantee_weaker_than_planned" not in est.details


def test_krr_two_users_claim_the_local_epsilon0():
    rr = ShuffledKRR(8, n=200, epsilon=1.0, delta=1e-6)
    est = _weaker(rr, rr.simulate([3, 5], rng=0))
    assert est.n == 2
    # two users barely amplify: the claim is ε0 itself, up to the accountant's bisection (was the planned 1)
    assert 0.999 * rr.epsilon0 <= est.guarantee.epsilon <= rr.epsilon0 and rr.epsilon0 > 1.97
    _planned(rr, rr.simulate(np.arange(200) % 8, rng=0), 200)


def test_krr_messages_path_and_a_partial_batch_are_recomputed_exactly():
    rr = ShuffledKRR(8, n=200, epsilon=1.0, delta=1e-6)
    state = rr.aggregate(rr.encode_batch(np.arange(120) % 8, rng=1))
    est = _weaker(rr, state)
    e = est.guarantee.epsilon
    assert est.n == 120 and e < rr.epsilon0
    assert krr_exact_delta(e, rr.gamma, 8, 120) <= 1e-6 < krr_exact_delta(e * 0.999, rr.gamma, 8, 120)


def test_rappor_recomputed_with_its_accountant():
    rp = ShuffledRAPPOR(8, n=200, epsilon=1.0, delta=1e-6)
    est = _weaker(rp, rp.simulate(np.arange(150) % 8, rng=0))
    e = est.guarantee.epsilon
    assert est.n == 150 and 1.0 < e < rp.epsilon0
    assert (
        tightest_delta(e, rp.epsilon0, 150, "rappor", 8)
        <= 1e-6
        < tightest_delta(e * 0.999, rp.epsilon0, 150, "rappor", 8)
    )
    few = _weaker(rp, rp.simulate([1, 2, 3, 4, 5], rng=0))
    assert few.n == 5 and few.guarantee.epsilon <= rp.epsilon0 + 1e-12
    _planned(rp, rp.simulate(np.arange(200) % 8, rng=0), 200)


def test_sum_recomputes_or_refuses():
    sm = ShuffledSum(n=10_000, epsilon=1.0, delta=1e-6, blanket=4)
    est = _weaker(sm, sm.simulate(np.ones(9000), rng=0))
    e = est.guarantee.epsilon
    assert est.n == 9000 and _sum_delta(e, 9000 * 4, sm.gamma) <= 1e-6 < _sum_delta(
        e * 0.999, 9000 * 4, sm.gamma
    )
    with pytest.raises(TooFewUsersError, match="10 of the planned n=10000"):
        sm.estimate(sm.simulate(np.ones(10), rng=0))
    _planned(sm, sm.simulate(np.ones(10_000), rng=0), 10_000)


def test_hadamard_reports_the_arrived_users_and_their_guarantee():
    h = HadamardMultiMessage(16, n=200, epsilon=1.0, delta=1e-6)
    est = _weaker(h, h.simulate(np.arange(5), rng=0))
    e = est.guarantee.epsilon
    assert est.n == 5  # was 200
    assert hadamard_swap_delta(e, 5 * h.rho, h.tau) <= 1e-6 < hadamard_swap_delta(e * 0.999, 5 * h.rho, h.tau)
    _planned(h, h.simulate(np.arange(200) % 16, rng=0), 200)


def test_countmin_reports_the_arrived_users_and_their_guarantee():
    cm = CountMinMultiMessage(64, n=4096, epsilon=1.0, delta=1e-6, tau=2)
    with pytest.raises(TooFewUsersError, match="of the planned n=4096"):
        cm.estimate(cm.simulate(np.arange(10), rng=0))  # was: n = 4096 after 10 reports
    state = cm.simulate(np.arange(3000) % 64, rng=0)
    told = _weaker(cm, state, users=3000)
    e = told.guarantee.epsilon
    assert told.n == 3000 and countmin_delta(e, 3000, cm.gamma, 2) <= 1e-6 < countmin_delta(
        e * 0.999, 3000, cm.gamma, 2
    )
    inferred = _weaker(cm, state)  # from the message count: a lower bound on the users, so a weaker claim
    assert abs(inferred.n - 3000) < 30 and inferred.guarantee.epsilon >= e
    # the noise mean subtracted is that of 3000 users (with n = 4096 the mean would sit γ·1096 ≈ 21 low);
    # + 1: hash collisions only add, about 0.4 per cell here
    assert abs(np.mean(told.value) - 3000 / 64) < 5 * told.stderr[0] / 8 + 1.0
    _planned(cm, cm.simulate(np.arange(4096) % 64, rng=0), 4096)
