"""Composition: closed forms, the KOV/DRV numbers of the issue, zCDP conversions, input errors."""

from __future__ import annotations

import math
from math import comb

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from privstats.privacy.composition import (
    advanced_composition,
    basic_composition,
    compose,
    optimal_composition,
    optimal_composition_delta,
    parallel_composition,
    pure_to_zcdp,
    zcdp_composition,
    zcdp_to_approx,
)
from privstats.privacy.guarantees import ZCDP, ApproxDP, PureDP


def test_issue_numbers_1656_fold():
    opt = optimal_composition(0.01, 1656, 0.01)
    drv = advanced_composition(0.01, 1656, 0.01)
    assert opt.epsilon == pytest.approx(0.698, abs=5e-4)
    assert opt.delta == pytest.approx(0.01)
    assert drv.epsilon == pytest.approx(1.401, abs=5e-4)
    assert drv.delta == pytest.approx(0.01)
    # optimal is exactly where the exact delta curve crosses 0.01
    assert optimal_composition_delta(0.01, 1656, opt.epsilon) <= 0.01
    assert optimal_composition_delta(0.01, 1656, opt.epsilon * (1 - 1e-6)) > 0.01


def kov_delta_i(eps, k, i):
    """KOV Theorem 3.3 at the grid point ε_total = (k − 2i)ε, written out directly."""
    return (
        sum(comb(k, l) * (math.exp((k - l) * eps) - math.exp((k - 2 * i + l) * eps)) for l in range(i))
        / (1 + math.exp(eps)) ** k
    )


@pytest.mark.parametrize("eps, k", [(0.5, 10), (1.0, 7), (0.1, 30)])
def test_delta_matches_kov_theorem_3_3_on_grid(eps, k):
    for i in range(0, k // 2 + 1):
        exact = kov_delta_i(eps, k, i)
        got = optimal_composition_delta(eps, k, (k - 2 * i) * eps)
        assert got == pytest.approx(exact, rel=1e-9, abs=1e-15)


def test_k1_optimal_is_epsilon_closed_form():
    eps, d = 1.0, 0.01
    # one ε-DP mechanism at slack δ: ε_g = ε + ln(1 − δ(1 + e^ε)/e^ε)
    closed = eps + math.log1p(-d * (1 + math.exp(eps)) / math.exp(eps))
    assert optimal_composition(eps, 1, d).epsilon == pytest.approx(closed, rel=1e-9)
    assert optimal_composition(0.7, 1, 1e-14).epsilon == pytest.approx(0.7, rel=1e-9)
    assert optimal_composition(0.7, 1, 1e-14).epsilon <= 0.7


@pytest.mark.parametrize("eps, k, d", [(0.01, 1656, 0.01), (0.1, 100, 1e-6), (0.5, 20, 1e-5), (1.0, 5, 1e-3)])
def test_kov_le_drv_le_basic_where_drv_helps(eps, k, d):
    opt = optimal_composition(eps, k, d).epsilon
    drv = advanced_composition(eps, k, d).epsilon
    assert opt <= drv + 1e-12
    assert opt <= k * eps
    if eps * math.sqrt(k) < 1:  # the regime where DRV beats basic
        assert drv <= k * eps


def test_optimal_with_delta0():
    r = optimal_composition(0.1, 10, 1e-5, delta0=1e-6)
    assert r.delta == pytest.approx(1 - (1 - 1e-6) ** 10 * (1 - 1e-5))
    assert r.epsilon == pytest.approx(optimal_composition(0.1, 10, 1e-5).epsilon)


def test_basic_composition():
    assert basic_composition([PureDP(0.25), PureDP(0.5)]) == PureDP(0.75)
    g = basic_composition([PureDP(0.25), ApproxDP(0.5, 1e-6), ApproxDP(0.25, 2e-6)])
    assert isinstance(g, ApproxDP) and g.epsilon == pytest.approx(1.0) and g.delta == pytest.approx(3e-6)
    assert basic_composition([ZCDP(0.1), ZCDP(0.3)]).rho == pytest.approx(0.4)
    assert basic_composition([]) == PureDP(0.0)
    with pytest.raises(TypeError, match="zCDP"):
        basic_composition([ZCDP(0.1), ApproxDP(1.0, 1e-6)])
    with pytest.raises(TypeError, match="zCDP"):
        basic_composition([PureDP(1.0), ZCDP(0.1)])


def test_parallel_composition():
    assert parallel_composition([PureDP(0.25), PureDP(0.5)]) == PureDP(0.5)
    assert parallel_composition([PureDP(1.0), ApproxDP(0.5, 1e-6)]) == ApproxDP(1.0, 1e-6)
    assert parallel_composition([ZCDP(0.1), ZCDP(0.3)]) == ZCDP(0.3)
    with pytest.raises(TypeError):
        parallel_composition([ZCDP(0.1), PureDP(0.3)])


def test_zcdp_composition_and_pure_conversion():
    assert pure_to_zcdp(1.0) == ZCDP(0.5)
    assert zcdp_composition([PureDP(1.0), ZCDP(0.25), ApproxDP(2.0, 0.0)]).rho == pytest.approx(2.75)
    with pytest.raises(TypeError, match="delta"):
        zcdp_composition([ApproxDP(1.0, 1e-6)])


def gaussian_exact_epsilon(rho, delta):
    """Exact ε of the Gaussian mechanism with ρ = Δ²/(2σ²) (Balle–Wang 2018), a lower bound for any conversion."""
    s = math.sqrt(1 / (2 * rho))
    f = lambda e: norm.cdf(-e * s + 1 / (2 * s)) - math.exp(e) * norm.cdf(-e * s - 1 / (2 * s)) - delta
    return brentq(f, 0, 200) if f(0) > 0 else 0.0


@pytest.mark.parametrize("rho, delta", [(0.5, 1e-6), (1e-4, 1e-5), (10.0, 1e-10), (2.0, 0.5), (0.01, 1e-3)])
def test_zcdp_to_approx_bounds(rho, delta):
    got = zcdp_to_approx(rho, delta)
    bs = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert got.delta == delta
    assert got.epsilon <= bs + 1e-12  # never worse than Bun–Steinke
    assert got.epsilon >= gaussian_exact_epsilon(rho, delta) - 1e-9  # never better than the truth
    # CKS formula at a grid of orders: our optimum is at least as good as each
    a = 1 + np.exp(np.linspace(-8, 8, 4001))
    cks = a * rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    assert got.epsilon <= max(cks.min(), 0.0) + 1e-9


def test_zcdp_to_approx_known_value():
    assert zcdp_to_approx(0.5, 1e-6).epsilon == pytest.approx(5.2215344, abs=1e-6)
    assert zcdp_to_approx(0.0, 1e-6) == ApproxDP(0.0, 1e-6)


def test_compose_methods():
    gs = [PureDP(0.01)] * 1656
    assert compose(gs).epsilon == pytest.approx(16.56)
    assert compose(gs, method="optimal", delta=0.01).epsilon == pytest.approx(0.698, abs=5e-4)
    assert compose(gs, method="advanced", delta=0.01).epsilon == pytest.approx(1.401, abs=5e-4)
    z = compose(gs, method="zcdp")
    assert isinstance(z, ZCDP) and z.rho == pytest.approx(1656 * 0.01**2 / 2)
    assert compose(gs, method="zcdp", delta=1e-6) == zcdp_to_approx(z.rho, 1e-6)
    # few large-ε mechanisms: DRV is worse than basic, so compose returns basic
    few = [PureDP(1.0)] * 2
    assert compose(few, method="advanced", delta=1e-6) == PureDP(2.0)
    with pytest.raises(ValueError, match="delta"):
        compose(gs, method="optimal")
    with pytest.raises(ValueError, match="method"):
        compose(gs, method="magic")
    with pytest.raises(TypeError, match="zCDP"):
        compose([ZCDP(0.1), PureDP(1.0)], method="advanced", delta=1e-6)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: advanced_composition(0, 10, 1e-6), "epsilon"),
        (lambda: advanced_composition(0.1, 0, 1e-6), "k"),
        (lambda: advanced_composition(0.1, 10, 0), "delta_prime"),
        (lambda: advanced_composition(0.1, 10, 1e-6, delta=-1), "delta"),
        (lambda: optimal_composition(0.1, 2.5, 1e-6), "k"),
        (lambda: optimal_composition(-1, 2, 1e-6), "epsilon"),
        (lambda: optimal_composition(0.1, 2, 1.5), "delta"),
        (lambda: optimal_composition(0.1, 2, 1e-6, delta0=1), "delta0"),
        (lambda: optimal_composition_delta(0.1, 2, -1.0), "epsilon_total"),
        (lambda: zcdp_to_approx(-1, 1e-6), "rho"),
        (lambda: zcdp_to_approx(1, 0), "delta"),
        (lambda: pure_to_zcdp(float("nan")), "epsilon"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
