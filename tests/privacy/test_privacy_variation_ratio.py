"""Variation-ratio amplification bounds, checked against exact enumeration of shuffled randomizers.

The enumeration is independent of the library: the exact law of the shuffled multiset of
reports of n users for every dataset of the other n−1 users (worst case over them), for
k-ary randomized response and 3-bit RAPPOR.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privacy_shuffle_enumeration import exact_worst, krr, rappor

from privstats.privacy.amplification import (
    krr_blanket_delta,
    krr_revealed_delta,
    local_epsilon_for,
    shuffled_epsilon,
)
from privstats.privacy.variation_ratio import (
    _binary_rr_delta,
    lower_pair,
    shuffled_epsilon_lower,
    three_symbol_delta,
    variation_ratio_delta,
    variation_ratio_parameters,
)
from privstats.shuffle.single import ShuffledKRR, ShuffledRAPPOR, krr_exact_delta

_exact_worst = exact_worst
_krr = krr
_rappor = rappor


CASES = [("krr", 2, _krr, 6), ("krr", 3, _krr, 6), ("krr", 4, _krr, 5), ("rappor", 3, _rappor, 4)]


@pytest.mark.parametrize("name,k,make,n", CASES)
@pytest.mark.parametrize("e0", [0.5, 1.0, 2.5, 4.0])
def test_upper_bounds_never_below_and_lower_bound_never_above_exact(name, k, make, n, e0):
    for eps in (0.1, 0.3, 0.6, 1.0):
        if eps >= e0:
            continue
        exact = _exact_worst(eps, n, k, make(k, e0))
        specific = variation_ratio_delta(eps, e0, n, name, k)
        generic = variation_ratio_delta(eps, e0, n, "generic")
        assert specific >= exact - 1e-12
        assert generic >= exact - 1e-12
        pair = lower_pair(e0, name, k)
        if pair is not None:
            assert three_symbol_delta(eps, n, *pair, upper=False) <= exact + 1e-12
        if name == "krr" and k == 2:
            assert _binary_rr_delta(eps, n, 1 / (1 + math.exp(e0))) <= exact + 1e-12


def test_three_symbol_delta_matches_brute_force():
    def brute(eps, n, u, v, r):
        w = 1 - u - v
        P, Q = np.zeros((n + 1, n + 1)), np.zeros((n + 1, n + 1))
        for a in range(n):
            for b in range(n - a):
                m = (
                    math.comb(n - 1, a)
                    * math.comb(n - 1 - a, b)
                    * r ** (a + b)
                    * (1 - 2 * r) ** (n - 1 - a - b)
                )
                P[a + 1, b] += u * m
                P[a, b + 1] += v * m
                P[a, b] += w * m
                Q[a + 1, b] += v * m
                Q[a, b + 1] += u * m
                Q[a, b] += w * m
        return np.maximum(P - math.exp(eps) * Q, 0).sum()

    for eps, n, u, v, r in [(0.3, 7, 0.6, 0.1, 0.2), (0.5, 12, 0.5, 0.2, 0.1), (0.2, 15, 0.4, 0.05, 0.05)]:
        assert three_symbol_delta(eps, n, u, v, r) == pytest.approx(brute(eps, n, u, v, r), rel=1e-9)


def test_the_papers_mixed_form_is_caught_by_exact_enumeration():
    """Letting the victim's residual hide among the others' (the published form) under-states δ:
    the exact divergence of shuffled 3-RR with others (x0, x0, x*, x*, x*) exceeds it, so
    privstats uses the revealed-residual form, which the enumeration never beats."""
    k, n, e0, eps = 3, 6, 1.0, 0.6
    p, beta, q = variation_ratio_parameters(e0, "krr", k)
    alpha = beta / (p - 1)
    mixed = three_symbol_delta(eps, n, p * alpha, alpha, alpha * p / q)
    exact = _exact_worst(eps, n, k, _krr(k, e0))
    assert exact > mixed * 1.005
    assert variation_ratio_delta(eps, e0, n, "krr", k) >= exact


@pytest.mark.parametrize("k,e0", [(3, 1.0), (16, 3.0), (256, 6.0)])
def test_krr_form_equals_the_independent_blanket_derivation(k, e0):
    gamma = k / (math.exp(e0) + k - 1)
    for eps in (0.1, 0.3, 0.6):
        revealed = krr_revealed_delta(eps, gamma, k, 10_000)
        assert variation_ratio_delta(eps, e0, 10_000, "krr", k) == pytest.approx(
            revealed, rel=1e-9, abs=1e-300
        )
        # the blanket pair (the k-RR default) hides the victim's residual too: never looser
        assert krr_blanket_delta(eps, gamma, k, 10_000) <= revealed


def test_under_noised_krr_is_caught():
    """A shuffled 3-RR calibrated at n = 6 is (ε, δ)-DP by exact enumeration; with 20% less noise it is not."""
    k, n, eps, delta = 3, 6, 1.0, 0.05
    proto = ShuffledKRR(k, n=n, epsilon=eps, delta=delta)
    assert _exact_worst(eps, n, k, _krr(k, proto.epsilon0)) <= delta
    e0_under = math.log(k / (0.8 * proto.gamma) - k + 1)
    assert _exact_worst(eps, n, k, _krr(k, e0_under)) > delta


@settings(max_examples=12, deadline=None)
@given(
    eps=st.floats(0.05, 2.0),
    log_n=st.floats(3.0, 5.5),
    name=st.sampled_from(["generic", "krr", "rappor", "oue", "olh", "hadamard"]),
    k=st.integers(3, 512),
)
def test_round_trip_local_epsilon_for_and_shuffled_epsilon(eps, log_n, name, k):
    n, delta = int(10**log_n), 1e-6
    try:
        e0 = local_epsilon_for(eps, n, delta, "tightest", k=k, randomizer=name)
    except ValueError:
        return  # no ε0 > 0 reaches ε: nothing to round-trip
    tight = shuffled_epsilon(e0, n, delta, "tightest", k=k, randomizer=name)
    assert tight <= eps * (1 + 1e-6)
    for method in ("variation-ratio", "fmt-numeric"):  # the minimum is never worse than either bound
        assert shuffled_epsilon(e0, n, delta, method, k=k, randomizer=name) >= tight * (1 - 1e-6)
    assert shuffled_epsilon(e0 * 1.01, n, delta, "tightest", k=k, randomizer=name) > eps * (1 - 1e-6)


def test_tightest_is_the_minimum_and_gains_over_fmt_numeric():
    for n in (10_000, 1_000_000):
        for e0 in (1.0, 3.0):
            tight = shuffled_epsilon(e0, n, 1e-6)
            assert tight <= shuffled_epsilon(e0, n, 1e-6, "fmt-numeric")
            assert tight <= shuffled_epsilon(e0, n, 1e-6, "variation-ratio") + 1e-9
            assert tight < 0.9 * shuffled_epsilon(e0, n, 1e-6, "fmt-numeric")  # a real gain
    # more local budget for the same guarantee: ε0 gained at ε = 1, n = 1e4, δ = 1e-6
    assert local_epsilon_for(1.0, 10_000, 1e-6) > local_epsilon_for(1.0, 10_000, 1e-6, "fmt-numeric") + 0.1


def test_estimates_report_a_lower_bound_below_the_claim():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 16, 20_000)
    for proto in (
        ShuffledKRR(16, n=20_000, epsilon=1.0, delta=1e-6),
        ShuffledRAPPOR(16, n=20_000, epsilon=1.0, delta=1e-6),
    ):
        est = proto.estimate(proto.simulate(values, rng=1))
        lb = est.details["epsilon_lower_bound"]
        assert 0.05 < lb <= 1.0


def test_krr_calibration_uses_the_smaller_bound():
    """At small ε0 the generic clones beat k-RR's own blanket, so γ is smaller (less noise) than before."""
    k, n, eps, delta = 64, 100_000, 0.3, 1e-6
    proto = ShuffledKRR(k, n=n, epsilon=eps, delta=delta)
    assert krr_exact_delta(eps, proto.gamma, k, n) <= delta
    assert (
        krr_revealed_delta(eps, proto.gamma, k, n) > delta
    )  # the revealed-residual form would refuse this γ


def test_bad_randomizer_and_k_are_refused():
    with pytest.raises(ValueError, match="randomizer"):
        shuffled_epsilon(1.0, 1000, 1e-6, "variation-ratio", randomizer="laplace")
    with pytest.raises(ValueError, match="k"):
        shuffled_epsilon(1.0, 1000, 1e-6, "variation-ratio", randomizer="krr")
    assert shuffled_epsilon_lower(1.0, 1000, 1e-6, "generic") is None


def test_three_symbol_delta_with_a_subnormal_rare_symbol():
    """At ε0 ≈ 37 the rare symbol's probability is subnormal (5.6e-309), where scipy's binomial pmf
    overflowed (found by the fuzz suite: frequencies, shuffle, n = 3, ε = 37); the others then almost
    surely send none, and the bounds bracket the r = 0 divergence within 2rm."""
    r = 5.563024165594266e-309
    exact = three_symbol_delta(0.5, 3, 1.0, r, 0.0)
    lower = three_symbol_delta(0.5, 3, 1.0, r, r, upper=False)
    upper = three_symbol_delta(0.5, 3, 1.0, r, r)
    assert lower <= exact <= upper and upper - lower < 1e-300
