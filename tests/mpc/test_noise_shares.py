"""``laplace-shares``: each party adds its own full discrete Laplace inside the 2PC (no comparisons)."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.privacy.samplers import discrete_laplace
from privstats.ustat.mpc import shares_plan


@pytest.mark.parametrize("eps,units", [(1.0, 2), (0.5, 1), (4.0, 1024)])
def test_shares_plan_accounting(eps, units):
    """Pure ε per share (scale units/ε), and the variance of the sum of the two shares, from the pmf."""
    plan = shares_plan(eps, units)
    assert plan.epsilon == eps and plan.delta == 0.0 and plan.n_random == 1
    t = units / eps
    z = np.arange(-4000 * math.ceil(t), 4000 * math.ceil(t) + 1)
    pmf = np.exp(-np.abs(z) / t)
    pmf /= pmf.sum()
    assert plan.variance == pytest.approx(2 * float(np.sum(pmf * z.astype(float) ** 2)), rel=1e-9)
    assert float(plan.scale) == pytest.approx(t)


def _chi2(x, y, lo=-15, hi=15):
    bins = np.arange(lo, hi + 2) - 0.5
    hx, hy = (np.histogram(np.clip(v, lo, hi), bins)[0] for v in (x, y))
    keep = (hx + hy) > 0
    return stats.chi2_contingency(np.stack([hx[keep], hy[keep]]))[1]


def test_spu_noise_is_the_sum_of_two_discrete_laplace():
    pytest.importorskip("spu")
    from privstats.ustat.mpc import SpuTwoParty, default_session

    g = np.random.default_rng(4)
    m = 10_000
    a, b = np.round(g.normal(size=m), 1), np.round(g.normal(size=m), 1)
    be = SpuTwoParty("greater_half", pair_epsilon=1.0, mechanism="laplace-shares", session=default_session())
    noise = be.raw(a, b) - be.spec.reference(a, b)
    ref = discrete_laplace(2, size=m, rng=1) + discrete_laplace(2, size=m, rng=2)
    assert _chi2(noise, ref) > 1e-4
    assert abs(noise.mean()) < 5 * math.sqrt(be.plan.variance / m)
    assert be.noise_variance == pytest.approx(be.plan.variance * 0.25)  # grid ½
    one = discrete_laplace(2, size=m, rng=3)  # a single share (half the noise) is rejected
    assert _chi2(noise, one) < 1e-4
