"""Unbiasedness and exact variance by Monte Carlo; simulate vs per-user encode + aggregate in distribution."""

import math

import numpy as np
import pytest
from scipy import stats

from privstats.local import GRR, OLH, OUE, BinaryRR, HadamardResponse, linear_variance

MAKERS = {
    "grr": lambda: GRR(6, 1.0),
    "binary-rr": lambda: BinaryRR(0.8),
    "oue": lambda: OUE(6, 1.0),
    "olh": lambda: OLH(6, 1.5),
    "olh-g2": lambda: OLH(6, 0.7, g=2),
    "hr": lambda: HadamardResponse(6, 1.0),
}


def true_counts_for(oracle, n):
    w = np.arange(oracle.domain_size, 0, -1, dtype=float)
    c = np.floor(n * w / w.sum()).astype(np.int64)
    c[0] += n - c.sum()
    return c


def z_bonferroni(k, alpha=1e-3):
    return stats.norm.ppf(1 - alpha / (2 * k))


@pytest.mark.parametrize("name", MAKERS)
def test_unbiased_with_exact_variance(name):
    oracle = MAKERS[name]()
    n, reps = 3000, 3000
    c = true_counts_for(oracle, n)
    gen = np.random.default_rng(2024)
    est = np.array([oracle.estimate(oracle.simulate_counts(c, gen)).value for _ in range(reps)])
    var = oracle.variance(n, c)
    z = z_bonferroni(2 * oracle.domain_size)
    assert np.all(np.abs(est.mean(axis=0) - c) <= z * np.sqrt(var / reps))
    # sample variance: standard error from the fourth central moment
    centred = est - c
    m4 = np.mean(centred**4, axis=0)
    se_var = np.sqrt(np.maximum(m4 - var**2, 0) / reps)
    assert np.all(np.abs(np.mean(centred**2, axis=0) - var) <= z * se_var)


def test_wrong_variance_formula_is_caught():
    """The same check rejects a variance formula off by 10%."""
    oracle = OUE(6, 1.0)
    n, reps = 3000, 3000
    c = true_counts_for(oracle, n)
    gen = np.random.default_rng(2024)
    est = np.array([oracle.estimate(oracle.simulate_counts(c, gen)).value for _ in range(reps)])
    wrong = 1.1 * oracle.variance(n, c)
    centred = est - c
    se_var = np.sqrt((np.mean(centred**4, axis=0) - wrong**2).clip(0) / reps)
    assert np.any(np.abs(np.mean(centred**2, axis=0) - wrong) > z_bonferroni(12) * se_var)


@pytest.mark.parametrize("name", ["grr", "oue", "olh", "hr"])
def test_linear_variance_includes_covariances(name):
    """Var(Σ w_v n̂_v) by Monte Carlo against linear_variance (GRR and HR have item covariances)."""
    oracle = MAKERS[name]()
    n, reps = 3000, 4000
    c = true_counts_for(oracle, n)
    # weights chosen so HR's structured pair (1,2) ⊕-combines to row 3 = value 2 + 1
    w = np.array([1.0, 1.0, 1.0, 0.0, -0.5, 2.0])
    gen = np.random.default_rng(7)
    est = np.array([oracle.estimate(oracle.simulate_counts(c, gen)).value for _ in range(reps)])
    s = est @ w - c @ w
    var = linear_variance(oracle, c, w)
    se_var = np.sqrt(max(np.mean(s**4) - var**2, 0) / reps)
    assert abs(np.mean(s**2) - var) <= 4.5 * se_var
    naive = np.sum(w**2 * oracle.variance(n, c))
    if name in ("grr", "hr"):
        assert abs(naive - var) > 4.5 * se_var  # ignoring the covariances would be detected


def pooled_chi2_pvalue(a, b, min_count=10):
    """Two-sample chi-square on integer samples, tail bins pooled until every bin has min_count."""
    lo = min(a.min(), b.min())
    ca = np.bincount(a - lo)
    cb = np.bincount(b - lo, minlength=ca.size)
    ca = np.pad(ca, (0, cb.size - ca.size))
    acc_a, acc_b, table = 0, 0, []
    for x, y in zip(ca, cb, strict=False):
        acc_a, acc_b = acc_a + x, acc_b + y
        if acc_a + acc_b >= min_count:
            table.append((acc_a, acc_b))
            acc_a = acc_b = 0
    if table and (acc_a or acc_b):
        table[-1] = (table[-1][0] + acc_a, table[-1][1] + acc_b)
    table = np.array(table)
    if table.shape[0] < 2:
        return 1.0
    return stats.chi2_contingency(table.T, correction=False).pvalue


def encoded_counts(oracle, values, reps, gen):
    """reps independent runs of per-user encode_batch + aggregate."""
    out = []
    for _ in range(reps):
        out.append(oracle.aggregate(oracle.encode_batch(values, rng=gen)).counts)
    return np.array(out)


def simulated_counts(oracle, values, reps, gen, simulate=None):
    sim = simulate or oracle.simulate
    return np.array([sim(values, rng=gen).counts for _ in range(reps)])


def all_items_agree(a, b):
    k = a.shape[1]
    pvals = [pooled_chi2_pvalue(a[:, j], b[:, j]) for j in range(k)]
    return min(pvals) > 1e-3 / k, pvals


@pytest.mark.parametrize("name", MAKERS)
def test_simulate_matches_encode_in_distribution(name):
    oracle = MAKERS[name]()
    values = np.repeat(np.arange(oracle.domain_size), np.arange(oracle.domain_size, 0, -1) * 4)
    gen = np.random.default_rng(99)
    enc = encoded_counts(oracle, values, 600, gen)
    sim = simulated_counts(oracle, values, 600, gen)
    ok, pvals = all_items_agree(enc, sim)
    assert ok, pvals
    # sums over pairs of items too (joint structure, e.g. OLH's independence across items)
    k = enc.shape[1]
    ok_pairs, pvals = all_items_agree(enc[:, :-1] + enc[:, 1:], sim[:, :-1] + sim[:, 1:])
    assert ok_pairs or k < 2, pvals


def test_wrong_simulation_is_caught():
    """The same two-sample test rejects an OUE simulation that keeps the own bit w.p. 0.6."""
    oracle = OUE(6, 1.0)
    values = np.repeat(np.arange(6), np.arange(6, 0, -1) * 4)
    gen = np.random.default_rng(99)

    def wrong(v, rng):
        c = np.bincount(v, minlength=6)
        counts = rng.binomial(c, 0.6) + rng.binomial(c.sum() - c, oracle.q)
        return oracle.new_state().merge(
            type(oracle.new_state())(oracle.name, oracle.params, int(c.sum()), counts)
        )

    enc = encoded_counts(oracle, values, 600, gen)
    sim = simulated_counts(oracle, values, 600, gen, simulate=wrong)
    ok, _ = all_items_agree(enc, sim)
    assert not ok


def test_olh_aggregate_equals_naive_support_count():
    oracle = OLH(37, 1.0)
    reports = oracle.encode_batch(np.random.default_rng(1).integers(0, 37, 3001), rng=2)
    from privstats.local.olh import olh_hash

    naive = [(olh_hash(reports["seed"], v, oracle.g) == reports["bucket"]).sum() for v in range(37)]
    assert np.array_equal(oracle.aggregate(reports).counts, naive)


def test_oue_aggregate_equals_unpacked_column_sums():
    oracle = OUE(21, 1.0)
    reports = oracle.encode_batch(np.random.default_rng(1).integers(0, 21, 5000), rng=2)
    bits = np.unpackbits(reports["bits"], axis=1, count=21, bitorder="little")
    assert np.array_equal(oracle.aggregate(reports).counts, bits.sum(axis=0))


def test_hr_estimate_equals_direct_parity_sums():
    oracle = HadamardResponse(11, 1.0)
    state = oracle.aggregate(oracle.encode_batch(np.arange(11).repeat(50), rng=3))
    j = np.arange(oracle.K)
    direct = np.array(
        [state.counts[(np.array([bin((v + 1) & x).count("1") for x in j]) % 2) == 0].sum() for v in range(11)]
    )
    expected = (direct - state.n / 2) / (oracle.p - 0.5)
    assert np.allclose(oracle.estimate(state).value, expected)
    assert math.isclose(oracle.variance(100, np.array([0.0]))[0], 25 / (oracle.p - 0.5) ** 2)
