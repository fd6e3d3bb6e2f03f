"""Accounting of the in-circuit noise samplers (numpy only: runs in the main suite too).

The realised distributions are recomputed here from the public coins, independently of the bounds in
``laplace_plan``: every combination of coin outcomes (each coin is exactly T/2^k, which
``test_exact_comparisons`` checks on every input of its tree) goes through the circuit's own assembly
code (numpy), giving the exact law of the released noise on the cycle mod 2^(J+1).
"""

import itertools
import math

import numpy as np
import pytest

from privstats.ustat.mpc import _spec, encode_sortable, laplace_plan, rr_plan
from privstats.ustat.mpc.bits import Circuit
from privstats.ustat.mpc.circuit import assemble
from privstats.ustat.mpc.noise import NoisePlan


def realised_pmf(plan: NoisePlan) -> np.ndarray:
    """P(noise ≡ z mod 2^B) for z = 0..2^B − 1, by the circuit's assembly on every coin outcome."""
    n = len(plan.coins) + 1  # the coins, then the fair sign
    out = np.array(list(itertools.product([False, True], repeat=n)))
    c = Circuit(np)
    terms = assemble(c, [c.leaf(out[:, i]) for i in range(n - 1)], c.leaf(out[:, -1]), plan.variant)
    vals = c.run([t for _, t in terms])
    z = sum(k * v.astype(np.int64) for (k, _), v in zip(terms, vals, strict=True) if v is not None)
    probs = [T / 2**k for T, k in plan.coins] + [0.5]
    w = np.prod([np.where(out[:, i], p, 1 - p) for i, p in enumerate(probs)], axis=0)
    return np.bincount(z % 2**plan.wrap_bits, weights=w, minlength=2**plan.wrap_bits)


def worst_loss(pmf: np.ndarray, units: int) -> float:
    """max over kernel changes d ≤ units and outputs z (on the cycle) of |log P(z + d) − log P(z)|."""
    if np.any(pmf <= 0):
        return math.inf
    L = np.log(pmf)
    return max(float(np.max(np.abs(np.roll(L, -d) - L))) for d in range(1, units + 1))


def gof_pvalue(noise, z, pmf, lo, hi):
    """Chi-square goodness of fit of integer draws against an exact pmf, the tails pooled in lo / hi."""
    from scipy import stats

    pz = np.array([pmf[z <= lo].sum(), *[pmf[z == v].sum() for v in range(lo + 1, hi)], pmf[z >= hi].sum()])
    counts = np.bincount(np.clip(noise, lo, hi) - lo, minlength=hi - lo + 1)
    return stats.chisquare(counts, pz * counts.sum()).pvalue


def centred(pmf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The noise values −2^(B−1)..2^(B−1) − 1 and their probabilities (the decoding window at v = 0)."""
    half = pmf.size // 2
    return np.arange(-half, half), np.roll(pmf, half)


CASES = [(1.0, 2), (0.5, 2), (2.0, 1), (1.0, 1), (0.1, 2), (8.0, 2), (4.0, 2), (1.0, 1024)]


@pytest.mark.parametrize("eps,units", CASES)
def test_laplace_plan_realised_privacy_and_variance(eps, units):
    """Exact law of the released noise: full support on the cycle (pure DP, δ = 0), every neighbouring
    ratio within e^ε' for the plan's ε' ≤ ε (exact for units ≤ 2), and the
    plan's variance the exact one plus its wrap-error bound, within 1% of the exact discrete Laplace's
    (+¼ for the "half" variant)."""
    plan = laplace_plan(eps, units)
    pmf = realised_pmf(plan)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    loss = worst_loss(pmf, units)
    assert loss <= plan.epsilon * (1 + 1e-9) and plan.epsilon <= eps  # the accounting bounds the truth
    if units <= 2:
        assert plan.epsilon == pytest.approx(loss, rel=1e-9)  # and is the exact worst case there
    assert plan.delta == 0.0
    z, p = centred(pmf)
    mean = float(np.sum(p * z))
    assert mean == pytest.approx(plan.offset, abs=2**plan.wrap_bits * 1e-6)  # wrap errors: P ≤ 10^-6
    var = float(np.sum(p * (z - plan.offset) ** 2))
    q = math.exp(-eps / units)
    exact = 2 * q / (1 - q) ** 2 + (0.25 if plan.variant == "half" else 0.0)
    assert var <= plan.variance <= var * 1.002
    assert plan.variance <= exact * 1.01  # within 1% of the exact sampler (units = 2: can beat it)
    assert plan.variant == ("zero" if 2 * q ** (4 if units == 2 else 2) < 0.999 else "half")


@pytest.mark.parametrize("eps,units", [(1.0, 2), (0.5, 2), (1.0, 1)])
def test_laplace_check_catches_underscaled_noise(eps, units):
    """The same exact check rejects an under-noised sampler: the plan for 2ε, a top digit drawn four
    times too rarely, and a lowest digit far off."""
    assert worst_loss(realised_pmf(laplace_plan(2 * eps, units)), units) > eps * 1.5
    plan = laplace_plan(eps, units)
    coins = list(plan.coins)
    T, k = coins[-1]
    coins[-1] = (T, k + 2)  # P/4
    assert worst_loss(realised_pmf(_with(plan, coins)), units) > eps * 1.05
    coins = list(plan.coins)
    i = 1 if plan.variant == "zero" else 0
    T, k = coins[i]
    coins[i] = (T, k + 1)  # P/2
    assert worst_loss(realised_pmf(_with(plan, coins)), units) > eps * 1.05


def _with(plan: NoisePlan, coins) -> NoisePlan:
    return NoisePlan("laplace", tuple(coins), variant=plan.variant, wrap_bits=plan.wrap_bits)


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


def test_add_small_is_binary_addition_on_every_input():
    """The adder of the Laplace release: bits of (X + low + 2·high) mod 2^B on every input, B = 2..7;
    an adder that drops the carry out of bit 0 is caught by the same check."""
    from privstats.ustat.mpc.bits import add_small

    for B in range(2, 8):
        vals = np.array(list(itertools.product([False, True], repeat=B + 2)))
        c = Circuit(np)
        xs = [c.leaf(vals[:, j]) for j in range(B)]
        lo, hi = c.leaf(vals[:, B]), c.leaf(vals[:, B + 1])
        got = sum(v.astype(np.int64) << j for j, v in enumerate(c.run(add_small(c, xs, lo, hi))))
        x = sum(vals[:, j].astype(np.int64) << j for j in range(B))
        want = (x + vals[:, B] + 2 * vals[:, B + 1]) % 2**B
        assert np.array_equal(got, want)
        got_low = sum(v.astype(np.int64) << j for j, v in enumerate(c.run(add_small(c, xs, lo, None))))
        assert np.array_equal(got_low, (x + vals[:, B]) % 2**B)
        c2 = Circuit(np)  # control: no carry out of bit 0
        xs2 = [c2.leaf(vals[:, j]) for j in range(B)]
        bad = add_small(
            c2, [c2.xor(xs2[0], c2.leaf(vals[:, B])), *xs2[1:]], c2.leaf(vals[:, B] & False), None
        )
        got_bad = sum(v.astype(np.int64) << j for j, v in enumerate(c2.run(bad)))
        assert not np.array_equal(got_bad, (x + vals[:, B]) % 2**B)


@pytest.mark.parametrize("eps,units", [(1.0, 2), (0.5, 2), (0.1, 2), (1.0, 1), (2.0, 1)])
def test_released_bits_are_kernel_plus_the_assembled_noise(eps, units):
    """The SPU path releases the bits of (K + Z) mod 2^(J+1) from a boolean adder: on every coin outcome
    and every kernel value K (in binary low + 2·high, as the packed kernels give it) they equal the
    kernel plus the noise of ``assemble`` (whose exact law the privacy tests above check), so the
    released law is exactly the accounted one shifted by K."""
    from privstats.ustat.mpc.circuit import released_bits

    plan = laplace_plan(eps, units)
    n = len(plan.coins) + 1
    out = np.array(list(itertools.product([False, True], repeat=n)))
    kernels = [(0, None), (1, None)] if units == 1 else [(0, 0), (1, 0), (0, 1)]
    B = plan.wrap_bits
    for low, high in kernels:
        c = Circuit(np)
        coins, sign = [c.leaf(out[:, i]) for i in range(n - 1)], c.leaf(out[:, -1])
        terms = assemble(c, coins, sign, plan.variant)
        lo = c.leaf(np.full(len(out), bool(low)))
        hi = None if high is None else c.leaf(np.full(len(out), bool(high)))
        bits = released_bits(c, (lo, hi), terms, plan.variant)
        vals = c.run(bits + [t for _, t in terms])
        got = sum(v.astype(np.int64) << j for j, v in enumerate(vals[:B]))
        z = sum(k * v.astype(np.int64) for (k, _), v in zip(terms, vals[B:], strict=True) if v is not None)
        assert len(bits) == B
        assert np.array_equal(got, (low + 2 * (high or 0) + z) % 2**B)


def test_pack_unpack_round_trip():
    """64 pairs per word, pair p in bit p % 64 of word p // 64, for sizes off the word boundary."""
    from privstats.ustat.mpc.packed import pack, unpack, words

    g = np.random.default_rng(3)
    for m in (1, 63, 64, 65, 200, 1000):
        x = g.integers(0, 2, m).astype(bool)
        w = pack(np, x, m)
        assert w.shape == (words(m),)
        assert np.array_equal(unpack(np, w[None, :], m)[0], x.astype(np.int64))
        p = np.arange(m)
        assert np.array_equal((w[p // 64] >> (p % 64)) & 1, x)


@pytest.mark.parametrize("eps,units", CASES[:7])
def test_plan_cycle_pmf_is_the_enumerated_law(eps, units):
    """The pmf the simulated backend draws from (``NoisePlan.cycle_pmf``, from the coins' probabilities)
    is the law enumerated through the circuit's own assembly code, to rounding."""
    plan = laplace_plan(eps, units)
    assert np.allclose(plan.cycle_pmf(), realised_pmf(plan), rtol=1e-9, atol=1e-15)


def test_coin_precision_by_cost_at_eps_one():
    """AUC with ties ½ at ε = 1 (Δ = 2): the coins are chosen by cost alone (no closeness to the ideal
    law's shape is asked of digit 0), 46 coin ANDs (56 when digit 0 had to stay within 2% of q); the
    realised law is exactly ε'-DP with ε' ≤ ε and its variance within 1% of the exact discrete
    Laplace's, but its shape is measurably not the ideal discrete Laplace's (so the law tests compare
    against the realised pmf)."""
    plan = laplace_plan(1.0, 2)
    assert plan.ands == 46 and plan.epsilon <= 1.0
    q = math.exp(-0.5)
    z, p = centred(plan.cycle_pmf())
    ideal = (1 - q) / (1 + q) * q ** np.abs(z)
    assert np.max(np.abs(p / ideal - 1)) > 0.05


@pytest.mark.parametrize("eps", [1.0, 0.5])
def test_simulated_backend_draws_the_realised_law(eps):
    """``simulated_two_party``: the SPU path's exact realised law (seeded draws, chi-square goodness of
    fit at p > 10^-6 on 10^5 draws), its reported variance the plan's; the same test rejects the draws
    of the plan at 1.5ε, and the ideal discrete Laplace's pmf at the same ε is rejected as the law of the
    realised path at ε = 1 (the shapes differ)."""
    from privstats.ustat.pairs import simulated_two_party

    plan = laplace_plan(eps, 2)
    sim = simulated_two_party("greater_half", pair_epsilon=eps)
    assert sim.noise_variance == pytest.approx(plan.variance * 0.25, rel=1e-12)
    n = 100_000
    a = np.zeros(n)
    noise = np.rint((sim.compute(a, a, rng=1) - 0.0) / 0.5).astype(np.int64) - 1  # tie: kernel 1
    z, pmf = centred(plan.cycle_pmf())
    sd = math.sqrt(plan.variance)
    lo, hi = int(-4 * sd) - 1, int(4 * sd) + 1
    assert gof_pvalue(noise, z, pmf, lo, hi) > 1e-6
    weak = simulated_two_party("greater_half", pair_epsilon=1.5 * eps)
    noise_w = np.rint(weak.compute(a, a, rng=2) / 0.5).astype(np.int64) - 1
    assert gof_pvalue(noise_w, z, pmf, lo, hi) < 1e-6
    if eps == 1.0:
        q = math.exp(-eps / 2)
        ideal = (1 - q) / (1 + q) * q ** np.abs(z.astype(float))
        assert gof_pvalue(noise, z, ideal / ideal.sum(), lo, hi) < 1e-6
