"""Smoothing vs cvxopt, quantiles, ROC vs scikit-learn, Hosmer–Lemeshow, bad input."""

import numpy as np
import pytest

import privstats
from privstats.cdf.quantiles import inverse_ecdf, joint_exponential_quantiles
from privstats.cdf.smoothing import smooth
from privstats.cdf.tree import BinaryTreeMechanism


def _noisy_curve(N, eps, seed):
    rng = np.random.default_rng(seed)
    C = np.cumsum(rng.poisson(3, N))
    return BinaryTreeMechanism(N, eps).release(C, rng=rng) / C[-1], C / C[-1]


@pytest.mark.parametrize("N,eps", [(2, 0.1), (7, 0.5), (64, 0.2), (300, 1.0)])
@pytest.mark.parametrize("method", ["l1", "l2"])
def test_smoothing_matches_cvxopt_optimum(N, eps, method):
    pytest.importorskip("cvxopt")
    F, _ = _noisy_curve(N, eps, N)
    S, nu = smooth(F, method, return_correction=True)
    S_ref, nu_ref = smooth(F, method, solver="cvxopt", return_correction=True)
    obj = (lambda v: np.abs(v).sum()) if method == "l1" else (lambda v: (v**2).sum())
    assert obj(nu) <= obj(nu_ref) * (1 + 1e-5) + 1e-9 and obj(nu_ref) <= obj(nu) * (1 + 1e-4) + 1e-9
    if method == "l2":  # strictly convex: unique optimum; cvxopt's interior point stops at reltol 1e-6,
        assert np.max(np.abs(S - S_ref)) < 1e-3  # which moves the argmin by about sqrt(1e-6)
    for curve in (S, smooth(F, "isotonic")):
        assert np.all(np.diff(curve) >= 0) and curve.min() >= 0 and curve.max() <= 1


def test_l2_smoothing_is_not_a_no_op():
    F, true = _noisy_curve(4096, 0.5, 1)
    assert not np.all(np.diff(F) >= 0)
    S = smooth(F, "l2")
    assert ((S - true) ** 2).sum() < ((F - true) ** 2).sum()


def test_isotonic_never_increases_euclidean_error():
    for seed in range(5):
        F, true = _noisy_curve(512, 0.3, seed)
        assert ((smooth(F, "isotonic") - true) ** 2).sum() <= ((F - true) ** 2).sum() + 1e-12


def test_algorithm1_on_exact_curve_gives_true_quantiles():
    x = np.random.default_rng(2).integers(0, 100, 1000).astype(float)
    res = privstats.ecdf(x, epsilon=1e7, bounds=(0, 99), grid=99, smoothing="none", rng=0)
    for p in (0.05, 0.5, 0.93):
        assert res.quantile(p) == np.quantile(x, p, method="inverted_cdf")
    thr = np.arange(1.0, 5.0)
    assert inverse_ecdf(thr, np.array([0.1, 0.2, 0.9, 1.0]), [0.0, 0.15, 0.95, 1.0]).tolist() == [
        1.0,
        2.0,
        4.0,
        4.0,
    ]


def test_joint_exponential_samples_the_stated_density():
    """Tiny data: compare the sampler's mean output with numerical integration of the JointExp density."""
    x, qs, eps = np.array([0.2, 0.5, 0.6]), np.array([0.3, 0.7]), 2.0
    S = np.array([joint_exponential_quantiles(x, qs, epsilon=eps, bounds=(0, 1), rng=r) for r in range(6000)])
    g = (np.arange(600) + 0.5) / 600
    o1, o2 = np.meshgrid(g, g, indexing="ij")
    below1 = (x[None, None] <= o1[..., None]).sum(-1)
    below2 = (x[None, None] <= o2[..., None]).sum(-1)
    u = -(np.abs(below1 - 0.3 * 3) + np.abs(below2 - below1 - 0.4 * 3) + np.abs(3 - below2 - 0.3 * 3))
    w = np.exp(eps / 4 * u) * (o1 <= o2)
    w /= w.sum()
    exact = np.array([(w * o1).sum(), (w * o2).sum()])
    sd = np.sqrt(np.array([(w * o1**2).sum(), (w * o2**2).sum()]) - exact**2)
    assert np.all(np.abs(S.mean(0) - exact) < 5 * sd / np.sqrt(len(S)) + 2e-3)


def test_quantile_methods_are_accurate_and_shuffle_delegates(monkeypatch):
    x = np.random.default_rng(3).beta(2, 5, 20000)
    true = np.quantile(x, [0.25, 0.5, 0.75])
    for method in ("joint", "independent", "tree"):
        est = privstats.quantiles(x, [0.25, 0.5, 0.75], epsilon=1.0, bounds=(0, 1), method=method, rng=4)
        assert np.all(np.abs(est.value - true) < 0.01), method
    with pytest.raises(
        ValueError, match="neighbours='replace'"
    ):  # local: n is public (tests/ecdf/test_ecdf_local.py)
        privstats.quantiles(x, [0.5], epsilon=1.0, bounds=(0, 1), model="local", neighbours="add-remove")
    import privstats.stats.distribution.shuffle_quantiles as freq  # delegation only (the shuffle protocol is tested

    calls = []  # in tests/shuffle and takes a minute here)
    delegated = privstats.Estimate(
        np.array([0.5]),
        model="shuffle",
        protocol="delegated",
        n=2000,
        details={
            "prefix_counts": np.linspace(0, 2000, 8),
            "prefix_stderr": np.ones(8),
            "bin_width": 1 / 8,
            "grid_start": 0.0,
        },
    )
    monkeypatch.setattr(freq, "shuffle_quantiles", lambda *a, **k: calls.append((a, k)) or delegated)
    out = privstats.quantiles(x[:2000], [0.5], epsilon=1.0, delta=1e-6, bounds=(0, 1), model="shuffle", rng=0)
    assert out.protocol == "delegated" and calls[0][1]["epsilon"] == 1.0 and calls[0][1]["delta"] == 1e-6


def test_roc_equals_sklearn_at_large_epsilon():
    from sklearn.metrics import roc_auc_score, roc_curve

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 3000)
    s = np.clip(np.round(rng.normal(0.4 + 0.2 * y, 0.15) * 100) / 100, 0.01, 1)  # grid cell 1 is [0, 0.01]
    for labels in ("public", "private"):
        fpr, tpr, _thr, est = privstats.roc_curve(
            y, s, epsilon=1e7, bounds=(0, 1), grid=100, labels=labels, smoothing="none", rng=6
        )
        assert est.value == pytest.approx(roc_auc_score(y, s), abs=1e-9)
        f_ref, t_ref, _ = roc_curve(y, s, drop_intermediate=False)
        ours = set(zip(np.round(fpr, 9), np.round(tpr, 9), strict=False))
        assert set(zip(np.round(f_ref, 9), np.round(t_ref, 9), strict=False)) <= ours
    fpr, tpr, _thr, est = privstats.roc_curve(y, s, epsilon=1.0, rng=7)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and fpr[0] == 0 and tpr[-1] == 1
    assert abs(est.value - roc_auc_score(y, s)) < 0.05


def test_hosmer_lemeshow_at_large_epsilon_equals_direct_computation():
    from scipy import stats

    rng = np.random.default_rng(8)
    p = rng.uniform(0.05, 0.95, 5000)
    y = (rng.uniform(size=5000) < p).astype(int)
    est = privstats.hosmer_lemeshow(y, p, epsilon=1e7, groups=10, depth=12, rng=9)
    cuts = est.details["thresholds"]
    g = np.searchsorted(cuts, p, side="left")
    H = 0.0
    for q in range(10):
        m = g == q
        e1, e0, o1 = p[m].sum(), (1 - p[m]).sum(), y[m].sum()
        H += (o1 - e1) ** 2 / e1 + ((m.sum() - o1) - e0) ** 2 / e0
    assert est.value == pytest.approx(H, rel=1e-4)
    assert est.details["p_value_chi2"] == pytest.approx(stats.chi2.sf(H, 8), rel=1e-3)
    assert np.all(np.bincount(g, minlength=10) > 300)  # private quantile groups are balanced


def test_bad_input_gets_clear_errors():
    x = np.array([0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match="x: 1 value outside bounds"):
        privstats.ecdf([0.1, 1.5], epsilon=1.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="x contains NaN"):
        privstats.ecdf([0.1, np.nan], epsilon=1.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="epsilon"):
        privstats.ecdf(x, epsilon=0, bounds=(0, 1))
    with pytest.raises(ValueError, match="bounds is required"):
        privstats.ecdf(x, epsilon=1.0, bounds=None)
    with pytest.raises(ValueError, match="grid must be a power of two"):
        privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=100, model="secure", protocol="fss")
    with pytest.raises(ValueError, match="smoothing"):
        privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), smoothing="l3")
    with pytest.raises(ValueError, match="neighbours"):
        privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), neighbours="swap")
    with pytest.raises(ValueError, match="y_true must contain exactly two classes"):
        privstats.roc_curve([1, 1, 1], [0.2, 0.3, 0.4], epsilon=1.0)
    with pytest.raises(ValueError, match="q must be probabilities"):
        privstats.quantiles(x, [1.5], epsilon=1.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="y_prob: 1 value outside"):
        privstats.hosmer_lemeshow([0, 1, 1], [0.2, 1.3, 0.5], epsilon=1.0)
    before = x.copy()
    privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=8, rng=0)
    assert np.array_equal(x, before)
