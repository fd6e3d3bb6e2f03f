"""Equal quantile levels are one release: the exponential mechanisms give them the same value."""

import numpy as np
import pytest

import privstats


@pytest.mark.parametrize("method", ["joint", "independent"])
def test_equal_levels_give_equal_values(method):
    x = np.random.default_rng(0).uniform(size=500)
    for seed in range(20):
        est = privstats.quantiles(
            x, [0.25, 0.5, 0.5, 0.25], epsilon=1.0, bounds=(0, 1), method=method, rng=seed
        )
        v = np.asarray(est.value)
        assert v[1] == v[2] and v[0] == v[3] and v[0] <= v[1]
