"""Accounting of the in-circuit noise samplers (numpy only: runs in the main suite too).

The realised distributions are recomputed here directly from the public thresholds, independently of
the closed-form bounds in ``laplace_plan``, and checked against the stated (ε, δ) and variance.
"""

import math

import numpy as np
import pytest

from privstats.ustat.mpc import HALF, RING, _spec, encode_sortable, laplace_plan, rr_plan


def realised_pmf(plan):
    """P(Z = z) for z in [-2^J, 2^J] from the thresholds: Z = S·(1−B₀)·(1+G), G's digits independent."""
    T0, c0 = plan.thresholds[0], plan.complement[0]
    p_b0 = 1 - T0 / RING if c0 else T0 / RING  # P(B₀ = 1) = P(Z = 0)
    assert plan.thresholds[1] == HALF  # fair sign
    probs = [T / RING for T in plan.thresholds[2:]]
    J = len(probs)
    pmf_g = np.ones(1)
    for j, p in enumerate(probs):  # G = Σ 2^j bit_j: convolve digit by digit
        step = np.zeros(2 ** (j + 1))
        step[: 2**j] = pmf_g * (1 - p)
        step[2**j :] = pmf_g * p
        pmf_g = step
    mag = np.concatenate([[p_b0], (1 - p_b0) * pmf_g])  # |Z| = 0, 1, ..., 2^J
    pmf = np.concatenate([mag[:0:-1] / 2, [mag[0]], mag[1:] / 2])
    return pmf, 2**J


@pytest.mark.parametrize("eps,units", [(1.0, 2), (0.5, 2), (2.0, 1), (1.0, 1024), (0.1, 2), (8.0, 2)])
def test_laplace_plan_realised_privacy_and_variance(eps, units):
    plan = laplace_plan(eps, units)
    pmf, M = realised_pmf(plan)
    z = np.arange(-M, M + 1)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(np.sum(pmf * z.astype(float) ** 2)) == pytest.approx(plan.variance, rel=1e-9)
    ideal_q = math.exp(-eps / units)
    assert plan.variance == pytest.approx(2 * ideal_q / (1 - ideal_q) ** 2, rel=1e-4)
    worst_delta = 0.0
    for d in range(1, units + 1):  # neighbouring kernel values differ by d ≤ units grid steps
        a, b = pmf[d:], pmf[:-d]  # P(z) and P(z − d) on the common index range
        both = (a > 0) & (b > 0)
        ratio = np.max(np.abs(np.log(a[both]) - np.log(b[both])))
        assert ratio <= eps * (1 + 1e-12)  # pure ε where both outputs are possible
        excess = np.maximum(a - math.exp(eps) * b, 0).sum() + pmf[:d].sum()
        worst_delta = max(worst_delta, excess)
    assert worst_delta <= plan.delta * (1 + 1e-6) + 1e-300
    assert plan.delta < 1e-12
    assert plan.epsilon <= eps


def test_laplace_plan_catches_underscaled_noise():
    """An under-noised sampler (scale for 2ε) is caught by the same ratio check."""
    plan = laplace_plan(2.0, 2)
    pmf, _ = realised_pmf(plan)
    a, b = pmf[2:], pmf[:-2]
    both = (a > 0) & (b > 0)
    assert np.max(np.abs(np.log(a[both]) - np.log(b[both]))) > 1.0 * 1.5


def _rr_var(keep):
    """Variance of one debiased randomized-response bit, (release − (1 − keep))/(2·keep − 1)."""
    return keep * (1 - keep) / (2 * keep - 1) ** 2


@pytest.mark.parametrize("eps", [0.01, 0.1, 1.0, 3.0, 10.0])
def test_rr_plan_exact(eps):
    """The flip probability is T/2^k, the smallest multiple of 2^-k at least 1/(1+e^ε): the realised
    ε' ≤ ε; the debiased variance at the realised keep probability is within 0.5% of the exact-ε
    variance, and k is the smallest precision that achieves it (k − 1 bits miss the criterion)."""
    plan = rr_plan(eps)
    T, k = plan.thresholds[0], plan.coin_bits
    flip = 1 / (1 + math.exp(eps))
    assert (T - 1) / 2**k < flip <= T / 2**k
    realised = math.log((2**k - T) / T)
    assert realised <= eps  # realised ε' ≤ ε (rounded toward more noise)
    exact_var = _rr_var(1 - flip)
    assert _rr_var(1 - T / 2**k) <= 1.005 * exact_var
    t1 = math.ceil(flip * 2 ** (k - 1))  # one bit less precision is not enough
    assert t1 >= 2 ** (k - 2) or _rr_var(1 - t1 / 2 ** (k - 1)) > 1.005 * exact_var
    assert plan.n_bits == k  # minimal k: T is odd, so the coin reads all k bits
    assert plan.keep == 1 - T / 2**k and plan.epsilon == pytest.approx(realised, rel=1e-12)


def test_rr_plan_variance_cost_at_eps_one():
    """The documented operating point: ε = 1 needs 11 coin bits (was 15 under a 10^-4 ε criterion)."""
    plan = rr_plan(1.0)
    assert plan.coin_bits == 11 and plan.thresholds == [551]
    assert 0.9994 < plan.epsilon <= 1.0
    assert _rr_var(plan.keep) / _rr_var(math.e / (1 + math.e)) - 1 == pytest.approx(1.12e-3, rel=0.01)


def test_sortable_encoding_preserves_order_and_ties():
    g = np.random.default_rng(0)
    x = np.concatenate(
        [g.normal(size=5000) * 10.0 ** g.integers(-300, 300, 5000), [0.0, -0.0, np.inf, -np.inf]]
    )
    e = encode_sortable(x)
    o = np.argsort(x, kind="stable")
    assert np.all(np.diff(e[o]) >= 0)
    i, j = g.integers(0, x.size, (2, 20000))
    assert np.array_equal(x[i] < x[j], e[i] < e[j]) and np.array_equal(x[i] == x[j], e[i] == e[j])


def test_kernel_reference_values():
    a, b = np.array([0.1, 0.5, 0.9]), np.array([0.5, 0.5, 0.2])
    assert _spec("greater_half").reference(a, b).tolist() == [0, 1, 2]
    assert _spec("absdiff", 4).reference(a, b).tolist() == [6, 0, 11]  # |round(16a) − round(16b)|
    ab = np.stack([a, a], 1)
    assert _spec("sign_product").reference(ab, np.stack([b, 1 - b], 1)).tolist() == [2, 1, 2]
