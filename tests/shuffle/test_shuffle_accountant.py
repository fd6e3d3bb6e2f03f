"""Amplification accountant against published values and its own inverse; validity ranges."""

import math

import pytest

from privstats.privacy import local_epsilon_for, shuffled_epsilon
from privstats.privacy.amplification import clone_delta, krr_blanket_delta


def test_fmt_closed_form_matches_published_value():
    # apple/ml-shuffling-amplification README (code accompanying FMT21, arXiv:2012.12803):
    # n = 100000, eps0 = 4, delta = 1e-6 -> closed form "eps is at most 0.5378040242374512"
    assert shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt") == pytest.approx(0.5378040242374512, rel=1e-9)


def test_fmt_numeric_inside_published_bracket():
    # same README: numerical analysis "eps between 0.1675385583317841 and 0.172790550755978"
    e = shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt-numeric")
    assert 0.1675385583317841 <= e <= 0.172790550755978


def test_balle_krr_formula_and_consistency_with_tight_blanket():
    # Balle et al. CRYPTO'19 Thm 3.1: gamma = max(14 k ln(2/delta)/((n-1) eps^2), 27 k/((n-1) eps))
    n, k, delta, eps0 = 200_000, 10, 1e-6, 3.0
    eps = shuffled_epsilon(eps0, n, delta, method="balle", k=k)
    gamma = k / (math.exp(eps0) + k - 1)
    assert gamma == pytest.approx(max(14 * k * math.log(2 / delta) / ((n - 1) * eps ** 2), 27 * k / ((n - 1) * eps)))
    # the published bound is valid, so the tight blanket computation must certify it
    assert krr_blanket_delta(eps, gamma, k, n) <= delta
    # ... and the tight computation is strictly better (a smaller eps already suffices)
    assert krr_blanket_delta(0.8 * eps, gamma, k, n) <= delta


@pytest.mark.parametrize("method,kw", [("fmt-numeric", {}), ("fmt", {}), ("balle", {"k": 4})])
def test_local_epsilon_for_inverts(method, kw):
    n, delta, eps = 50_000, 1e-6, 0.5
    e0 = local_epsilon_for(eps, n, delta, method, **kw)
    assert shuffled_epsilon(e0, n, delta, method, **kw) <= eps * (1 + 1e-6)
    assert shuffled_epsilon(e0 + 0.05, n, delta, method, **kw) > eps      # the inverse is (nearly) the largest


def test_numeric_is_tighter_than_closed_form_and_below_eps0():
    for e0 in (0.5, 2.0, 5.0):
        num = shuffled_epsilon(e0, 100_000, 1e-6, method="fmt-numeric")
        assert num <= shuffled_epsilon(e0, 100_000, 1e-6, method="fmt") + 1e-9
        assert num <= e0


def test_clone_delta_decreases_in_eps_and_n():
    assert clone_delta(0.5, 3.0, 10_000) > clone_delta(1.0, 3.0, 10_000) > clone_delta(1.5, 3.0, 10_000)
    assert clone_delta(0.5, 3.0, 10_000) > clone_delta(0.5, 3.0, 100_000)


def test_validity_ranges_raise_clear_errors():
    with pytest.raises(ValueError, match="validity range of the FMT closed form"):
        shuffled_epsilon(8.0, 10_000, 1e-6, method="fmt")
    with pytest.raises(ValueError, match="validity range of the Balle"):
        shuffled_epsilon(8.0, 10_000, 1e-6, method="balle", k=2)
    with pytest.raises(ValueError, match="pass k"):
        shuffled_epsilon(1.0, 10_000, 1e-6, method="balle")
    with pytest.raises(ValueError, match="epsilon0"):
        shuffled_epsilon(0.0, 10_000, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        shuffled_epsilon(1.0, 10_000, 1.5)
    with pytest.raises(ValueError, match="method"):
        shuffled_epsilon(1.0, 10_000, 1e-6, method="erlingsson")
