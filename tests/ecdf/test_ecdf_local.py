"""Local-model ECDF, quantiles and ROC: unbiased with exact variance, clients = simulate, scipy/numpy/sklearn parity."""

import numpy as np
import pytest
from scipy import stats

import privstats
from privstats.cdf.local import local_hierarchy, release_local_prefix_counts


def _cells(x, grid):
    return np.searchsorted(grid, x, side="left")


def test_ecdf_local_unbiased_with_exact_variance_by_monte_carlo():
    rng = np.random.default_rng(0)
    x = rng.beta(2, 5, 3000)
    grid = np.arange(1, 17) / 16
    truth = stats.ecdf(x).cdf.evaluate(grid)
    counts = np.bincount(_cells(x, grid), minlength=16)
    reps, n = 500, x.size
    F, var = np.empty((reps, 16)), np.zeros(16)
    for r in range(reps):
        res = privstats.ecdf(
            x, epsilon=1.0, bounds=(0, 1), grid=16, model="local", smoothing="none", rng=100 + r
        )
        hh = local_hierarchy(16, 1.0, n)
        F[r] = res.raw
        var += hh.prefix_variances(counts, res.estimate.params["level_sizes"]) / n**2 / reps  # E[Var | split]
    assert res.estimate.model == "local" and res.estimate.messages_per_user == hh.messages_per_user
    inner = slice(0, 15)  # the last point is n/n exactly
    z = (F.mean(axis=0) - truth)[inner] / np.sqrt(var[inner] / reps)
    assert np.all(np.abs(z) < 5)
    mse = np.mean((F - truth) ** 2, axis=0)[inner]
    tol = 5 * np.sqrt(2 / reps)
    assert np.all(np.abs(mse / var[inner] - 1) < tol)
    assert not np.all(np.abs(mse / (0.7 * var[inner]) - 1) < tol)  # a 30% wrong variance is caught
    # the reported stderr (exact formula at the plug-in counts) is close to the exact one
    assert np.allclose(res.stderr[inner], np.sqrt(var[inner]), rtol=0.25)


@pytest.mark.parametrize("method", ["b-ary:2", "b-ary:3", "auto"])
def test_ecdf_local_stderr_equals_range_query(method):
    x = np.random.default_rng(1).uniform(0, 1, 2000)
    grid = np.arange(1, 21) / 20
    hh = local_hierarchy(20, 1.0, x.size, method)
    counts, sd, state, _ = release_local_prefix_counts(_cells(x, grid), hh, rng=2)
    for i in range(20):
        q = hh.range_query(state, 0, i)
        assert counts[i] == pytest.approx(q.value, rel=1e-12, abs=1e-9)
        assert sd[i] == pytest.approx(q.stderr, rel=1e-9, abs=1e-9)


def test_clients_and_simulate_agree_in_distribution():
    x = np.random.default_rng(3).beta(2, 2, 60)
    grid = np.arange(1, 9) / 8
    cells = _cells(x, grid)
    hh = local_hierarchy(8, 1.0, x.size, "b-ary:2")
    reps = 1500
    gen_c, gen_s = np.random.default_rng(4), np.random.default_rng(5)
    clients = np.array([release_local_prefix_counts(cells, hh, gen_c, clients=True)[0] for _ in range(reps)])
    sim = np.array([release_local_prefix_counts(cells, hh, gen_s, clients=False)[0] for _ in range(reps)])
    for j in (1, 3, 5):
        assert stats.ks_2samp(clients[:, j], sim[:, j]).pvalue > 1e-3
    # the comparison has power: a simulation at 2ε is rejected
    hh2 = type(hh)(8, 2.0, hh.branching, hh.oracle, hh.split)
    wrong = np.array([release_local_prefix_counts(cells, hh2, gen_s, clients=False)[0] for _ in range(reps)])
    assert min(stats.ks_2samp(clients[:, j], wrong[:, j]).pvalue for j in (1, 3, 5)) < 1e-3
    # the deployment path (rng=None) runs the clients
    res = privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=8, model="local", method="b-ary:2")
    assert res.estimate.params["path"] == "clients" and res.estimate.params["branching"] == 2


def test_ecdf_local_equals_scipy_at_large_epsilon():
    rng = np.random.default_rng(6)
    x = rng.exponential(1.0, 4000).clip(0, 8)
    res = privstats.ecdf(x, epsilon=200.0, bounds=(0, 8), grid=64, model="local", rng=7)
    exact = stats.ecdf(x).cdf.evaluate(res.quantiles)
    assert np.max(np.abs(res.probabilities - exact)) < 1e-9
    assert np.max(np.abs(res.evaluate(res.quantiles) - exact)) < 1e-9


def test_local_quantiles_close_to_numpy_at_large_n():
    x = np.random.default_rng(8).beta(2, 5, 1_000_000)
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    est = privstats.quantiles(x, qs, epsilon=1.0, bounds=(0, 1), model="local", rng=9)
    curve = privstats.ecdf(
        x, epsilon=1.0, bounds=(0, 1), grid=4096, model="local", smoothing="isotonic", rng=9
    )
    true = np.quantile(x, qs)
    # error in F of 5 stderr, turned into x through the density (>= 0.9 on [0.03, 0.6]), plus one grid cell
    tol = 5 * curve.stderr.max() / 0.9 + 1 / 4096
    assert np.all(np.abs(est.value - true) < tol), (est.value, true, tol)
    assert est.model == "local" and est.protocol == "ecdf-local-hierarchy+algorithm1"
    assert est.params["method"] == "tree" and est.messages_per_user >= 1


def test_local_roc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(10)
    y = rng.integers(0, 2, 4000)
    s = np.clip(np.round(rng.normal(0.4 + 0.2 * y, 0.15) * 32) / 32, 1 / 32, 1)  # on the 32-point grid
    fpr, tpr, _, est = privstats.roc_curve(
        y, s, epsilon=200.0, grid=32, model="local", smoothing="none", rng=11
    )
    assert est.value == pytest.approx(roc_auc_score(y, s), abs=1e-9)
    assert est.model == "local" and est.messages_per_user == 1
    fpr, tpr, _, est = privstats.roc_curve(y, s, epsilon=2.0, grid=32, model="local", rng=12)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert abs(est.details["auc_raw"] - roc_auc_score(y, s)) < 5 * est.stderr


def test_local_bad_input_gets_clear_errors():
    x = np.random.default_rng(13).uniform(0, 1, 500)
    kw = {"bounds": (0, 1), "model": "local", "rng": 0}
    with pytest.raises(ValueError, match="epsilon"):
        privstats.ecdf(x, epsilon=0.0, **kw)
    with pytest.raises(ValueError, match="x"):
        privstats.ecdf(np.append(x, 1.5), epsilon=1.0, **kw)
    with pytest.raises(ValueError, match="strictly increasing"):
        privstats.ecdf(x, epsilon=1.0, grid=[0.5, 0.2, 1.0], **kw)
    with pytest.raises(ValueError, match="at least 2 cells"):
        privstats.ecdf(x, epsilon=1.0, grid=1, **kw)
    with pytest.raises(ValueError, match="b-ary"):
        privstats.ecdf(x, epsilon=1.0, method="b-ary:1", **kw)
    with pytest.raises(ValueError, match="neighbours='replace'"):
        privstats.ecdf(x, epsilon=1.0, neighbours="add-remove", **kw)
    with pytest.raises(ValueError, match="method='tree'"):
        privstats.quantiles(x, [0.5], epsilon=1.0, method="joint", **kw)
    with pytest.raises(ValueError, match="labels='public'"):
        privstats.roc_curve((x > 0.5).astype(int), x, epsilon=1.0, labels="private", **kw)
    with pytest.raises(ValueError, match=r"ecdf supports model in \('central', 'secure', 'local'\)"):
        privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), model="shuffle")
    before = x.copy()
    privstats.ecdf(x, epsilon=1.0, grid=16, **kw)
    assert np.array_equal(x, before)  # inputs are not modified
