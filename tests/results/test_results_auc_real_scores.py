"""Local AUC on real scores (issue 15): the automatic grid's mean over 40 seeded runs is within
2 SE (from the runs' spread) of the exact AUC.

Scores: logistic regression on two breast-cancer features (mean texture, mean smoothness; fixed
``random_state``), probabilities in the public bounds (0, 1); n = 569, exact AUC 0.780.  At ε = 1
the 40-run SE is about 0.011, well above the data-level spread of the pairs sharing a bin (≈ 0.005
at the chosen k = 3), so a quantisation bias of 0.02 or more is detected; the uncorrected kernel
(``smoothing="none"``, the pairs sharing a bin counted ½) is 0.05 low there, which the second
assertion shows the check catches.
"""

from __future__ import annotations

import numpy as np
import pytest

import privstats

pytest.importorskip("sklearn")


def _scores():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    d = load_breast_cancer()
    X, y = d.data[:, [1, 4]], d.target
    s = LogisticRegression(random_state=0).fit(X, y).predict_proba(X)[:, 1]
    return y, s, float(roc_auc_score(y, s))


def _runs(y, s, **kw):
    ests = [privstats.auc(y, s, epsilon=1.0, model="local", rng=1000 + r, **kw) for r in range(40)]
    v = np.array([e.details["unbiased"] for e in ests])
    return v.mean(), v.std(ddof=1) / np.sqrt(v.size), ests[0]


def test_local_auc_on_real_scores_is_unbiased_within_2_se():
    y, s, exact = _scores()
    mean, se, est = _runs(y, s)
    assert est.protocol == "ustat-quantized" and est.params.get("smoothing") == "linear"
    assert abs(mean - exact) <= 2 * se, (mean, exact, se, est.params)
    # the same grid without the linear correction: its quantisation bias is visible to this check
    plain, se_plain, _ = _runs(y, s, smoothing="none", domain_size=est.params["domain_size"])
    assert abs(plain - exact) > 2 * se_plain, (plain, exact, se_plain)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_linear_smoothing_is_exact_for_linear_class_densities(k):
    """Population check: f± = 1 ± c(2x − 1) has AUC ½ + c/3; the plain binned AUC is (AUC − ½)/k² low
    (the planner's worst case 1/(3k²) at c = 1) and the smoothed one exact."""
    from privstats.ustat import kernels as K
    from privstats.ustat.quantized import QuantizedUStat

    e = np.linspace(0, 1, k + 1)
    for c in (0.3, 1.0):
        p = np.diff(e + c * (e * e - e))  # class CDFs x ± c(x² − x)
        q = np.diff(e - c * (e * e - e))
        auc = 0.5 + c / 3
        plain = K.AUCOperator(k, "half")
        smooth = K.AUCOperator(k, "half", "linear")
        assert p @ plain.matvec(q) == pytest.approx(auc - c / 3 / k**2, abs=1e-12)
        assert p @ smooth.matvec(q) == pytest.approx(auc, abs=1e-12)
        dense = smooth.to_dense()  # the structured operator against its own dense matrix
        g = np.random.default_rng(k)
        hp, hn = g.integers(1, 60, k) * 1.0, g.integers(1, 60, k) * 1.0
        for oracle in ("grr", "oue"):
            a = QuantizedUStat(smooth, 0.7, oracle).two_sample_variance(hp, hn)
            b = QuantizedUStat(dense, 0.7, oracle).two_sample_variance(hp, hn)
            assert a == pytest.approx(b, rel=1e-10)


def test_smoothing_options_are_checked():
    y, s = np.r_[np.ones(50, int), np.zeros(50, int)], np.linspace(0, 1, 100)
    with pytest.raises(ValueError, match="smoothing"):
        privstats.auc(y, s, epsilon=1.0, model="local", smoothing="cubic", rng=0)
    with pytest.raises(ValueError, match="smoothing"):
        privstats.auc(y, s, epsilon=1.0, model="local", ties="zero", smoothing="linear", rng=0)
    with pytest.raises(ValueError, match="smoothing"):
        privstats.auc(y, s, epsilon=1.0, model="local", method="tree", smoothing="linear", rng=0)
