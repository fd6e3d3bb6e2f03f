"""Result ranges and huge parameters (issue 26, item 7).

The harness's soundness check (``fuzz_harness.range_problem``) is exercised on its own, and the
reported leaks of huge ε and huge sizes end in named ValueErrors.
"""

from __future__ import annotations

import warnings

import fuzz_harness as H
import numpy as np
import pytest

import privstats
from privstats.estimate import Estimate, constrain


def test_range_problem_flags_values_outside_the_range_and_zero_width_intervals():
    assert H.range_problem(constrain(Estimate(1.03, stderr=0.1), 0, 1), np.asarray(1.0)) is None
    outside = Estimate(1.03, stderr=0.1, support=(0.0, 1.0))
    assert "outside" in H.range_problem(outside, np.asarray(1.03))
    zero = Estimate(0.5, stderr=0.1, details={"ci_fn": None}, support=(0.0, 1.0))
    assert H.range_problem(zero, np.asarray(0.5)) is None


@pytest.mark.parametrize("epsilon", [1e300, 1e6, 701.0])
@pytest.mark.parametrize("model", ["local", "shuffle"])
def test_huge_epsilon_for_a_randomizer_is_a_named_error(epsilon, model):
    warnings.simplefilter("ignore")
    with pytest.raises(ValueError, match="epsilon"):
        privstats.plan("frequencies", n=1000, epsilon=epsilon, delta=1e-6, domain=8, model=model)
    case = H.CASE_BY_LABEL["auc/local"]
    with pytest.raises(ValueError, match="epsilon"):
        case.call(epsilon=epsilon)


def test_huge_epsilon_central_is_sound():
    warnings.simplefilter("ignore")
    outcomes = []
    for label in ("auc/central", "frequencies/central", "quantiles/central", "ecdf/central"):
        case = H.CASE_BY_LABEL[label]
        outcomes.append(H.run_call(label, lambda c=case: c.call(epsilon=1e300), ("epsilon",)))
    assert not any(H.is_finding(o) for o in outcomes), H.FINDINGS[-4:]
