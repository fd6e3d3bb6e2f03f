"""Estimate and guarantee value types."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from privstats import Estimate
from privstats.local import CountState
from privstats.privacy import ZCDP, ApproxDP, PureDP, guarantee_from_dict


def test_ci_uses_normal_quantile():
    e = Estimate(2.0, stderr=0.5, guarantee=PureDP(1.0), model="central", protocol="x", n=10)
    lo, hi = e.ci(0.9)
    z = stats.norm.ppf(0.95)
    assert lo == pytest.approx(2.0 - z * 0.5) and hi == pytest.approx(2.0 + z * 0.5)
    vec = Estimate(np.array([1.0, 2.0]), stderr=np.array([0.1, 0.2]), guarantee=PureDP(1.0))
    lo, hi = vec.ci()
    assert lo.shape == (2,) and hi[1] > hi[0]


def test_ci_errors():
    with pytest.raises(ValueError, match="no standard error"):
        Estimate(1.0).ci()
    with pytest.raises(ValueError, match="level"):
        Estimate(1.0, stderr=1.0).ci(1.5)
    with pytest.raises(ValueError, match="model"):
        Estimate(1.0, model="trusted")


def test_estimate_json_round_trip_of_guarantee():
    e = Estimate(
        np.arange(3.0),
        stderr=np.ones(3),
        guarantee=ApproxDP(1.0, 1e-6),
        model="shuffle",
        protocol="p",
        params={"k": np.int64(3)},
        n=5,
        messages_per_user=2.0,
        bits_per_user=40.0,
    )
    d = json.loads(e.to_json())
    assert d["value"] == [0.0, 1.0, 2.0] and d["params"]["k"] == 3
    assert guarantee_from_dict(d["guarantee"]) == ApproxDP(1.0, 1e-6)
    assert e.epsilon == 1.0 and e.delta == 1e-6


def test_guarantee_validation_and_order():
    with pytest.raises(ValueError, match="epsilon"):
        PureDP(-1.0)
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(1.0, 1.0)
    with pytest.raises(ValueError, match="rho"):
        ZCDP(math.nan)
    assert PureDP(0.5) <= ApproxDP(0.5, 1e-9)
    assert not ApproxDP(0.5, 1e-5) <= PureDP(0.5)
    with pytest.raises(TypeError):
        ZCDP(0.1) <= PureDP(1.0)


def test_zcdp_conversion_closed_form():
    rho, delta = 0.5, 1e-6
    # never looser than Bun–Steinke's closed form, and at least the exact Gaussian-mechanism ε
    bun_steinke = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    eps = ZCDP(rho).to_approx(delta).epsilon
    assert eps <= bun_steinke and eps > 0.8 * bun_steinke
    with pytest.raises(ValueError, match="delta"):
        ZCDP(rho).to_approx()


def test_count_state_serialization_rejects_corruption():
    s = CountState("grr", {"domain_size": 3, "epsilon": 1.0}, 4, np.array([1, 2, 1]))
    blob = s.to_bytes()
    assert CountState.from_bytes(blob) == s
    with pytest.raises(ValueError, match="magic"):
        CountState.from_bytes(b"XXXX" + blob[4:])
    with pytest.raises(ValueError, match="truncated"):
        CountState.from_bytes(blob[:-3])
    with pytest.raises(ValueError, match="different protocols"):
        s.merge(CountState("oue", s.params, 0, np.zeros(3, dtype=np.int64)))
    merged = s.merge(s)
    assert merged.n == 8 and merged.counts.tolist() == [2, 4, 2] and s.n == 4
