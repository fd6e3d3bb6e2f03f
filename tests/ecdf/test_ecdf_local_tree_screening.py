"""The local ECDF's tree choice at large grids (issue 26: the planner took 12 s at grid 2^14).

Before: every one of ~350 candidate trees got its exact prefix variances (O(N h^3) each, with
(h, h, N) arrays).  Now the candidates are screened on a sample of prefixes, only a short list is
compared exactly, and the exact computation contracts the levels first (O(N h^2)).  The choice and
the predicted numbers must be those of the exhaustive search; the cost is checked by counting exact
evaluations, not by a clock.
"""

from __future__ import annotations

import numpy as np
import pytest

from privstats.cdf import local as L
from privstats.local import HierarchicalHistogram


def _exhaustive(n_cells, epsilon, n):
    best = None
    for hh in L._candidates(n_cells, epsilon, n):
        v = L.mean_prefix_variance(hh, n)
        if best is None or v < best[1] * (1 - 1e-9):
            best = (hh, v)
    return best


def _key(hh):
    return hh.branching, hh.split, [type(o).__name__ for o in hh.oracles]


@pytest.mark.parametrize(
    ("n_cells", "epsilon", "n"), [(4096, 1.0, 10**6), (3000, 0.5, 5000), (5000, 2.0, 10**7)]
)
def test_screened_choice_is_the_exhaustive_one(n_cells, epsilon, n):
    L._choose.cache_clear()
    hh, v = L._choose(n_cells, epsilon, n)
    best, best_v = _exhaustive(n_cells, epsilon, n)
    assert _key(hh) == _key(best)
    assert v == best_v
    assert L.chosen_mean_prefix_variance(n_cells, epsilon, n) == best_v


def test_large_grids_compare_few_trees_exactly(monkeypatch):
    exact = []
    real = L.mean_prefix_variance

    def spy(hh, n, at=None):
        if at is None:
            exact.append(hh)
        return real(hh, n, at)

    monkeypatch.setattr(L, "mean_prefix_variance", spy)
    L._choose.cache_clear()
    L.choose_local_hierarchy(1 << 14, 1.0, 10**6)
    candidates = len(L._candidates(1 << 14, 1.0, 10**6))
    assert candidates > 300
    assert 1 <= len(exact) <= 20  # was every candidate
    L._choose.cache_clear()


@pytest.mark.parametrize(
    ("d", "b", "oracle"), [(64, 2, "grr"), (1000, 4, "auto"), (777, 8, "oue"), (300, 3, "olh")]
)
def test_prefix_variances_match_the_per_prefix_definition_and_subsets(d, b, oracle):
    """The level-contracted 'users' term equals linear_variance of each prefix's coefficients."""
    g = np.random.default_rng(d)
    hh = HierarchicalHistogram(d, 1.0, b, oracle, "users")
    c = g.integers(0, 40, d).astype(float)
    n = int(c.sum())
    sizes = np.full(hh.height, n / hh.height) * g.uniform(0.9, 1.1, hh.height)
    allv = hh.prefix_variances(c, sizes)
    for i in (0, d // 3, d - 2):
        coef, _ = hh.range_coefficients(n, 0, i, sizes)
        assert allv[i] == pytest.approx(hh.linear_variance(c, coef, sizes), rel=1e-9)
    at = np.array([1, d // 2, d - 1])
    assert hh.prefix_variances(c, sizes, at=at) == pytest.approx(allv[at], rel=1e-12)
