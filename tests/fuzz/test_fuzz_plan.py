"""Bad-input fuzzing of :func:`privstats.plan` (issue 26, item 7).

Every public parameter and every option a predictor reads gets each bad value of its kind; a
plan ends in a ValueError/TypeError naming the argument, or a sound plan (every option's
predicted stderr and bias finite and >= 0), within the hang alarm.
"""

from __future__ import annotations

import warnings

import fuzz_harness as H
import numpy as np
import pytest
from plan_cases import COMMON, PLAN_CASES, plan_call, plan_problem

import privstats


@pytest.mark.timeout(600)
@pytest.mark.parametrize("statistic", sorted(PLAN_CASES))
def test_plan_bad_arguments_get_named_errors_or_sound_plans(statistic):
    warnings.simplefilter("ignore")
    _, kinds = PLAN_CASES[statistic]
    assert H.run_call(statistic, lambda: plan_call(statistic), (), check=plan_problem) == "ok"
    findings = []
    for arg, kind in {**COMMON, **kinds}.items():
        for bad in H.BAD[kind]:
            label = f"plan {statistic} {arg}={bad!r:.50}"
            out = H.run_call(label, lambda: plan_call(statistic, **{arg: bad}), (arg,), check=plan_problem)
            if H.is_finding(out):
                findings.append(H.FINDINGS[-1])
    assert findings == []


@pytest.mark.timeout(120)  # before issue 26, plan('frequencies', n=10**12) ran for hours
@pytest.mark.parametrize(
    ("statistic", "changes", "named"),
    [
        ("quantiles", {"bounds": (1, 0)}, "bounds"),
        ("quantiles", {"bounds": (0.5, 0.5)}, "bounds"),
        ("quantiles", {"q": [1.5]}, "q"),
        ("quantiles", {"q": []}, "q"),
        ("heavy_hitters", {"domain": 2**40}, "domain"),
        ("range_counts", {"domain": 2**40}, "domain"),
        ("frequencies", {"n": 10**12}, "n"),
        ("hosmer_lemeshow", {"groups": 0}, "groups"),
    ],
)
def test_plan_reported_bad_inputs_are_named_value_errors(statistic, changes, named):
    with pytest.raises(ValueError, match=named):
        plan_call(statistic, **changes)


def test_plan_accepts_numpy_integers_and_none_options():
    p = plan_call("frequencies", domain=np.int64(64), n=np.int64(1000))
    assert len(p) and all(o.stderr >= 0 for o in p)
    assert len(plan_call("ecdf", grid=None)) == len(plan_call("ecdf"))


def test_plan_huge_epsilon_keeps_the_models_that_can_run():
    p = privstats.plan("frequencies", n=1000, epsilon=1e6, domain=8, warn=False)
    assert [o.model for o in p] == ["central"]
    assert plan_problem(p) is None


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("statistic", "option", "value"),
    [
        ("ecdf", "grid", 1 << 24),
        ("roc_curve", "grid", 1 << 14),
        ("range_counts", "domain", 1 << 24),
        ("heavy_hitters", "domain", 1 << 28),
        ("hosmer_lemeshow", "depth", 16),
    ],
)
def test_plan_refuses_sizes_whose_prediction_would_hang(statistic, option, value):
    """Valid-looking sizes whose prediction ran for minutes (or asked for 32 GiB) are refused, named."""
    with pytest.raises(ValueError, match=option):
        plan_call(statistic, **{option: value})
