"""Standard errors and accounting: AUC variance (exact, bilinear), HL p-value / stderr / budget,
count covariances, public-only quantile method choice."""

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

import privstats
from privstats.cdf.tree import BaryTreeMechanism, BinaryTreeMechanism
from privstats.privacy import discrete_laplace
from privstats.stats.distribution import (
    HL_STEPS,
    _hl_statistic,
    auc_variance,
    hl_group_sums,
    hl_uncertainty,
    hosmer_lemeshow_accounting,
    raw_covariance,
)


def _var_tol(reps, kurtosis=4.0):
    """5 standard errors of a sample variance ratio (kurtosis 4 bounds these near-Gaussian sums)."""
    return 5 * np.sqrt((kurtosis - 1) / reps)


@pytest.mark.parametrize(
    "mech",
    [
        BinaryTreeMechanism(12, 2.0),
        BaryTreeMechanism(20, 1.0, 3),
        BaryTreeMechanism(16, 1.0, 4, "add-remove"),
    ],
    ids=lambda m: f"{m.name}-{m.neighbours}",
)
def test_count_covariance_by_monte_carlo(mech):
    """Var(w^T C) for a random w: checks off-diagonal terms; the diagonal-only variant is caught."""
    reps = 3000
    C = np.cumsum(np.random.default_rng(0).poisson(4, mech.n_points))
    rng = np.random.default_rng(1)
    R = np.array([mech.estimate_counts(mech.release(C, rng=rng), int(C[-1])) for _ in range(reps)])
    cov = mech.count_covariance()
    assert np.allclose(np.diag(cov), mech.count_variance())
    w = np.random.default_rng(2).uniform(0, 1, mech.n_points)
    exact = w @ cov @ w
    ratio = np.var(R @ w, ddof=1) / exact
    assert abs(ratio - 1) < _var_tol(reps)
    assert abs(np.var(R @ w, ddof=1) / (w**2 @ np.diag(cov)) - 1) > _var_tol(reps)  # independence is wrong


def _roc_data(n=400, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return y, np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)


@pytest.mark.parametrize(
    "labels,method,eps", [("public", "binary", 1.0), ("public", "auto", 0.5), ("private", "auto", 2.0)]
)
def test_auc_unbiased_with_exact_variance(labels, method, eps):
    """Unsmoothed AUC: mean = grid AUC, MC variance = exact bilinear variance, reported var unbiased."""
    y, s = _roc_data()
    reps, kw = 1000, dict(grid=32, labels=labels, method=method, smoothing="none")
    _, _, _, ref = privstats.roc_curve(y, s, epsilon=1e9, rng=0, **kw)
    pos0, neg0 = ref.details["positives"], ref.details["negatives"]
    auc, var_hat = [], []
    for r in range(reps):
        est = privstats.roc_curve(y, s, epsilon=eps, rng=r + 1, **kw)[3]
        auc.append(est.value)
        var_hat.append(est.stderr**2)
    pos, neg = est.details["positives"], est.details["negatives"]
    # covariance of the eps-mechanism, evaluated at the true curves (public labels: exact;
    # private labels: delta method at the true class totals)
    cov = [
        raw_covariance(
            SimpleNamespace(
                raw=true.raw,
                estimate=SimpleNamespace(
                    details={
                        "noise_model": {
                            **true.estimate.details["noise_model"],
                            "mechanism": noisy.estimate.details["noise_model"]["mechanism"],
                        }
                    }
                ),
            )
        )
        for true, noisy in ((pos0, pos), (neg0, neg))
    ]
    exact, _ = auc_variance(pos0.raw, neg0.raw, *cov)
    auc, var_hat = np.array(auc), np.array(var_hat)
    assert abs(auc.mean() - ref.value) < 5 * np.sqrt(exact / reps)
    assert abs(auc.var(ddof=1) / exact - 1) < _var_tol(reps)
    assert abs(var_hat.mean() - exact) < 5 * var_hat.std(ddof=1) / np.sqrt(reps) + 1e-12
    if labels == "public":
        # a variance that ignores the tree's correlations (diagonal covariance) is caught
        diag_only, _ = auc_variance(
            pos0.raw, neg0.raw, np.diag(np.diag(raw_covariance(pos))), np.diag(np.diag(raw_covariance(neg)))
        )
        assert abs(auc.var(ddof=1) / diag_only - 1) > _var_tol(reps)


def test_smoothed_auc_error_within_reported_stderr():
    y, s = _roc_data()
    reps = 400
    truth = privstats.roc_curve(y, s, epsilon=1e9, grid=32, smoothing="none", rng=0)[3].value
    est = [
        privstats.roc_curve(y, s, epsilon=1.0, grid=32, smoothing="isotonic", rng=r)[3] for r in range(reps)
    ]
    mse = np.mean([(e.value - truth) ** 2 for e in est])
    var = np.mean([e.stderr**2 for e in est])
    assert mse < var * (1 + _var_tol(reps))


# ---------------------------------------------------------------- Hosmer–Lemeshow


def test_hl_accounting_is_computed_and_tight_bound_holds_by_enumeration():
    for budget, extra in (("tight", 5), ("paper", 9)):
        acc = hosmer_lemeshow_accounting(1.0, 10, budget)
        assert acc["epsilon_prime"] == pytest.approx(1 / (10 + extra))
        assert acc["total"].epsilon == pytest.approx(1.0, rel=1e-12)
    # replace every record of a small dataset by every (label, probability) pair: the integer
    # E vector moves by <= 2K steps in L1 and O by <= 2, the sensitivities the tight budget uses
    rng = np.random.default_rng(0)
    p = np.round(rng.uniform(0, 1, 30), 3)
    y = (rng.uniform(size=30) < p).astype(float)
    cuts = np.array([0.3, 0.6])
    base = np.concatenate(hl_group_sums(y, p, cuts, 3))
    worst_e = worst_o = slack = 0.0
    for i in range(p.size):
        for yn in (0.0, 1.0):
            for pn in np.linspace(0, 1, 41):
                y2, p2 = y.copy(), p.copy()
                y2[i], p2[i] = yn, pn
                diff = np.abs(np.concatenate(hl_group_sums(y2, p2, cuts, 3)) - base)
                worst_e, worst_o = max(worst_e, diff[:6].sum()), max(worst_o, diff[6:].sum())
                # snapping the sums (K = 4) instead of the records: rounding adds slack
                sums = [
                    np.bincount(np.searchsorted(cuts, v, side="left"), weights=v, minlength=3) * 4
                    for v in (p, p2)
                ]
                slack = max(
                    slack, np.abs(np.rint(sums[1]) - np.rint(sums[0])).sum() - np.abs(sums[1] - sums[0]).sum()
                )
    assert worst_e <= 2 * HL_STEPS and worst_o <= 2
    assert worst_e > HL_STEPS  # the factor 2 is needed (record changes group)
    assert slack >= 1  # post-sum snapping would need extra steps per coordinate


def _hl_pvalues(eps, n, reps, miscalibrated=False):
    pv, chi2 = [], []
    for r in range(reps):
        g = np.random.default_rng(1000 + r)
        p = g.uniform(0.2, 0.8, n)
        y = (g.uniform(size=n) < (p**1.5 if miscalibrated else p)).astype(int)
        est = privstats.hosmer_lemeshow(y, p, epsilon=eps, bootstrap=500, rng=r)
        pv.append(est.details["p_value"])
        chi2.append(est.details["p_value_chi2"])
    return np.array(pv), np.array(chi2)


def test_hl_pvalue_is_valid_under_calibration_and_has_power():
    reps = 300
    pv, chi2 = _hl_pvalues(2.0, 5000, reps)
    tol = 5 * np.sqrt(0.1 * 0.9 / reps)
    assert abs(np.mean(pv <= 0.1) - 0.1) < tol
    assert np.mean(chi2 <= 0.1) > 0.1 + tol  # ignoring the DP noise rejects calibrated models
    pv_bad, _ = _hl_pvalues(2.0, 20000, 20, miscalibrated=True)
    assert np.mean(pv_bad <= 0.01) > 0.9


def test_hl_stderr_matches_monte_carlo_and_catches_under_noising():
    """Given the data and groups, sd of H over noise draws vs the reported bootstrap stderr.

    The stderr uses plug-in true sums (not exact); tolerance: 5 MC standard errors plus 15%."""
    g = np.random.default_rng(0)
    n = 20000
    p = g.uniform(0.2, 0.8, n)
    y = (g.uniform(size=n) < p).astype(int)
    acc = hosmer_lemeshow_accounting(2.0, 10)
    E1, E0, O1, O0 = hl_group_sums(y, p, np.quantile(p, np.arange(1, 10) / 10), 10)

    def releases(scale_factor, reps):
        out = []
        for _ in range(reps):
            ne = np.asarray(discrete_laplace(acc["scale_expected_steps"] * scale_factor, size=20, rng=g))
            no = np.asarray(discrete_laplace(acc["scale_observed"] * scale_factor, size=20, rng=g))
            out.append(
                (
                    (E1 + ne[:10]) / HL_STEPS,
                    (E0 + ne[10:]) / HL_STEPS,
                    (O1 + no[:10]) * 1.0,
                    (O0 + no[10:]) * 1.0,
                )
            )
        return out

    reps = 1500
    H = np.array([_hl_statistic(*v, 0.5) for v in releases(1, reps)])
    kurt = np.mean((H - H.mean()) ** 4) / H.var() ** 2
    sd_tol = 5 * np.sqrt((kurt - 1) / (4 * reps)) + 0.15
    se = np.array([hl_uncertainty(*v, acc, bootstrap=500, rng=i)[1] for i, v in enumerate(releases(1, 60))])
    assert abs(se.mean() / H.std(ddof=1) - 1) < sd_tol + 5 * se.std(ddof=1) / np.sqrt(se.size) / H.std()
    H_weak = np.array([_hl_statistic(*v, 0.5) for v in releases(Fraction(1, 2), reps)])
    assert abs(se.mean() / H_weak.std(ddof=1) - 1) > sd_tol


def test_hl_budget_option_changes_the_noise():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.1, 0.9, 2000)
    y = (rng.uniform(size=2000) < p).astype(int)
    tight = privstats.hosmer_lemeshow(y, p, epsilon=1.0, depth=8, budget="tight", rng=0)
    paper = privstats.hosmer_lemeshow(y, p, epsilon=1.0, depth=8, budget="paper", rng=0)
    assert tight.params["epsilon_prime"] == pytest.approx(1 / 13) and paper.params[
        "epsilon_prime"
    ] == pytest.approx(1 / 17)
    assert tight.guarantee.epsilon == pytest.approx(1.0) == paper.guarantee.epsilon
    with pytest.raises(ValueError, match="budget"):
        privstats.hosmer_lemeshow(y, p, epsilon=1.0, budget="loose")


# ---------------------------------------------------------------- quantile method choice


def test_auto_quantile_method_uses_only_public_information():
    small = np.random.default_rng(0).uniform(0, 1, 1000)
    large = np.random.default_rng(1).uniform(0, 1, 60000)
    qs = [0.25, 0.5, 0.75]

    def chosen(x, nb):
        return privstats.quantiles(x, qs, epsilon=1.0, bounds=(0, 1), neighbours=nb, rng=0).params["method"]

    # auto runs the tree whatever n (issue 26), so the private n under add/remove cannot steer it
    assert chosen(small, "replace") == chosen(large, "replace") == "tree"
    assert chosen(small, "add-remove") == chosen(large, "add-remove") == "tree"
