"""Intervals honest near the ends of the range (issue 26, item 1, the Estimate part).

The interval is built from the unclipped estimate's law and intersected with the statistic's
range; where the raw interval misses the range it is the interval at that end, so an interval
has zero width only when the stderr is 0, and clipped values are flagged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privstats
from privstats.estimate import Estimate, constrain


def _near_one(n=569, seed=7):
    g = np.random.default_rng(seed)
    y = np.tile([0, 1], n // 2 + 1)[:n]
    score = np.clip(0.5 + (2 * y - 1) * 0.2 + 0.08 * g.standard_normal(n), 0, 1)
    return y, score


def _exact_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def test_central_auc_near_one_covers_and_never_has_zero_width():
    y, s = _near_one()
    truth = _exact_auc(y, s)
    assert 0.99 < truth < 1.0
    runs, covered, clipped = 400, 0, 0
    for seed in range(runs):
        est = privstats.auc(y, s, epsilon=1.0, model="central", bounds=(0, 1), rng=seed)
        lo, hi = est.ci()
        assert est.stderr > 0 and hi - lo > 0, (seed, lo, hi, est.stderr)
        assert 0.0 <= lo <= hi <= 1.0
        covered += lo <= truth <= hi
        clipped += est.clipped
        assert est.clipped == (est.unclipped != est.value)
    assert 0.93 <= covered / runs <= 0.99, covered / runs
    assert clipped > 0  # the case the issue reports: raw values above 1 were drawn


def test_reported_case_interval_has_positive_width_at_the_end():
    est = constrain(Estimate(1.05, stderr=0.0067), 0.0, 1.0)
    lo, hi = est.ci()
    assert est.clipped and est.unclipped == 1.05 and est.value == 1.0
    assert hi == 1.0 and lo == pytest.approx(1.0 - 1.959964 * 0.0067, rel=1e-5)
    lo, hi = constrain(Estimate(-0.3, stderr=0.1), 0.0, 1.0).ci()
    assert lo == 0.0 and hi == pytest.approx(1.959964 * 0.1, rel=1e-5)


def test_interval_inside_the_range_is_the_raw_interval_intersected():
    est = constrain(Estimate(0.99, stderr=0.01), 0.0, 1.0)
    lo, hi = est.ci()
    assert not est.clipped and hi == 1.0 and lo == pytest.approx(0.99 - 1.959964 * 0.01, rel=1e-5)


def test_vector_intervals_have_positive_width_where_stderr_is_positive():
    est = constrain(Estimate(np.array([-0.5, 0.5, 1.5]), stderr=np.array([0.1, 0.1, 0.0])), 0.0, 1.0)
    lo, hi = est.ci()
    np.testing.assert_allclose(lo, [0.0, 0.5 - 0.196, 1.0], atol=1e-3)
    np.testing.assert_allclose(hi, [0.196, 0.5 + 0.196, 1.0], atol=1e-3)
    assert est.clipped and "clipped" in repr(est) and "-0.5" not in repr(est)


def test_local_auc_at_small_epsilon_has_no_zero_width_interval():
    y, s = _near_one(n=400, seed=3)
    for seed in range(20):
        est = privstats.auc(y, s, epsilon=0.5, model="local", bounds=(0, 1), rng=seed)
        lo, hi = est.ci()
        assert hi - lo > 0 or est.stderr == 0


def test_frequencies_interval_at_huge_epsilon():
    est = privstats.frequencies(np.arange(40) % 4, domain=4, epsilon=1e6, model="central", rng=1)
    lo, hi = est.ci()
    np.testing.assert_array_equal(lo, est.value)
    assert np.all(np.isfinite(hi))


def test_repr_shows_a_short_preview_of_vector_values():
    est = Estimate(np.linspace(0, 1, 50), stderr=np.full(50, 0.01))
    r = repr(est)
    assert "0.0204" in r and "..." in r and "shape=(50,)" in r and len(r) < 400


def test_to_dict_flags_clipped_values():
    assert constrain(Estimate(1.2, stderr=0.1), 0.0, 1.0).to_dict()["clipped"] is True
    assert "clipped" not in constrain(Estimate(0.2, stderr=0.1), 0.0, 1.0).to_dict()
    assert math.isfinite(constrain(Estimate(1.2, stderr=0.1), 0.0, 1.0).ci()[0])


def test_estimate_attribute_table_is_numpy_style():
    """Each attribute is ``name : type`` with an indented description (mkdocstrings renders a table)."""
    import dataclasses
    import inspect

    lines = inspect.getdoc(Estimate).split("----------\n", 1)[1].splitlines()
    names = []
    for i, line in enumerate(lines):
        if " : " in line and not line.startswith(" "):
            names.append(line.split(" : ")[0])
            assert lines[i + 1].startswith("    "), line  # description on its own indented line
    assert {f.name for f in dataclasses.fields(Estimate)} <= set(names)
