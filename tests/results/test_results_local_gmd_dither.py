"""Local Gini mean difference on a dithered grid (``quantization="dither"``, issue 26).

scikit-learn's digits (pixel sums, public bounds 0-1,024) fill a quarter of one cell of the fixed
grid: there the binned GMD counts every pair in that cell as a uniform cell's 1/(3k), 2.8x past the
bias bound for densities linear within cells; local coverage read 0.887 (GMD) and 0.807 (the
coefficient) at n = 300, ε = 0.5.  Shifting the grid by a public uniform fraction of a cell and
counting |a − b|/k makes the binned value count the grid edges between two values, k·|x − y| on
average over the shift: unbiased for every data set.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privstats
from privstats.stats.pairwise.local_quantized import _gmd_dithered_cells, _gmd_linear_cell_bias
from privstats.ustat import kernels as K

RUNS = 400


def _gmd(x: np.ndarray) -> float:
    n, xs = x.size, np.sort(x)
    return float(np.sum(xs * (2 * np.arange(n) - n + 1)) / (n * (n - 1) / 2))


def _binned(cells: np.ndarray, op: K.GiniOperator) -> float:
    h = np.bincount(cells, minlength=op.k).astype(float)
    return float(h @ op.matvec(h) - h @ op.diagonal()) / (cells.size * (cells.size - 1))


def _digits(n: int) -> np.ndarray:
    sk = pytest.importorskip("sklearn.datasets")
    x = sk.load_digits().data.sum(axis=1)
    return np.random.default_rng(n).choice(x, n, replace=False)


@pytest.mark.parametrize("k", [4, 9])
def test_binned_gmd_is_unbiased_over_the_shift_where_the_fixed_grid_passes_its_bound(k):
    """Exact over the shift (midpoint rule on M shifts: a pair's count takes two values, so the rule is
    off by at most 2/(M·k) of the range), on values narrower than a cell and on six tied values."""
    u_narrow = _digits(300) / 1024
    u_tied = np.random.default_rng(1).choice(np.linspace(0.02, 0.98, 6), 300)
    M = 4096
    for u in (u_narrow, u_tied):
        op = K.GiniOperator(k + 1, "center")
        mean = np.mean([_binned(_gmd_dithered_cells(u, k, (j + 0.5) / M), op) for j in range(M)])
        assert abs(mean * (k + 1) / k - _gmd(u)) <= 2 / (M * k), k
    # the fixed grid on the narrow values: off by more than its linear-within-cell bound
    cells = K.quantize(u_narrow, (0, 1), k)
    fixed = _binned(cells, K.GiniOperator(k, "avg"))
    assert fixed - _gmd(u_narrow) > 1.2 * _gmd_linear_cell_bias(np.bincount(cells, minlength=k))


def test_local_gmd_on_digits_is_unbiased_and_covers_with_dither():
    """n = 1,000, ε = 1 (9 cells): 400 seeds; |mean − truth| ≤ 4 standard errors of the mean and
    coverage in [0.93, 0.99] ± 4 binomial sd.  The fixed grid was 0.33 sd high there (6.6 standard
    errors at 400 seeds)."""
    x = _digits(1000)
    truth = _gmd(x)
    out = {}
    for how in ("dither", "avg"):
        vals, hits = [], 0
        for r in range(RUNS):
            est = privstats.gini_mean_difference(
                x, epsilon=1.0, bounds=(0, 1024), model="local", quantization=how, rng=3000 + r
            )
            lo, hi = est.ci()
            vals.append(est.unclipped)
            hits += lo <= truth <= hi
        rmse = math.sqrt(np.mean((np.array(vals) - truth) ** 2))
        out[how] = (np.mean(vals) - truth) / (np.std(vals, ddof=1) / math.sqrt(RUNS)), hits / RUNS, rmse
    z, cov, rmse = out["dither"]
    tol = 4 * math.sqrt(0.95 * 0.05 / RUNS)
    assert abs(z) <= 4 and 0.93 - tol <= cov <= 0.99 + tol, out
    assert out["avg"][0] > 4, out  # the fixed grid's bias on values narrower than a cell
    # the plan's range over data shapes holds the measured RMSE (its uniform-data number is 0.44x)
    plan = privstats.plan(
        "gini_mean_difference", n=1000, epsilon=1.0, bounds=(0, 1024), model="local", quantization="dither"
    ).best
    assert plan.stderr_range[0] <= rmse <= plan.stderr_range[1], (plan.stderr_range, rmse)


def test_gini_coefficient_on_digits_covers_with_dither():
    """The coefficient's GMD at ε/2 on 6 cells: the fixed grid's bias put coverage at 0.860 (400 seeds);
    dithered, in [0.93 − 4 binomial sd, 0.99]."""
    x = _digits(1000)
    truth = _gmd(x) * (x.size - 1) / (2 * x.size * x.mean())
    hits = 0
    for r in range(RUNS):
        est = privstats.gini_coefficient(
            x, epsilon=1.0, bounds=(0, 1024), model="local", quantization="dither", rng=7000 + r
        )
        lo, hi = est.ci()
        hits += lo <= truth <= hi
    assert est.params["quantization"] == "dither"
    assert 0.93 - 4 * math.sqrt(0.95 * 0.05 / RUNS) <= hits / RUNS <= 0.99, hits / RUNS


def test_shift_is_public_per_release_and_the_real_path_matches_the_simulation():
    """The shift is in ``params`` and differs between releases (OS CSPRNG with rng=None, the seeded
    stream otherwise); clients' encoding (rng=None) and the simulation agree in mean and sd within
    five standard errors over 200 releases each; the plan's stderr is the noise's at uniform data."""
    x = np.random.default_rng(0).random(2000)
    kw = dict(epsilon=1.0, bounds=(0, 1), model="local", quantization="dither")
    real = [privstats.gini_mean_difference(x, **kw) for _ in range(200)]
    sim = [privstats.gini_mean_difference(x, rng=r, **kw) for r in range(200)]
    shifts = [e.params["shift"] for e in real]
    assert all(0 <= s < 1 for s in shifts) and len(set(shifts)) == 200
    assert privstats.gini_mean_difference(x, rng=5, **kw).params["shift"] == sim[5].params["shift"]
    a, b = np.array([e.value for e in real]), np.array([e.value for e in sim])
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) <= 5 * se
    assert 0.75 <= a.std(ddof=1) / b.std(ddof=1) <= 1.33  # two sds of 200 draws: 5 sd of their ratio
    plan = privstats.plan("gini_mean_difference", n=2000, **kw).best
    assert plan.params["quantization"] == "dither" and plan.params["bins"] == sim[0].params["bins"]
    assert 0.8 <= plan.stderr / b.std(ddof=1) <= 1.25, plan.stderr / b.std(ddof=1)


def test_dither_is_the_gini_mean_differences_alone():
    with pytest.raises(ValueError, match="quantization"):
        privstats.ustatistic(
            [0.1, 0.5, 0.9], kernel=lambda a, b: abs(a - b), bounds=(0, 1), epsilon=1, quantization="dither"
        )
    with pytest.raises(ValueError, match="quantization"):
        privstats.gini_mean_difference([0.1, 0.5], bounds=(0, 1), epsilon=1, quantization="shifted")
