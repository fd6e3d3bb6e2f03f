"""Public API: convergence to scikit-learn / SciPy at very large ε, parameters and guarantees in the
Estimate, central sensitivities, and clear errors for bad input (which is never modified)."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

import privstats
from privstats.privacy import ApproxDP, PureDP
from privstats.privacy.composition import advanced_composition
from privstats.ustat.central import exact_gini_mean_difference


@pytest.fixture(scope="module")
def scores():
    g = np.random.default_rng(50)
    n = 20000
    y = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    s = np.r_[g.beta(3, 2, n), g.beta(2, 3, n)]
    return y, s


@pytest.mark.parametrize(
    "model,method,kw",
    [
        ("local", "quantized", {"domain_size": 4096}),
        ("local", "tree", {"domain_size": 2**16}),
        ("secure", "pairs", {"P": 1}),
        ("central", "exact", {}),
    ],
)
def test_auc_converges_to_sklearn_at_large_epsilon(scores, model, method, kw):
    y, s = scores
    est = privstats.auc(y, s, epsilon=60.0, model=model, method=method, rng=1, **kw)
    truth = roc_auc_score(y, s)
    quantisation = 1.0 / kw.get("domain_size", 1e9)
    assert abs(est.value - truth) < 5 * est.stderr + quantisation + 1e-9
    if model != "secure":  # pairs keep their subsampling error at any ε
        assert abs(est.value - truth) < 0.01


def test_kendall_converges_to_scipy_at_large_epsilon():
    g = np.random.default_rng(51)
    x = g.integers(0, 6, 30000)
    y = np.clip(x + g.integers(-2, 3, x.size), 0, 5)
    truth = stats.kendalltau(x, y).statistic
    local = privstats.kendall_tau(x, y, epsilon=60.0, bounds=(0, 6), bins=6, oracle="grr", rng=2)
    central = privstats.kendall_tau(x, y, epsilon=60.0, bounds=(0, 6), model="central", rng=2)
    assert local.value == pytest.approx(truth, abs=1e-3) and central.value == pytest.approx(truth, abs=1e-3)
    tau_a = privstats.kendall_tau(x, y, epsilon=1e4, bounds=(0, 6), model="secure", variant="a", P=1, rng=3)
    assert abs(tau_a.value - local.details["tau_a"]) < 5 * tau_a.stderr


def test_local_auc_stderr_reflects_the_spread(scores):
    y, s = scores
    ests = [
        privstats.auc(y, s, epsilon=1.0, method="quantized", domain_size=16, oracle="grr", rng=i)
        for i in range(40)
    ]
    spread = np.std([e.value for e in ests], ddof=1)
    se = np.mean([e.stderr for e in ests])
    assert 0.6 < spread / se < 1.5


def test_estimate_carries_chosen_parameters_and_guarantees(scores):
    y, s = scores
    auto = privstats.auc(y, s, epsilon=1.0, model="local", rng=0)
    assert auto.protocol == "ustat-quantized" and {"domain_size", "oracle"} <= set(auto.params)
    # a large given domain keeps the tree (its error grows like log²d, Protocol A's like d)
    tree = privstats.auc(y, s, epsilon=1.0, model="local", domain_size=2**12, rng=0)
    assert tree.protocol == "ustat-tree" and tree.model == "local"
    assert {"domain_size", "depth", "a", "splitting"} <= set(tree.params)
    assert tree.guarantee == PureDP(1.0) and tree.n == y.size and tree.neighbours == "replace"
    adv = privstats.auc(y, s, epsilon=1.0, delta=1e-6, splitting="advanced", domain_size=2**10, rng=0)
    assert adv.guarantee == ApproxDP(1.0, 1e-6) and adv.messages_per_user == 10
    pairs = privstats.auc(y, s, epsilon=1.0, model="secure", rng=0)
    assert pairs.protocol == "ustat-pairs" and pairs.params["P"] >= 1
    allp = privstats.auc(y, s, epsilon=1.0, delta=1e-8, model="secure", method="all-pairs", rng=0)
    assert allp.guarantee == ApproxDP(1.0, 1e-8) and allp.stderr > pairs.stderr / 100
    # the per-pair ε₀ composes (core DRV accountant, 20000 pairs per user) to at most (ε, δ)
    composed = advanced_composition(allp.params["pair_epsilon"], 20000, 1e-8)
    assert composed.epsilon <= 1.0 + 1e-9 and composed.epsilon > 0.99
    central = privstats.auc(y, s, epsilon=1.0, model="central", rng=0)
    assert central.params["sensitivity"] == pytest.approx(1 / 20000)
    assert central.stderr == pytest.approx(math.sqrt(2) / 20000, rel=1e-3)


def test_other_statistics_end_to_end():
    g = np.random.default_rng(52)
    x = g.random(50000)
    gmd = exact_gini_mean_difference(x)
    for model in ("local", "secure", "central"):
        est = privstats.gini_mean_difference(10 * x, epsilon=2.0, bounds=(0, 10), model=model, rng=1)
        assert abs(est.value - 10 * gmd) < 5 * est.stderr + 10 * 0.01
    coef = privstats.gini_coefficient(x, epsilon=4.0, bounds=(0, 1), rng=2)
    assert abs(coef.value - gmd / (2 * x.mean())) < 0.1 and coef.details["mean"] > 0
    v = g.integers(0, 5, 40000)
    col = privstats.collision_probability(v, epsilon=2.0, domain_size=5, model="local", rng=3)
    assert abs(col.value - 0.2) < 5 * col.stderr
    assert col.details["renyi2_entropy"] == pytest.approx(-math.log(col.value))
    sec = privstats.collision_probability(v, epsilon=2.0, domain_size=5, model="secure", rng=3)
    assert sec.params["mechanism"] == "rr" and abs(sec.value - 0.2) < 5 * sec.stderr
    A = np.abs(np.subtract.outer(np.arange(5), np.arange(5))) / 4.0
    mat = privstats.ustatistic(v, A, epsilon=2.0, model="local", rng=4)
    exact = np.mean(A[v[:2000, None], v[None, :2000]]) * 2000 / 1999
    assert abs(mat.value - exact) < 5 * mat.stderr + 0.01
    var = privstats.ustatistic(
        x, lambda a, b: (a - b) ** 2 / 2, epsilon=50.0, bounds=(0, 1), bins=64, model="local", rng=5
    )
    assert var.value == pytest.approx(np.var(x, ddof=1), abs=5 * var.stderr + 1e-3)


BAD_AUC = [
    ({"y_true": [0, 1, 2, 1], "y_score": [0.1, 0.2, 0.3, 0.4]}, "exactly two classes"),
    ({"y_true": [1, 1, 1, 1], "y_score": [0.1, 0.2, 0.3, 0.4]}, "exactly two classes"),
    ({"y_true": [0, 1, 0, 1], "y_score": [0.1, 0.2, 1.3, 0.4]}, "outside bounds"),
    ({"y_true": [0, 1, 0, 1], "y_score": [0.1, np.nan, 0.3, 0.4]}, "NaN"),
    ({"y_true": [0, 1, 0], "y_score": [0.1, 0.2, 0.3, 0.4]}, "length mismatch"),
]


@pytest.mark.parametrize("args,match", BAD_AUC)
def test_auc_bad_input_gets_a_clear_error(args, match):
    with pytest.raises(ValueError, match=match):
        privstats.auc(args["y_true"], args["y_score"], epsilon=1.0, rng=0)


def test_more_bad_input_and_inputs_unchanged():
    y, s = np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.3, 0.4])
    s_copy = s.copy()
    for kw, match in [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": 1, "model": "shuffle"}, "model"),
        ({"epsilon": 1, "model": "local", "method": "pairs"}, "method"),
        ({"epsilon": 1, "bounds": None}, "bounds"),
        ({"epsilon": 1, "method": "tree", "domain_size": 12}, "power of two"),
        ({"epsilon": 1, "model": "secure", "method": "all-pairs"}, "delta"),
    ]:
        with pytest.raises(ValueError, match=match):
            privstats.auc(y, s, rng=0, **kw)
    assert np.array_equal(s, s_copy)
    with pytest.raises(ValueError, match="bounds"):
        privstats.kendall_tau([1, 2], [1, 2], epsilon=1.0, model="local")
    with pytest.raises(ValueError, match="kernel_range"):
        privstats.ustatistic([0.1, 0.2], lambda a, b: a * b, epsilon=1.0, bounds=(0, 1), model="secure")
    with pytest.raises(ValueError, match="non-negative"):
        privstats.gini_coefficient([0.1, 0.2], epsilon=1.0, bounds=(-1, 1))
    with pytest.raises(ValueError, match="x must be in"):
        privstats.collision_probability([0, 5], epsilon=1.0, domain_size=4)


def test_odd_n_in_pairs_is_stated():
    x = np.random.default_rng(53).random(1001)
    est = privstats.gini_mean_difference(x, epsilon=1.0, bounds=(0, 1), model="secure", P=3, rng=0)
    assert est.details["sat_out_per_permutation"] == 1 and est.details["pairs"] == 1500


def test_deployment_path_runs_with_the_os_csprng(scores):
    y, s = scores
    for method in ("tree", "quantized"):
        est = privstats.auc(y[::20], s[::20], epsilon=2.0, method=method)
        assert math.isfinite(est.value)
    est = privstats.kendall_tau(s[:3000], s[3000:6000], epsilon=1.0, bounds=(0, 1), model="secure")
    assert math.isfinite(est.value)
