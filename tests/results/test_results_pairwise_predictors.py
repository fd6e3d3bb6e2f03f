"""Planner predictors of the pairwise statistics added in issue 15 (gini_coefficient, ustatistic) and the
automatic oracle of one-sample kernels; their predicted/measured ratios are in test_results_planner."""

from __future__ import annotations

import numpy as np
import pytest

import privstats
from privstats.ustat import kernels as K
from privstats.ustat.quantized import QuantizedUStat


def test_gini_coefficient_plan_covers_every_model():
    p = privstats.plan("gini_coefficient", n=20_000, epsilon=1.0, bounds=(0, 1), warn=False)
    assert {o.model for o in p} == {"central", "secure", "local"}
    assert all(o.protocol.endswith("+mean") and o.params["mean_fraction"] == 0.5 for o in p)
    assert not privstats.plan("gini_coefficient", n=1000, epsilon=1.0, bounds=(-1, 1), warn=False)


def test_ustatistic_plan_needs_the_kernel_range_or_the_kernel():
    assert not privstats.plan("ustatistic", n=10_000, epsilon=1.0, warn=False)  # nothing public to go on
    p = privstats.plan("ustatistic", n=10_000, epsilon=1.0, kernel_range=(0, 2), warn=False)
    assert {o.model for o in p} == {"central", "secure"}
    wide = privstats.plan("ustatistic", n=10_000, epsilon=1.0, kernel_range=(0, 4), warn=False)
    assert wide.for_model("central").best.stderr == pytest.approx(2 * p.for_model("central").best.stderr)
    m = (np.add.outer(np.arange(6), np.arange(6)) >= 5).astype(float)
    local = privstats.plan("ustatistic", n=10_000, epsilon=1.0, kernel=m, model="local", warn=False).best
    assert local.params["bins"] == 6
    est = privstats.ustatistic(np.arange(10_000) % 6, m, epsilon=1.0, model="local", rng=0)
    assert est.params["oracle"] == local.params["oracle"]


def test_auto_oracle_of_one_sample_kernels_has_the_smaller_exact_variance():
    n, k = 20_000, 15
    h = np.full(k, n / k)
    var = {o: QuantizedUStat(K.GiniOperator(k), 1.0, o).conditional_variance(h) for o in ("grr", "oue")}
    x = np.random.default_rng(0).random(n)
    est = privstats.gini_mean_difference(x, epsilon=1.0, bounds=(0, 1), model="local", bins=k, rng=1)
    assert est.params["oracle"] == min(var, key=var.get)
    assert est.stderr**2 == pytest.approx(min(var.values()), rel=0.1)  # plug-in near the exact variance


@pytest.mark.parametrize("d,expected", [(8, "grr"), (64, "oue")])
def test_collision_probability_oracle_by_exact_variance(d, expected):
    """Small domains: k-RR's identity-kernel variance is 4-13x below OUE's (the generic rule took OUE)."""
    n = 20_000
    h = np.full(d, n / d)
    var = {o: QuantizedUStat(K.CollisionOperator(d), 1.0, o).conditional_variance(h) for o in ("grr", "oue")}
    assert min(var, key=var.get) == expected
    x = np.random.default_rng(0).integers(0, d, n)
    est = privstats.collision_probability(x, domain_size=d, epsilon=1.0, model="local", rng=1)
    plan = privstats.plan("collision_probability", n=n, epsilon=1.0, domain_size=d, model="local").best
    assert est.params["oracle"] == plan.params["oracle"] == expected
    assert plan.stderr**2 == pytest.approx(var[expected])
