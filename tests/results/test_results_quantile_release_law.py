"""The tree quantiles' stderr from the release's simulated law (issue 26, deliverable 3).

The stderr used to be the band-inverted 95% interval's half-width / 1.96.  Where the pointwise band
reaches across a gap (a flat stretch of the ECDF next to a tied block) the interval rightly spans it, but
the release crosses it only now and then, and isotonic pooling over the flat stretch makes that rarer
than the pointwise band says: the half-width read 1.6-2.6x the spread on randhie, and a quantile deep
inside a tied block (the release never moves) still reported a cell's width.  The stderr is now the
spread of Algorithm 1 re-run on the released curve plus draws of the mechanism's public noise law
(post-processing of the release only); the interval is unchanged.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
from harness import coverage_real_experiment

import privstats
from privstats.stats.distribution.quantiles import release_law

QM = importlib.import_module("privstats.stats.distribution.quantiles")

AGES = np.array([17.5, 22.0, 27.0, 32.0, 37.0, 42.0])
# F at the blocks' upper ends: 0.35, 0.65, 0.88: each of q = 0.25, 0.5, 0.75 is >= 0.10 inside its
# block, over 10 sd of the curve at n = 5000, ε = 0.5 (about 0.008 central, 0.011 secure)
AGE_P = np.array([0.02, 0.33, 0.30, 0.23, 0.07, 0.05])
Q = [0.25, 0.5, 0.75]


def _deep_block_releases(model: str):
    x = np.random.default_rng(26).choice(AGES, 5000, p=AGE_P)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ests = [
            privstats.quantiles(x, Q, epsilon=0.5, bounds=(17.0, 42.0), model=model, rng=s) for s in range(15)
        ]
    # n = 5,000, ε = 0.5: nε/8 = 312 central cells, nε/2 = 1,250 secure (powers of two)
    assert ests[0].params["grid_points"] == {"central": 256, "secure": 1024}[model]
    assert "release law" in ests[0].params["stderr_method"]
    xs = np.sort(x)
    exact = np.array([xs[int(np.ceil(q * x.size)) - 1] for q in Q])
    lo, hi = (np.array(v) for v in zip(*(e.ci() for e in ests), strict=True))
    # the band holds the value's cell; the interval's ends come in by 2.5% of a cell (dithered grid)
    trim = 0.025 * 25.0 / (ests[0].params["grid_points"] - 1) + 1e-9
    assert np.all((lo - trim <= exact) & (exact <= hi + trim))
    return np.array([e.unclipped for e in ests]), np.array([e.stderr for e in ests]), exact


@pytest.mark.parametrize("model,cells", [("central", 255), ("secure", 1023)])
def test_stderr_is_the_rounding_alone_deep_inside_tied_blocks(model, cells):
    """The release of a quantile 10 sd inside a tied block never leaves the tied value's cell (p < 10⁻⁵
    at 10 sd of the tree's Laplace-tailed noise), so its spread is the rounding to the cell's midpoint
    alone: on the dithered grid (a public uniform shift per release: the central tree's, and the secure
    one's, a served task drawing it when it is made) that is uniform over the cell, sd cell/√12
    (cell = 25/255 central, 25/1023 secure here).  The law's part beyond the rounding is (far) under a
    tenth of a cell.  (The secure grid was fixed before: the release never moved, a fixed offset.)"""
    V, S, exact = _deep_block_releases(model)
    cell = 25.0 / cells
    assert np.all(np.abs(V - exact) <= cell / 2 + 1e-9), V - exact  # never leaves the value's cell
    assert np.all(np.ptp(V, axis=0) > 0), V  # the rounding moves with the shift
    assert np.all(np.abs(S**2 - cell**2 / 12) < (cell / 10) ** 2), S


def test_local_release_law_matches_the_spread_on_breast_cancer():
    """The local hierarchy's stderr is its release law too: the aggregate redrawn by the clients' law
    (``simulate_counts``) at the released curve's isotonic counts.  Breast-cancer radii, n = 300, ε = 2
    (grid 1,024 to keep the test short): the law's stderr over the measured spread per level is in the
    issue's [0.7, 1.5] over 80 seeds (the sd's own sampling error ~8%); the band's half-width over z,
    the stderr before, read 2.54, 1.42 and 1.31x (1.69x in the table's cell at 4,096 points)."""
    from sklearn.datasets import load_breast_cancer

    x = np.random.default_rng(0).choice(load_breast_cancer().data[:, 0], 300, replace=False)
    V, S = [], []
    for s in range(80):
        e = privstats.quantiles(x, Q, epsilon=2.0, bounds=(5, 30), model="local", grid=1024, rng=s)
        V.append(e.unclipped)
        S.append(e.stderr)
    assert "release law" in e.params["stderr_method"]
    ratio = np.sqrt(np.mean(np.array(S) ** 2, axis=0)) / np.array(V).std(axis=0, ddof=1)
    assert np.all((ratio >= 0.7) & (ratio <= 1.5)), ratio


def test_local_law_draws_have_the_hierarchys_exact_covariance():
    """The local law's noise draws are the release's: mean 0 and the exact covariance of the consistent
    prefix counts (closed form, ``prefix_covariance``: the oracles' and the level split's terms) at the
    curve's counts.  2,000 draws: a variance's relative sampling sd is 3.2%, 5 sd allowed; a mean
    within 5 of its standard errors."""
    from privstats.cdf.local import LocalPrefixNoise, local_hierarchy

    n, k = 2000, 256
    hh = local_hierarchy(k, 1.0, n, "auto")
    assert hh.split == "users" and len({o.name for o in hh.oracles}) == 2  # GRR and OUE levels, split users
    x = np.clip(np.random.default_rng(3).normal(0.4, 0.15, n), 0, 0.999)
    counts = np.bincount((x * k).astype(int), minlength=k)
    E = QM._local_noise_draws(LocalPrefixNoise(hh, None, None), np.cumsum(counts) / n, n, 2000, seed=1)
    C = hh.prefix_covariance(counts, np.full(hh.height, n / hh.height)) / n**2
    idx = [31, 63, 102, 127, 191]
    emp = np.cov(E[:, idx], rowvar=False)
    sd = np.sqrt(np.diag(C)[idx])
    assert np.all(np.abs(np.diag(emp) / np.diag(C)[idx] - 1) < 5 * np.sqrt(2 / 2000)), np.diag(emp)
    # correlations: sampling sd of a correlation (1 - r²)/sqrt(m)
    emp_sd = np.sqrt(np.diag(emp))
    r_emp, r = emp / np.outer(emp_sd, emp_sd), C[np.ix_(idx, idx)] / np.outer(sd, sd)
    assert np.all(np.abs(r_emp - r) < 5 * (1 - r**2) / np.sqrt(2000) + 1e-12), (r_emp, r)
    assert np.all(np.abs(E[:, idx].mean(axis=0)) < 5 * sd / np.sqrt(2000))


def test_local_law_gives_up_where_draws_cannot_reach_every_level():
    """Six users over a six-level tree that splits users: a draw reaches every level 1.5% of the time,
    so the bounded law stops (the stderr falls back to the band's) instead of looping."""
    from privstats.cdf.local import LocalPrefixNoise
    from privstats.local.hierarchy import HierarchicalHistogram

    hh = HierarchicalHistogram(64, 1.0, 2, "grr", "users")
    raw = np.cumsum(np.bincount([3, 10, 20, 30, 40, 50], minlength=64)) / 6
    assert QM._local_noise_draws(LocalPrefixNoise(hh, None, None), raw, 6, 200, seed=1) is None


def test_release_law_matches_the_spread_at_uniform_data():
    """On evenly spread data the law's stderr is the release's spread: RMS over 200 seeds within
    [0.7, 1.5]x the measured sd per level (the sd's own sampling error at 200 runs is ~5%; at 60 runs,
    ~9%, the median level read 1.32 with the plain law and 1.50 with the bias correction, 1.15 and 1.30
    at 200)."""
    n = 2000
    x = (np.arange(n) + 0.5) / n
    V, S = [], []
    for s in range(200):
        e = privstats.quantiles(x, Q, epsilon=1.0, bounds=(0, 1), rng=s)
        V.append(e.unclipped)
        S.append(e.stderr)
    ratio = np.sqrt(np.mean(np.array(S) ** 2, axis=0)) / np.array(V).std(axis=0, ddof=1)
    assert np.all((ratio >= 0.7) & (ratio <= 1.5)), ratio


def test_release_law_is_post_processing():
    """The same release gives the same stderr: the law depends on the released curve and public
    parameters only (a fixed simulation seed, not the caller's generator)."""
    from privstats.stats.distribution.ecdf import ecdf

    x = np.random.default_rng(4).normal(0.5, 0.1, 1000).clip(0, 1)
    res = ecdf(x, epsilon=1.0, bounds=(0, 1), grid=512, smoothing="isotonic", rng=9)
    a = release_law(res, np.array(Q))[0]
    b = release_law(res, np.array(Q))[0]
    assert a is not None and np.array_equal(a, b) and np.all(a > 0)


@pytest.mark.parametrize("n, eps", [(300, 2.0), (5000, 0.5)])
def test_randhie_stderr_ratio_in_band(n, eps):
    """The two central cells of the real-data table whose stderr was out of band, re-run as the table runs
    them (100 seeds): randhie's lpi, q = 0.25 sits 2-7 points above a block of zeros with a sparse
    stretch between; the band's half-width read 1.59x and 1.85x the spread.  The bar is the issue's
    [0.7, 1.5] (the measured sd's sampling error at 100 runs is ~10%)."""
    R = coverage_real_experiment()
    r = R.run_cell({"data": "randhie", "n": n, "eps": eps, "stat": "quantiles", "model": "central"}, 100)
    assert 0.7 <= r["stderr_ratio"] <= 1.5, r["stderr_ratio"]
    assert r["coverage"] >= 0.93 - 2 * np.sqrt(0.95 * 0.05 / 100)
