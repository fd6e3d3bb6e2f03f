"""Hierarchical histograms: consistency equals dense GLS, unbiased range queries with exact variance, roles."""

import numpy as np
import pytest
from scipy import stats

from privstats.local import HierarchicalHistogram, HierarchyState


def dense_gls(hh, n, y, sigma2):
    """Constrained GLS on the leaves: min Σ_l |y_l − A_l x|²/σ_l² subject to Σ x = n (KKT system)."""
    D, b = hh.padded_size, hh.branching
    rows, weights, obs = [], [], []
    for l in range(1, hh.height + 1):
        A_l = np.kron(np.eye(b**l), np.ones((1, D // b**l)))
        rows.append(A_l)
        weights.append(np.full(b**l, 1 / sigma2[l - 1]))
        obs.append(y[l - 1])
    A, W, yy = np.vstack(rows), np.concatenate(weights), np.concatenate(obs)
    kkt = np.block([[A.T @ (W[:, None] * A), np.ones((D, 1))], [np.ones((1, D)), np.zeros((1, 1))]])
    rhs = np.concatenate([A.T @ (W * yy), [n]])
    return np.linalg.solve(kkt, rhs)[:D], A


@pytest.mark.parametrize("d,b", [(8, 2), (9, 3), (16, 4), (6, 2)])
def test_consistency_equals_dense_gls(d, b):
    hh = HierarchicalHistogram(d, 1.0, branching=b, oracle="grr")
    rng = np.random.default_rng(3)
    sigma2 = rng.uniform(0.5, 5.0, hh.height)  # arbitrary per-level variances
    n = 100.0
    y = [rng.normal(n / b**l, 3.0, b**l) for l in range(1, hh.height + 1)]
    leaves = hh.consistent_leaves(n, y, sigma2)
    gls, A = dense_gls(hh, n, y, sigma2)
    assert np.allclose(leaves[-1], gls, atol=1e-9)
    assert np.allclose(np.concatenate(leaves), A @ gls, atol=1e-9)  # every level is consistent
    # a wrong rule (equal split of the discrepancy with unweighted bottom-up) differs
    naive = hh.consistent_leaves(n, y, np.ones(hh.height))[-1]
    if hh.height > 1:
        assert not np.allclose(naive, gls, atol=1e-6)


def test_adjoint_gives_the_linear_coefficients():
    hh = HierarchicalHistogram(27, 1.0, branching=3, oracle="hr")
    rng = np.random.default_rng(4)
    sigma2 = rng.uniform(0.5, 5.0, hh.height)
    r = (np.arange(27) >= 4) & (np.arange(27) <= 19)
    coef = hh._adjoint(50.0, r.astype(float), sigma2)
    zero = [np.zeros(3**l) for l in range(1, 4)]
    base = hh.consistent_leaves(50.0, zero, sigma2)[-1] @ r
    for _ in range(3):
        y = [rng.normal(0, 5, 3**l) for l in range(1, 4)]
        lhs = hh.consistent_leaves(50.0, y, sigma2)[-1] @ r - base
        assert lhs == pytest.approx(sum(c @ v for c, v in zip(coef, y, strict=False)), abs=1e-9)


CONFIGS = [
    dict(oracle="grr", split="users", branching=2),
    dict(oracle="oue", split="budget", branching=2),
    dict(oracle="hr", split="users", branching=4),
    dict(oracle="olh", split="budget", branching=4),
    dict(oracle="auto", split="users", branching=2),
]


@pytest.mark.parametrize("consistent", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c['oracle']}-{c['split']}-b{c['branching']}")
def test_range_query_unbiased_with_exact_variance(cfg, consistent):
    d, n, reps = 16, 4000, 1200
    hh = HierarchicalHistogram(d, 1.0, **cfg)
    counts = np.random.default_rng(0).multinomial(
        n, np.arange(1, d + 1) ** -1.2 / np.sum(np.arange(1, d + 1) ** -1.2)
    )
    lo, hi = 3, 11
    truth = counts[lo : hi + 1].sum()
    gen = np.random.default_rng(123)
    errs, variances = np.empty(reps), np.empty(reps)
    for i in range(reps):
        state = hh.simulate_counts(counts, gen)
        y = hh.node_estimates(state)
        sizes = state.level_sizes
        coef, root = hh.range_coefficients(n, lo, hi, sizes, consistent=consistent)
        if consistent:
            value = hh.consistent_leaves(n, y, hh.level_variances(n, sizes))[-1][lo : hi + 1].sum()
        else:
            value = root * n + sum(c @ v for c, v in zip(coef, y, strict=False))
        errs[i] = value - truth
        variances[i] = hh.linear_variance(counts, coef, sizes)  # exact, given the group sizes
    var = variances.mean()
    assert abs(errs.mean()) <= 4.5 * np.sqrt(var / reps)
    sq = errs**2
    assert abs(sq.mean() - var) <= 4.5 * sq.std() / np.sqrt(reps)


def test_range_query_estimate_and_consistency_gain():
    d, n = 64, 200_000
    hh = HierarchicalHistogram(d, 1.0, branching=2, oracle="oue", split="users")
    values = np.random.default_rng(1).zipf(1.5, n) % d
    state = hh.simulate(values, rng=2)
    raw = hh.range_query(state, 5, 40, consistent=False)
    cons = hh.range_query(state, 5, 40)
    truth = np.sum((values >= 5) & (values <= 40))
    for est in (raw, cons):
        assert abs(est.value - truth) < 5 * est.stderr
        assert est.guarantee.epsilon == 1.0 and est.n == n and est.model == "local"
    assert cons.stderr < raw.stderr  # least squares uses every level
    full = hh.range_query(state, 0, d - 1)
    assert full.value == pytest.approx(n) and full.stderr < 1e-6 * n


def sampling_excluded_variance(hh, counts, coef, sizes):
    old = hh.split
    hh.split = "budget"
    try:
        return hh.linear_variance(counts, coef, sizes)
    finally:
        hh.split = old


def test_split_sampling_term_is_needed():
    """With users split across levels, the oracle noise alone underestimates the MSE."""
    d, n, reps = 8, 2000, 1500
    hh = HierarchicalHistogram(d, 4.0, branching=2, oracle="grr", split="users")
    counts = np.array([900, 500, 300, 100, 100, 50, 30, 20])
    gen = np.random.default_rng(8)
    sq, v_full, v_oracle = [], [], []
    for _ in range(reps):
        state = hh.simulate_counts(counts, gen)
        y = hh.node_estimates(state)
        coef, root = hh.range_coefficients(n, 0, 2, state.level_sizes, consistent=False)
        sq.append((root * n + sum(c @ v for c, v in zip(coef, y, strict=False)) - counts[:3].sum()) ** 2)
        v_full.append(hh.linear_variance(counts, coef, state.level_sizes))
        v_oracle.append(sampling_excluded_variance(hh, counts, coef, state.level_sizes))
    sq = np.array(sq)
    se = sq.std() / np.sqrt(reps)
    assert abs(sq.mean() - np.mean(v_full)) <= 4.5 * se
    assert sq.mean() - np.mean(v_oracle) > 4.5 * se


def pooled_p(a, b):
    vals = np.union1d(a, b)
    ta = np.array([np.sum(a == v) for v in vals])
    tb = np.array([np.sum(b == v) for v in vals])
    keep = (ta + tb) >= 10
    rest = np.array([[ta[~keep].sum(), tb[~keep].sum()]]) if (~keep).any() else np.zeros((0, 2))
    table = np.vstack([np.column_stack([ta[keep], tb[keep]]), rest])
    table = table[table.sum(axis=1) > 0]
    return 1.0 if len(table) < 2 else stats.chi2_contingency(table.T, correction=False).pvalue


@pytest.mark.parametrize(
    "cfg",
    [
        dict(oracle="auto", split="users"),
        dict(oracle="olh", split="budget"),
        dict(oracle="oue", split="users", branching=3),
    ],
)
def test_simulate_matches_encode_in_distribution(cfg):
    hh = HierarchicalHistogram(9 if cfg.get("branching") == 3 else 8, 1.0, **cfg)
    values = np.repeat(np.arange(hh.domain_size), np.arange(hh.domain_size, 0, -1) * 3)
    gen = np.random.default_rng(5)
    reps = 400
    enc = [hh.aggregate(hh.encode_batch(values, rng=gen)) for _ in range(reps)]
    sim = [hh.simulate(values, rng=gen) for _ in range(reps)]
    pvals = []
    for l in range(hh.height):
        a = np.array([s.levels[l].counts for s in enc])
        b = np.array([s.levels[l].counts for s in sim])
        pvals += [pooled_p(a[:, j], b[:, j]) for j in range(a.shape[1])]
        pvals.append(pooled_p(np.array([s.levels[l].n for s in enc]), np.array([s.levels[l].n for s in sim])))
    assert min(pvals) > 1e-3 / len(pvals), sorted(pvals)[:3]


def test_state_merge_bytes_and_malformed_reports():
    hh = HierarchicalHistogram(20, 1.0, branching=2, oracle="auto", split="budget")
    values = np.random.default_rng(0).integers(0, 20, 300)
    reports = hh.encode_batch(values, rng=1)
    assert len(reports["level"]) == 300 * hh.height and hh.messages_per_user == hh.height
    whole = hh.aggregate(reports)
    half = len(reports["level"]) // 2
    a = hh.aggregate({k: v[:half] for k, v in reports.items()})
    b = hh.aggregate({k: v[half:] for k, v in reports.items()})
    assert a.merge(b) == whole and whole.n == 300
    assert HierarchyState.from_bytes(whole.to_bytes()) == whole
    with pytest.raises(ValueError):
        HierarchyState.from_bytes(whole.to_bytes()[:-1])
    before = whole.to_bytes()
    bad_level = {k: v.copy() for k, v in reports.items()}
    bad_level["level"][5] = hh.height + 1
    bad_bits = {k: v.copy() for k, v in reports.items()}
    if "bits" in bad_bits:
        bad_bits["bits"][np.flatnonzero(bad_bits["level"] == 1)[0], -1] = 255
    for bad in [bad_level, bad_bits, {"level": reports["level"]}]:
        if bad is bad_bits and "bits" not in bad:
            continue
        with pytest.raises(ValueError, match="reports"):
            hh.aggregate(bad, whole)
    assert whole.to_bytes() == before
    est = hh.estimate(whole)
    assert est.value.shape == (sum(2**l for l in range(1, hh.height + 1)),)
    assert np.all(est.stderr > 0)
    assert np.allclose(hh.estimate(whole, consistent=True).details["levels"][0].sum(), 300)


def test_bad_input_names_the_argument():
    for kwargs, name in [
        (dict(domain_size=1, epsilon=1.0), "domain_size"),
        (dict(domain_size=8, epsilon=0), "epsilon"),
        (dict(domain_size=8, epsilon=1.0, branching=1), "branching"),
        (dict(domain_size=8, epsilon=1.0, oracle="rappor"), "oracle"),
        (dict(domain_size=8, epsilon=1.0, split="levels"), "split"),
    ]:
        with pytest.raises(ValueError, match=name):
            HierarchicalHistogram(**kwargs)
    hh = HierarchicalHistogram(8, 1.0)
    for bad in [[1, float("nan")], [8], []]:
        with pytest.raises(ValueError, match="values"):
            hh.encode_batch(bad, rng=0)
        with pytest.raises(ValueError, match="values"):
            hh.simulate(bad, rng=0)
    state = hh.simulate([1, 2, 3] * 100, rng=0)
    with pytest.raises(ValueError, match="lo"):
        hh.range_query(state, -1, 3)
    with pytest.raises(ValueError, match="hi"):
        hh.range_query(state, 0, 8)
    with pytest.raises(ValueError, match="lo"):
        hh.range_query(state, 5, 3)
    with pytest.raises(ValueError, match="levels without reports"):
        hh.range_query(hh.aggregate(hh.encode_batch([1], rng=0)), 0, 3)


def test_budget_split_spends_epsilon_over_levels():
    hh = HierarchicalHistogram(64, 2.0, branching=4, oracle="grr", split="budget")
    assert hh.height == 3 and all(o.epsilon == pytest.approx(2.0 / 3) for o in hh.oracles)
    assert sum(o.epsilon for o in hh.oracles) == pytest.approx(hh.guarantee.epsilon)
    hu = HierarchicalHistogram(64, 2.0, branching=4, split="users")
    assert all(o.epsilon == 2.0 for o in hu.oracles) and hu.messages_per_user == 1
