"""Budget ledger: refuses before overspending, accounting modes, JSON, thread safety."""

from __future__ import annotations

import sys
import threading

import pytest

from privstats.privacy.composition import zcdp_to_approx
from privstats.privacy.guarantees import ZCDP, ApproxDP, PureDP
from privstats.privacy.ledger import BudgetExceededError, BudgetLedger


def test_pure_budget_refuses_before_recording():
    led = BudgetLedger(PureDP(1.0))
    for i in range(10):
        led.spend(PureDP(0.1), f"q{i}")  # float sums of 0.1 still fit 1.0
    assert led.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match="q10") as exc:
        led.spend(PureDP(0.01), "q10")
    assert isinstance(exc.value, ValueError)
    assert len(led.entries) == 10 and led.entries[-1] == ("q9", PureDP(0.1))
    assert led.remaining.epsilon == pytest.approx(0.0, abs=1e-12)
    assert not led.can_spend(PureDP(0.01))


def test_approx_budget_basic_composition():
    led = BudgetLedger(ApproxDP(1.0, 1e-5))
    led.spend(PureDP(0.5), "a")
    led.spend(ApproxDP(0.25, 5e-6), "b")
    assert led.spent == ApproxDP(0.75, 5e-6)
    rem = led.remaining
    assert rem.epsilon == pytest.approx(0.25) and rem.delta == pytest.approx(5e-6)
    with pytest.raises(BudgetExceededError):
        led.spend(ApproxDP(0.1, 6e-6), "delta too big")
    with pytest.raises(BudgetExceededError):
        led.spend(PureDP(0.3), "epsilon too big")
    with pytest.raises(TypeError, match="zCDP"):
        led.spend(ZCDP(0.01), "z")
    assert [lab for lab, _ in led.entries] == ["a", "b"]


def test_pure_total_refuses_any_delta():
    led = BudgetLedger(PureDP(1.0))
    with pytest.raises(BudgetExceededError):
        led.spend(ApproxDP(0.1, 1e-9), "x")
    assert led.entries == []


def test_zcdp_total_counts_pure_as_half_eps_squared():
    led = BudgetLedger(ZCDP(1.0))
    led.spend(PureDP(1.0), "pure")  # rho 0.5
    led.spend(ZCDP(0.25), "gauss")
    assert led.spent == ZCDP(0.75)
    assert led.remaining.rho == pytest.approx(0.25)
    with pytest.raises(BudgetExceededError):
        led.spend(PureDP(0.8), "too much")  # rho 0.32 > 0.25
    with pytest.raises(TypeError):
        led.spend(ApproxDP(0.1, 1e-6), "approx")
    led.spend(PureDP(0.7), "fits")  # rho 0.245
    assert len(led.entries) == 3


def test_zcdp_accounting_against_approx_total():
    total = ApproxDP(1.0, 1e-6)
    led = BudgetLedger(total, composition="zcdp")
    rho_max = led.remaining.rho
    assert zcdp_to_approx(rho_max, 1e-6).epsilon <= 1.0
    assert zcdp_to_approx(rho_max * 1.001, 1e-6).epsilon > 1.0
    led.spend(ZCDP(rho_max / 2), "half")
    with pytest.raises(BudgetExceededError):
        led.spend(ZCDP(rho_max * 0.51), "over")
    led.spend(ZCDP(rho_max * 0.49), "fits")
    with pytest.raises(ValueError, match="composition"):
        BudgetLedger(PureDP(1.0), composition="zcdp")
    with pytest.raises(ValueError, match="composition"):
        BudgetLedger(PureDP(1.0), composition="advanced")


@pytest.mark.parametrize(
    "total, composition, spends",
    [
        (PureDP(2.0), "basic", [PureDP(0.5), PureDP(0.25)]),
        (ApproxDP(2.0, 1e-5), "basic", [PureDP(0.5), ApproxDP(0.25, 1e-6)]),
        (ZCDP(1.0), "basic", [PureDP(0.5), ZCDP(0.1)]),
        (ApproxDP(3.0, 1e-6), "zcdp", [ZCDP(0.05), PureDP(0.1)]),
    ],
)
def test_json_round_trip(total, composition, spends):
    led = BudgetLedger(total, composition=composition)
    for i, g in enumerate(spends):
        led.spend(g, f"release {i}")
    back = BudgetLedger.from_json(led.to_json())
    assert back.total == led.total and back.composition == led.composition
    assert back.entries == led.entries
    assert back.spent == led.spent and back.remaining == led.remaining


def test_from_json_rejects_garbage_and_overspent_records():
    with pytest.raises(ValueError, match="text"):
        BudgetLedger.from_json("{}")
    led = BudgetLedger(PureDP(1.0))
    led.spend(PureDP(1.0), "all")
    doc = led.to_json().replace('"epsilon": 1.0}, "composition"', '"epsilon": 0.5}, "composition"')
    with pytest.raises(BudgetExceededError):
        BudgetLedger.from_json(doc, verify=False)  # the replay refuses it even unverified


def test_bad_arguments():
    with pytest.raises(TypeError, match="total"):
        BudgetLedger(1.0)
    led = BudgetLedger(PureDP(1.0))
    with pytest.raises(TypeError, match="guarantee"):
        led.spend(0.5, "x")
    with pytest.raises(TypeError, match="label"):
        led.spend(PureDP(0.5), 3)
    assert led.entries == []


@pytest.mark.parametrize("total, cost", [(PureDP(10.0), PureDP(0.01)), (ZCDP(1.0), ZCDP(0.001))])
def test_concurrent_spends_never_overspend(total, cost):
    led = BudgetLedger(total)
    n_threads, per_thread = 16, 200  # 3200 attempts for a budget of 1000 spends
    ok, refused = [], []
    barrier = threading.Barrier(n_threads)

    def worker(t):
        barrier.wait()
        for i in range(per_thread):
            try:
                led.spend(cost, f"t{t}-{i}")
                ok.append(1)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so a missing lock would show
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    assert len(ok) + len(refused) == n_threads * per_thread
    assert len(led.entries) == len(ok)
    assert led.spent <= total
    assert 995 <= len(ok) <= 1000  # float rounding may cost a few spends, never add one
