"""Valid ranges by default, honest defaults, one unsupported-model error (issue 15)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import privstats


@pytest.fixture(scope="module")
def tiny():
    g = np.random.default_rng(7)
    y = np.r_[np.ones(40, int), np.zeros(40, int)]
    return y, g.random(80), g.random(80)


def test_local_auc_and_tau_stay_in_range_with_the_raw_value_kept(tiny):
    y, s, z = tiny
    outside = 0
    for seed in range(30):
        a = privstats.auc(y, s, epsilon=0.5, model="local", rng=seed)
        t = privstats.kendall_tau(s, z, epsilon=0.5, model="local", bounds=(0, 1), rng=seed)
        for est, (lo, hi) in ((a, (0, 1)), (t, (-1, 1))):
            assert lo <= est.value <= hi and est.support == (lo, hi)
            ci = est.ci()
            assert lo <= ci[0] <= ci[1] <= hi
            raw = est.details["unbiased"]
            assert est.value == min(max(raw, lo), hi)
            outside += not (lo <= raw <= hi)
    assert outside > 0  # the raw values do leave the range at this n and ε
    raw = privstats.auc(y, s, epsilon=0.5, model="local", rng=3, postprocess="none")
    assert raw.value == privstats.auc(y, s, epsilon=0.5, model="local", rng=3).details["unbiased"]
    with pytest.raises(ValueError, match="postprocess"):
        privstats.auc(y, s, epsilon=0.5, postprocess="round")


def test_counts_are_non_negative_and_quantiles_ordered_inside_bounds():
    x = np.zeros(500, int)
    est = privstats.frequencies(x, domain=64, epsilon=0.2, model="local", rng=0)
    assert np.all(est.value >= 0) and np.all(est.value <= 500) and np.any(est.details["unbiased"] < 0)
    lo, _ = est.ci()
    assert np.all(lo >= 0)
    q = privstats.quantiles(
        np.random.default_rng(1).random(300),
        [0.9, 0.1, 0.5],
        epsilon=0.3,
        bounds=(0, 1),
        model="local",
        rng=2,
    )
    v = q.value
    assert np.all((v >= 0) & (v <= 1)) and v[1] <= v[2] <= v[0]


def test_ecdf_and_roc_monotone_in_unit_interval():
    g = np.random.default_rng(3)
    x = g.random(500)
    res = privstats.ecdf(x, epsilon=0.5, bounds=(0, 1), grid=64, model="local", rng=1)
    v = res.estimate.value
    assert np.all(np.diff(v) >= 0) and v.min() >= 0 and v.max() <= 1
    assert res.estimate.details["unbiased"] is res.raw and res.estimate.support == (0.0, 1.0)
    y = (g.random(500) < x).astype(int)
    fpr, tpr, _, est = privstats.roc_curve(y, x, epsilon=0.5, grid=64, model="local", rng=2)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and 0 <= est.value <= 1
    # issue 26: the stderr is the isotonic AUC's, so the interval centres on that value, not auc_raw
    assert "unbiased" not in est.details and est.details["stderr_raw"] >= 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: privstats.ecdf([0.1, 0.2], epsilon=1.0, bounds=(0, 1), model="shuffle"),
        lambda: privstats.roc_curve([0, 1], [0.1, 0.2], epsilon=1.0, model="shuffle"),
        lambda: privstats.auc([0, 1], [0.1, 0.2], epsilon=1.0, model="shuffle"),
        lambda: privstats.frequencies([0, 1], domain=2, epsilon=1.0, model="secure"),
        lambda: privstats.hosmer_lemeshow([0, 1, 1], [0.2, 0.5, 0.7], epsilon=1.0, model="local"),
    ],
)
def test_every_unsupported_combination_gets_the_same_error(call):
    with pytest.raises(ValueError, match=r"supports model in \("):
        call()


def test_one_documented_default_and_delta_only_when_passed():
    x = np.random.default_rng(0).integers(0, 4, 2000)
    assert privstats.frequencies(x, domain=4, epsilon=1.0, rng=0).model == "central"
    y = np.r_[np.ones(100, int), np.zeros(100, int)]
    assert privstats.auc(y, np.linspace(0, 1, 200), epsilon=1.0, rng=0).model == "central"
    assert (
        privstats.ecdf(np.linspace(0, 1, 200), epsilon=1.0, bounds=(0, 1), rng=0).estimate.model == "central"
    )
    assert privstats.plan.__module__ == "privstats.plan"
    with pytest.raises(ValueError, match="delta"):
        privstats.frequencies(x, domain=4, epsilon=1.0, model="shuffle", rng=0)
    with pytest.raises(ValueError, match="delta"):
        privstats.quantiles(x / 4, [0.5], epsilon=1.0, bounds=(0, 1), model="shuffle", rng=0)


def test_kendall_tau_needs_bounds_only_where_it_quantises():
    a, b = np.arange(30.0) * 1e6, np.arange(30.0)[::-1]  # no bounds known: rank-based
    for model in ("central", "secure"):
        est = privstats.kendall_tau(a, b, epsilon=1.0, model=model, rng=0)
        assert -1 <= est.value <= 1
    with pytest.raises(ValueError, match="bounds"):
        privstats.kendall_tau(a, b, epsilon=1.0, model="local", rng=0)


def test_submodules_are_lazy_attributes():
    code = (
        "import sys, privstats; assert 'privstats.local' not in sys.modules; "
        "print(privstats.local.GRR.__name__, privstats.shuffle.__name__, privstats.secure.__name__, "
        "privstats.privacy.__name__, privstats.engine.__name__, privstats.central.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "GRR",
        "privstats.shuffle",
        "privstats.secure",
        "privstats.privacy",
        "privstats.engine",
        "privstats.central",
    ]


def test_cli_unsupported_model_exits_2_without_traceback(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("x,y\n0.1,0\n0.6,1\n0.4,0\n0.9,1\n")
    for stat, extra in (("ecdf", []), ("roc", ["--label", "y"])):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "privstats",
                "estimate",
                stat,
                "--input",
                str(f),
                "--column",
                "x",
                "--epsilon",
                "1",
                "--bounds",
                "0",
                "1",
                "--model",
                "shuffle",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 2 and "supports model in" in out.stderr and "Traceback" not in out.stderr
    helptext = subprocess.run(
        [sys.executable, "-m", "privstats", "estimate", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    assert "frequencies: central, shuffle, local" in " ".join(helptext.split())
