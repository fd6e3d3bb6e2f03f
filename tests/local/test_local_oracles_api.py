"""Merging, serialization, malformed reports, bad input and best_oracle for the local frequency oracles."""

import math

import numpy as np
import pytest

from privstats.local import GRR, OLH, OUE, BinaryRR, CountState, HadamardResponse, best_oracle
from privstats.local.choose import worst_case_variance

MAKERS = [
    lambda: GRR(10, 1.0),
    lambda: BinaryRR(1.0),
    lambda: OUE(10, 1.0),
    lambda: OLH(10, 1.0),
    lambda: HadamardResponse(10, 1.0),
]
CLASSES = [GRR, OUE, OLH, HadamardResponse]


@pytest.mark.parametrize("make", MAKERS)
def test_merge_and_bytes_round_trip(make):
    oracle = make()
    d = oracle.domain_size
    values = np.random.default_rng(0).integers(0, d, 1000)
    whole = oracle.aggregate(oracle.encode_batch(values, rng=1))
    a = oracle.aggregate({k: v[:400] for k, v in oracle.encode_batch(values, rng=1).items()})
    b = oracle.aggregate({k: v[400:] for k, v in oracle.encode_batch(values, rng=1).items()})
    assert a.merge(b) == whole and (a + b).n == 1000
    assert oracle.aggregate({k: v[400:] for k, v in oracle.encode_batch(values, rng=1).items()}, a) == whole
    assert CountState.from_bytes(whole.to_bytes()) == whole
    est = oracle.estimate(CountState.from_bytes(whole.to_bytes()))
    assert est.value.shape == (d,) and est.stderr.shape == (d,) and est.n == 1000
    with pytest.raises(ValueError):
        CountState.from_bytes(whole.to_bytes()[:-3])


def test_states_of_different_parameters_do_not_merge():
    with pytest.raises(ValueError):
        OUE(10, 1.0).new_state().merge(OUE(10, 2.0).new_state())
    with pytest.raises(ValueError):
        OLH(10, 1.0, g=3).new_state().merge(OLH(10, 1.0, g=4).new_state())


MALFORMED = [
    (OUE(10, 1.0), {"bits": np.zeros((3, 3), np.uint8)}),  # wrong width
    (OUE(10, 1.0), {"bits": np.zeros((3, 2), np.int64)}),  # wrong dtype
    (OUE(10, 1.0), {"bits": np.full((3, 2), 255, np.uint8)}),  # padding bits set
    (OLH(10, 1.0), {"seed": np.zeros(3, np.uint64), "bucket": np.array([0, 1, 9])}),
    (OLH(10, 1.0), {"seed": np.zeros(3, np.float64), "bucket": np.array([0, 1, 1])}),
    (OLH(10, 1.0), {"seed": np.zeros(3, np.uint64), "bucket": np.array([0, 1])}),  # lengths differ
    (HadamardResponse(10, 1.0), {"index": np.array([0, 16])}),
    (HadamardResponse(10, 1.0), {"index": np.array([0.5, 1.0])}),
    (HadamardResponse(10, 1.0), {"value": np.array([0, 1])}),  # wrong column
]


@pytest.mark.parametrize("oracle,reports", MALFORMED)
def test_malformed_reports_rejected_without_changing_state(oracle, reports):
    state = oracle.aggregate(oracle.encode_batch([1, 2, 3], rng=0))
    before = state.to_bytes()
    with pytest.raises(ValueError, match="reports"):
        oracle.aggregate(reports, state)
    assert state.to_bytes() == before


@pytest.mark.parametrize("cls", CLASSES)
def test_bad_construction_names_the_argument(cls):
    for eps in [0, -1.0, float("nan"), float("inf")]:
        with pytest.raises(ValueError, match="epsilon"):
            cls(8, eps)
    for d in [1, 0, 2.5]:
        with pytest.raises(ValueError, match="domain_size"):
            cls(d, 1.0)
    with pytest.raises(ValueError, match="g"):
        OLH(8, 1.0, g=1)


@pytest.mark.parametrize("make", MAKERS)
def test_bad_values_name_the_argument(make):
    oracle = make()
    d = oracle.domain_size
    for bad in [[0, float("nan")], [0, d], [-1], [], [0.5]]:
        with pytest.raises(ValueError, match="values"):
            oracle.encode_batch(bad, rng=0)
        with pytest.raises(ValueError, match="values"):
            oracle.simulate(bad, rng=0)
    with pytest.raises(ValueError, match="true_counts"):
        oracle.simulate_counts(np.ones(d + 1, dtype=int), rng=0)


def test_best_oracle_picks_lowest_worst_case_variance():
    for d, eps in [(2, 1.0), (4, 2.0), (64, 1.0), (64, 4.0), (1024, 1.0), (3, 0.1), (1000, 6.0)]:
        chosen = best_oracle(d, eps)
        others = [cls(d, eps) for cls in CLASSES]
        assert worst_case_variance(chosen) <= min(worst_case_variance(o) for o in others) * (1 + 1e-12)
    # GRR's worst-case variance (e^ε + d − 2)/(e^ε − 1)^2 beats OUE's 4e^ε/(e^ε − 1)^2 iff d < 3e^ε + 2
    assert isinstance(best_oracle(10, 2.0), GRR) and 3 * math.exp(2) + 2 > 10
    assert isinstance(best_oracle(30, 2.0), OUE) and 3 * math.exp(2) + 2 < 30


def test_best_oracle_breaks_ties_by_bits():
    # d = 2: GRR and OUE have the same variance at e^ε = ... only when d − 2 + e^ε = 4 e^ε; pick d with a tie
    eps = math.log(2.0)  # GRR: (2 + d − 2)/1 = d; OUE: 8; tie at d = 8, GRR sends 3 bits, OUE 8
    chosen = best_oracle(8, eps)
    assert isinstance(chosen, GRR)
    assert worst_case_variance(chosen) == pytest.approx(worst_case_variance(OUE(8, eps)))
    with pytest.raises(ValueError, match="epsilon"):
        best_oracle(8, 0)
