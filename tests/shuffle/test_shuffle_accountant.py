"""Amplification accountant against published values and its own inverse; validity ranges."""

import math

import numpy as np
import pytest

from privstats.privacy import local_epsilon_for, shuffled_epsilon
from privstats.privacy.amplification import (
    _generic_blanket_delta,
    _krr_hoeffding_delta,
    clone_delta,
    krr_blanket_delta,
)


def test_fmt_closed_form_matches_published_value():
    # apple/ml-shuffling-amplification README (code accompanying FMT21, arXiv:2012.12803):
    # n = 100000, eps0 = 4, delta = 1e-6 -> closed form "eps is at most 0.5378040242374512"
    # method="fmt" is the minimum of that form and FMT21 Thm 3.1 (tests/privacy/test_privacy_fmt_min.py)
    a = 8 * math.sqrt(math.exp(4.0) * math.log(4 / 1e-6)) / math.sqrt(100_000)
    c = 8 * math.exp(4.0) / 100_000
    code = math.log(1 + (1 - math.exp(-4.0)) / (1 + math.exp(-4.0 - math.log(1 + a + c))) * (a + c))
    assert code == pytest.approx(0.5378040242374512, rel=1e-9)
    assert shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt") <= code


def test_fmt_numeric_inside_published_bracket():
    # same README: numerical analysis "eps between 0.1675385583317841 and 0.172790550755978"
    e = shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt-numeric")
    assert 0.1675385583317841 <= e <= 0.172790550755978


def test_balle_krr_formula_and_consistency_with_tight_blanket():
    # Balle et al. CRYPTO'19 Thm 3.1: gamma = max(14 k ln(2/delta)/((n-1) eps^2), 27 k/((n-1) eps))
    n, k, delta, eps0 = 200_000, 10, 1e-6, 3.0
    eps = shuffled_epsilon(eps0, n, delta, method="balle", k=k)
    gamma = k / (math.exp(eps0) + k - 1)
    assert gamma == pytest.approx(
        max(14 * k * math.log(2 / delta) / ((n - 1) * eps**2), 27 * k / ((n - 1) * eps))
    )
    # the published bound is valid, so the tight blanket computation must certify it
    assert krr_blanket_delta(eps, gamma, k, n) <= delta
    # ... and the tight computation is strictly better (a smaller eps already suffices)
    assert krr_blanket_delta(0.8 * eps, gamma, k, n) <= delta


@pytest.mark.parametrize("method,kw", [("fmt-numeric", {}), ("fmt", {}), ("balle", {"k": 4})])
def test_local_epsilon_for_inverts(method, kw):
    n, delta, eps = 50_000, 1e-6, 0.5
    e0 = local_epsilon_for(eps, n, delta, method, **kw)
    assert shuffled_epsilon(e0, n, delta, method, **kw) <= eps * (1 + 1e-6)
    assert shuffled_epsilon(e0 + 0.05, n, delta, method, **kw) > eps  # the inverse is (nearly) the largest


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
    with pytest.raises(ValueError, match="epsilon0"):
        shuffled_epsilon(0.0, 10_000, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        shuffled_epsilon(1.0, 10_000, 1.5)
    with pytest.raises(ValueError, match="method"):
        shuffled_epsilon(1.0, 10_000, 1e-6, method="erlingsson")


# ------------------------------------------------ Balle et al. generic privacy-blanket bound ----


def exact_binary_rr_delta(eps, eps0, n, ones_among_others):
    """Exact δ(ε) of shuffled binary RR (the output is the count of ones) for user 1 holding 0 vs 1."""
    from scipy import stats

    q = 1 / (math.exp(eps0) + 1)  # flip probability
    m, rest = ones_among_others, n - 1 - ones_among_others
    others = np.convolve(
        stats.binom.pmf(np.arange(m + 1), m, 1 - q), stats.binom.pmf(np.arange(rest + 1), rest, q)
    )
    P = np.convolve(others, [1 - q, q])  # user 1 holds 0
    Q = np.convolve(others, [q, 1 - q])  # user 1 holds 1
    e = math.exp(eps)
    return max(np.maximum(P - e * Q, 0).sum(), np.maximum(Q - e * P, 0).sum())


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0])
def test_balle_generic_dominates_exact_shuffled_binary_rr(eps0):
    n, delta = 10_000, 1e-6
    eps = shuffled_epsilon(eps0, n, delta, method="balle")
    assert eps < eps0
    for ones in (0, (n - 1) // 2):
        assert exact_binary_rr_delta(eps, eps0, n, ones) <= delta
    # the exact check has teeth: an epsilon well below the exact one fails it
    tight = shuffled_epsilon(eps0, n, delta, method="fmt-numeric")
    assert exact_binary_rr_delta(0.5 * tight, eps0, n, (n - 1) // 2) > delta
    # ... and the generic bound is no smaller than the exact-for-binary-RR blanket computation
    assert krr_blanket_delta(eps, 2 / (math.exp(eps0) + 1), 2, n) <= delta


def test_balle_generic_never_below_krr_specific_instance():
    # same Hoeffding theorem: k-RR's blanket mass k/(e^eps0+k-1) >= e^-eps0 and its range is smaller,
    # so its delta(eps) is pointwise smaller -- the generic one must never be below it
    n = 50_000
    for k in (2, 5, 50):
        for eps0 in (0.5, 1.5, 3.0):
            for eps in (0.05, 0.2, 0.4):
                assert _generic_blanket_delta(eps, eps0, n) >= _krr_hoeffding_delta(eps, eps0, n, k)


def test_balle_generic_vs_theorem_3_1_for_krr():
    # where Thm 3.1 (k-RR) applies at large eps0 it is tighter than the generic bound;
    # at small eps0 its constants (14, 27) make it looser than the generic Hoeffding bound
    n, delta = 100_000, 1e-6
    for k in (2, 8):
        assert shuffled_epsilon(3.0, n, delta, "balle") >= shuffled_epsilon(3.0, n, delta, "balle", k=k)
        assert shuffled_epsilon(0.5, n, delta, "balle") < shuffled_epsilon(0.5, n, delta, "balle", k=k)


def test_balle_generic_monotone():
    n, delta = 100_000, 1e-6
    by_eps0 = [shuffled_epsilon(e0, n, delta, "balle") for e0 in (0.25, 0.5, 1.0, 2.0, 3.0)]
    assert by_eps0 == sorted(by_eps0) and len(set(by_eps0)) == len(by_eps0)
    by_n = [shuffled_epsilon(1.0, m, delta, "balle") for m in (10_000, 100_000, 1_000_000)]
    assert by_n == sorted(by_n, reverse=True) and len(set(by_n)) == 3
    by_delta = [shuffled_epsilon(1.0, n, d, "balle") for d in (1e-9, 1e-6, 1e-3)]
    assert by_delta == sorted(by_delta, reverse=True) and len(set(by_delta)) == 3


def test_balle_generic_inverse_and_validity_range():
    n, delta = 100_000, 1e-6
    e0 = local_epsilon_for(0.5, n, delta, "balle")
    assert shuffled_epsilon(e0, n, delta, "balle") <= 0.5 * (1 + 1e-6)
    assert shuffled_epsilon(e0 + 0.05, n, delta, "balle") > 0.5
    assert local_epsilon_for(0.5, n, delta, "balle", k=2) != e0  # k selects Thm 3.1
    with pytest.raises(ValueError, match="generic blanket bound"):
        shuffled_epsilon(3.0, 10_000, 1e-6, method="balle")
    with pytest.raises(ValueError, match="generic blanket bound"):
        shuffled_epsilon(1.0, 1, 1e-6, method="balle")
    # the error sits where the bound stops certifying anything below eps0
    assert _generic_blanket_delta(3.0 * (1 - 1e-9), 3.0, 10_000) > 1e-6
