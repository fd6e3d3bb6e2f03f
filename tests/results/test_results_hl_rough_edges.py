"""Hosmer–Lemeshow's rough edges (issue 26, item 8 and deliverable 4).

Before: ``hosmer_lemeshow`` took no ``bounds`` (TypeError), the secure release reported n = None
although its guarantee is replace-one (the batch size is public there, as for ``ecdf``), and an
underpowered answer (H clipped to 0, p-value 0.6) carried nothing in the result saying so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privstats
from privstats.plan import UselessResultWarning
from privstats.stats.distribution.calibration import hl_n_needed


def _calibrated(n, seed, lo=0.02, hi=0.98):
    g = np.random.default_rng(seed)
    p = g.uniform(lo, hi, n)
    return (g.uniform(size=n) < p).astype(int), p


def _hl(y, p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UselessResultWarning)
        return privstats.hosmer_lemeshow(y, p, epsilon=2.0, bootstrap=200, rng=3, **kw)


@pytest.mark.parametrize("model", ["central", "secure"])
def test_hl_bounds_default_is_unit_interval_and_narrower_bounds_are_used(model):
    y, p = _calibrated(3000, 1, 0.1, 0.9)
    plain = _hl(y, p, model=model)
    unit = _hl(y, p, model=model, bounds=(0, 1))
    assert (plain.value, plain.stderr) == (unit.value, unit.stderr)
    narrow = _hl(y, p, model=model, bounds=(0.1, 0.9))
    assert np.isfinite(narrow.value) and narrow.stderr > 0
    # the group cuts come from a grid over the bounds: the released thresholds/groups differ
    key = "thresholds" if model == "central" else "E1"
    assert not np.array_equal(np.asarray(narrow.details[key]), np.asarray(plain.details[key]))


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        ((0, 2), "bounds must lie within"),
        ((-0.5, 0.5), "bounds must lie within"),
        ((1, 0), "bounds"),
        ("x", "bounds"),
    ],
)
def test_hl_bad_bounds_name_the_argument(bounds, match):
    y, p = _calibrated(200, 2)
    with pytest.raises(ValueError, match=match):
        privstats.hosmer_lemeshow(y, p, epsilon=1.0, bounds=bounds, bootstrap=100, rng=0)


def test_hl_probabilities_outside_bounds_are_refused_not_clipped():
    y, p = _calibrated(200, 2)
    with pytest.raises(ValueError, match="y_prob: .* outside bounds"):
        privstats.hosmer_lemeshow(y, p, epsilon=1.0, bounds=(0.2, 0.8), bootstrap=100, rng=0)


def test_hl_plan_takes_bounds():
    wide = privstats.plan("hosmer_lemeshow", n=3000, epsilon=2.0, model="central")[0].stderr
    narrow = privstats.plan("hosmer_lemeshow", n=3000, epsilon=2.0, model="central", bounds=(0.4, 0.6))
    assert narrow[0].stderr > 0 and narrow[0].stderr != wide
    secure = privstats.plan("hosmer_lemeshow", n=3000, epsilon=2.0, model="secure", bounds=(0.1, 0.9))
    assert secure[0].stderr > 0
    with pytest.raises(ValueError, match="bounds"):
        privstats.plan("hosmer_lemeshow", n=3000, epsilon=2.0, model="central", bounds=(0, 3))


def test_secure_hl_reports_the_public_n_under_replace_one():
    y, p = _calibrated(1500, 4)
    est = _hl(y, p, model="secure")
    assert est.neighbours == "replace"
    assert est.n == 1500  # was None
    assert _hl(y, p, model="central").n == 1500


def test_underpowered_hl_says_so_in_the_result():
    """n = 569 at ε = 1 is below the n the test needs: the result carries that, with the warning."""
    y, p = _calibrated(569, 7)
    need = hl_n_needed(1.0, 10, 10)
    for model in ("central", "secure"):
        with pytest.warns(UselessResultWarning, match="n >= "):
            est = privstats.hosmer_lemeshow(y, p, epsilon=1.0, bootstrap=200, rng=0, model=model)
        assert est.details["underpowered"] is True
        assert est.details["n_needed"] > 569
    assert _hl(y, p).details["n_needed"] == hl_n_needed(2.0, 10, 10)
    assert need > hl_n_needed(2.0, 10, 10)
    big = hl_n_needed(8.0, 10, 10)
    y, p = _calibrated(big, 8)
    est = privstats.hosmer_lemeshow(y, p, epsilon=8.0, bootstrap=200, rng=0)
    assert est.details["underpowered"] is False


def test_clipped_hl_on_breast_cancer_is_flagged_with_an_honest_interval():
    """Breast cancer (n = 569, cross-validated logistic regression), central ε = 1: about half of the
    answers are H clipped to 0 (the debiased statistic is negative; the test has no power at this n).
    Each such answer must say so: clipped, underpowered, an interval of positive width from the
    unclipped value, and a p-value computed from the unclipped statistic (not 'calibrated' by default)."""
    from test_results_hl_small_n import _breast_cancer

    y, p = _breast_cancer()
    clipped = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UselessResultWarning)
        for r in range(20):
            est = privstats.hosmer_lemeshow(y, p, epsilon=1.0, bootstrap=200, rng=r)
            assert est.details["underpowered"] is True
            lo, hi = est.ci()
            assert hi - lo > 0 and lo <= est.value <= hi
            if est.value == 0.0:
                clipped += 1
                assert est.clipped and est.unclipped < 0
                assert 0 < est.details["p_value"] <= 1
    assert clipped >= 3  # the situation the flag is for does occur here
