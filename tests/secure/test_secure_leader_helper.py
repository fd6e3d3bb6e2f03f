"""Leader/helper protocol logic (privstats.secure.leader_helper), in process."""

from __future__ import annotations

import numpy as np
import pytest

import privstats
from privstats.secure.leader_helper import (
    BatchTotal,
    SecureAggregator,
    SecureSpec,
    decode_shares,
    encode,
    encode_vectors,
    open_result,
    run_in_process,
    verify_batch,
)


def _values(n, seed=0):
    return np.random.default_rng(seed).beta(2, 5, n)


def test_noiseless_opening_equals_the_in_process_secure_ecdf():
    x = _values(3000)
    spec = SecureSpec("ecdf", epsilon=1e6, bounds=(0, 1), grid=64)
    res = run_in_process(spec, x, rng=1)
    ref = privstats.ecdf(x, epsilon=1e6, bounds=(0, 1), grid=64, model="secure", rng=2)
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])
    assert np.array_equal(res.raw, ref.raw)
    assert np.allclose(res.raw, exact, atol=1e-12)
    assert res.estimate.params["mechanism"] == ref.estimate.params["mechanism"]
    assert np.allclose(res.stderr, ref.stderr)


def test_error_matches_the_exact_variance():
    """Σ over 30 runs of the squared standardised error at 4 grid points ~ 120 (χ²-like, checked at 5 SE)."""
    x = _values(2000, 1)
    spec = SecureSpec("ecdf", epsilon=0.5, bounds=(0, 1), grid=32)
    pts = np.array([3, 9, 15, 25])
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])[pts]
    z, R = [], 30
    for s in range(R):
        res = run_in_process(spec, x, rng=100 + s)
        z.append((res.raw[pts] - exact) / res.stderr[pts])
    z = np.asarray(z)
    assert np.all(np.abs(z.mean(axis=0)) < 5 / np.sqrt(R))  # unbiased
    z2 = z**2
    # each z^2 has mean 1; discrete Laplace tails make Var(z^2) > 2: bound it by the sample spread
    mean = z2.mean()
    se = z2.std(ddof=1) / np.sqrt(z2.size)
    assert abs(mean - 1.0) < 5 * max(se, np.sqrt(2 / z2.size))


def test_malicious_reports_are_dropped_and_counted():
    x = _values(1000, 2)
    spec = SecureSpec("ecdf", epsilon=1e6, bounds=(0, 1), grid=16)
    honest = encode(spec, x, rng=3)
    L = spec.layout.length
    bad = np.zeros((5, L), dtype=np.int64)
    bad[0, 3] = 1000  # 1000 x a one-hot
    bad[1, [2, 7]] = 1  # two ones
    bad[2, 4] = -1  # a negative entry
    bad[3, [1, 5]] = [2, -1]  # sums to one
    bad[4, :] = 1  # everything
    cheat = encode_vectors(spec, bad, rng=4)
    # a report whose two shares belong to different values
    a = encode(spec, [0.1], rng=5)[0]
    b = encode(spec, [0.9], rng=6)[0]
    mixed = type(a)(a.report_id, a.leader_share, b.helper_seed)
    reports = honest[:500] + cheat + [mixed] + honest[500:]
    res = run_in_process(spec, None, reports=reports, rng=7)
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])
    assert res.estimate.details["n_invalid"] == 6
    assert res.estimate.n == 1000
    assert np.allclose(res.raw, exact, atol=1e-9)


def test_without_the_check_a_single_cheater_moves_the_curve():
    """The attack the check stops: one report of 1000 x e_0 shifts F by ~1000/n when aggregated blindly."""
    spec = SecureSpec("ecdf", epsilon=1e6, bounds=(0, 1), grid=16)
    x = _values(1000, 3)
    reps = encode(spec, x, rng=1) + encode_vectors(
        spec, np.eye(1, spec.layout.length, 0, dtype=np.int64) * 1000, rng=2
    )
    sh0 = decode_shares(spec, [r.leader_share for r in reps], 0)
    sh1 = decode_shares(spec, [r.helper_seed for r in reps], 1)
    blind = [BatchTotal.empty(spec), BatchTotal.empty(spec)]
    for t, sh in zip(blind, (sh0, sh1), strict=True):
        t.add(sh, np.ones(len(reps), dtype=bool))
    agg = [SecureAggregator(spec, p, bytes(16), b"t") for p in (0, 1)]
    ok = verify_batch(agg[0], agg[1], [r.report_id for r in reps], sh0, sh1, b"job")
    assert ok.sum() == 1000 and not ok[-1]
    opened = open_result(spec, agg[0].partial(blind[0], rng=1), agg[1].partial(blind[1], rng=2), 1001)
    assert opened.raw[0] > np.mean(x <= spec.thresholds[0]) + 0.5  # F(τ_1) pushed up by ~1


def test_roc_and_quantiles_open_like_the_in_process_model():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 4000)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    spec = SecureSpec("roc", epsilon=1e6, bounds=(0, 1), grid=64)
    _fpr, _tpr, _thr, est = run_in_process(spec, s, y, rng=1)
    _, _, _, ref = privstats.roc_curve(y, s, epsilon=1e6, labels="private", model="secure", grid=64, rng=2)
    assert est.value == pytest.approx(ref.value, abs=1e-9)
    assert est.details["auc_raw"] == pytest.approx(ref.details["auc_raw"], abs=1e-9)
    qspec = SecureSpec("quantiles", epsilon=1e6, bounds=(0, 1), grid=256)
    q = run_in_process(qspec, s, rng=3, q=[0.25, 0.5, 0.9])
    qref = privstats.quantiles(
        s, [0.25, 0.5, 0.9], epsilon=1e6, bounds=(0, 1), grid=256, model="secure", rng=4
    )
    assert np.allclose(q.value, qref.value)


def test_roc_needs_labels_and_bad_payloads_are_refused():
    spec = SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=8)
    with pytest.raises(ValueError, match="labels"):
        encode(spec, [0.2])
    with pytest.raises(ValueError, match="values"):
        encode(SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=8), [1.5])
    with pytest.raises(ValueError, match="leader share"):
        decode_shares(spec, [b"\x00" * 7], 0)
    with pytest.raises(ValueError, match="field"):
        decode_shares(spec, [b"\xff" * (8 * spec.layout.share_length)], 0)
    with pytest.raises(ValueError, match="seed"):
        decode_shares(spec, [b"\x00" * 15], 1)
    with pytest.raises(ValueError, match="statistic"):
        SecureSpec("kendall", epsilon=1.0, bounds=(0, 1))
