"""Worked examples of Bell et al. 2020 and exact building blocks (kernels, FWHT, exact statistics)."""

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from privstats.ustat import central as C
from privstats.ustat import kernels as K
from privstats.ustat.tree import fwht, hierarchical_histogram, uauc


def test_figure1_hierarchical_histogram():
    h = hierarchical_histogram([0, 1, 2, 2, 3], depth=2)
    assert [x.tolist() for x in h] == [[5], [2, 3], [1, 1, 2, 1]]


def test_uauc_worked_example():
    assert uauc([1, 2, 3], [0, 2], depth=2) == 4
    assert C.exact_auc([1, 2, 3], [0, 2], ties="zero") == pytest.approx(4 / 6)
    assert C.exact_auc([1, 2, 3], [0, 2], ties="half") == pytest.approx(4.5 / 6)


def test_exact_auc_matches_sklearn_and_brute_force():
    g = np.random.default_rng(0)
    pos, neg = g.integers(0, 20, 300), g.integers(0, 15, 200)
    y = np.r_[np.ones(300), np.zeros(200)]
    assert C.exact_auc(pos, neg, "half") == pytest.approx(roc_auc_score(y, np.r_[pos, neg]))
    brute = np.mean(pos[:, None] > neg[None, :])
    assert C.exact_auc(pos, neg, "zero") == pytest.approx(brute)
    assert uauc(pos, neg, depth=5) / (300 * 200) == pytest.approx(brute)


def test_exact_statistics_match_brute_force():
    g = np.random.default_rng(1)
    x, y = g.integers(0, 5, 60), g.integers(0, 4, 60)
    pairs = list(itertools.combinations(range(60), 2))
    tau_a = np.mean([np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i, j in pairs])
    ex = C.exact_kendall(x, y)
    assert ex["tau_a"] == pytest.approx(tau_a)
    assert ex["tau_b"] == pytest.approx(stats.kendalltau(x, y).statistic)
    u = g.random(60)
    assert C.exact_gini_mean_difference(u) == pytest.approx(np.mean([abs(u[i] - u[j]) for i, j in pairs]))
    assert C.exact_collision(x) == pytest.approx(np.mean([x[i] == x[j] for i, j in pairs]))
    assert C.exact_callable(u, lambda a, b: np.abs(a - b)) == pytest.approx(C.exact_gini_mean_difference(u))


def test_quantised_kernel_closed_forms():
    k = 5
    mid, avg, cen = K.gini_matrix(k, "mid"), K.gini_matrix(k, "avg"), K.gini_matrix(k, "center")
    assert np.allclose(np.diag(mid), 1 / (2 * k)) and np.allclose(np.diag(avg), 1 / (3 * k))
    assert np.allclose(np.diag(cen), 0)
    off = ~np.eye(k, dtype=bool)
    assert np.allclose(mid[off], (np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / k)[off])
    # the generic builders reproduce the closed forms (grid includes the corners; MC average)
    f = lambda a, b: np.abs(a - b)
    assert np.allclose(K.matrix_from_callable(f, k, "mid"), mid)
    assert np.allclose(K.matrix_from_callable(f, k, "avg", samples=64), avg, atol=0.01)
    assert np.allclose(K.matrix_from_callable(f, k, "center"), cen)
    A = K.kendall_matrix(2, 2)  # categories (0,0), (0,1), (1,0), (1,1)
    assert A[3, 0] == 1 and A[1, 2] == -1 and A[0, 1] == 0


def test_fwht_matches_explicit_hadamard():
    a = np.random.default_rng(2).normal(size=16)
    j = np.arange(16)
    H = 1 - 2 * (np.bitwise_count(j[:, None] & j[None, :]) & 1).astype(np.int64)
    assert np.allclose(fwht(a), H @ a)


def test_quantize_floor_convention():
    # ithdigit: 1e-4 shares bin 0 with 0 up to d = 2^13, separates at 2^14 (floor(s·d))
    assert K.quantize(np.array([1e-4]), (0, 1), 2**13)[0] == 0
    assert K.quantize(np.array([1e-4]), (0, 1), 2**14)[0] == 1
    assert K.quantize(np.array([1.0]), (0, 1), 8)[0] == 7
