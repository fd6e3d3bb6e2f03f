"""Two-server validity check of one-hot contributions (privstats.secure.validity)."""

from __future__ import annotations

import numpy as np
import pytest

from privstats.secure.validity import (
    FIELD,
    P61,
    Field61,
    OneHotLayout,
    SmallField,
    check_value,
    decide,
    joint_randomness,
    prepare,
    share_contributions,
    soundness_error,
    validate_shares,
)

KEY = bytes(range(16))
TASK = b"task-validity"


def _ids(n: int, seed: int = 0) -> list[bytes]:
    raw = np.random.default_rng(seed).integers(0, 256, size=(n, 16), dtype=np.uint8)
    return [bytes(r) for r in raw]


def _run(x, layout, *, seed=0, field=FIELD, square_error=None, ids=None):
    s0, s1 = share_contributions(x, layout, rng=seed, field=field, square_error=square_error)
    ids = _ids(len(x), seed + 1) if ids is None else ids
    return validate_shares(s0, s1, layout, KEY, TASK, ids, field=field)


def test_field_arithmetic_matches_python_integers():
    rng = np.random.default_rng(3)
    a = rng.integers(0, P61, 20_000, dtype=np.uint64)
    b = rng.integers(0, P61, 20_000, dtype=np.uint64)
    a[:4] = [P61 - 1, P61 - 1, 0, 1]
    b[:4] = [P61 - 1, 1, P61 - 1, P61 - 1]
    assert Field61.mul(a, b).tolist() == [(int(x) * int(y)) % P61 for x, y in zip(a, b, strict=False)]
    assert Field61.add(a, b).tolist() == [(int(x) + int(y)) % P61 for x, y in zip(a, b, strict=False)]
    assert Field61.sub(a, b).tolist() == [(int(x) - int(y)) % P61 for x, y in zip(a, b, strict=False)]
    m = rng.integers(0, P61, (5, 3000), dtype=np.uint64)
    m[0] = P61 - 1
    d = Field61.dot(m, m)
    assert d.tolist() == [sum(int(v) ** 2 for v in row) % P61 for row in m]
    assert Field61.to_int64(Field61.from_int64(np.array([-5, 0, 7]))).tolist() == [-5, 0, 7]


def test_honest_one_hot_reports_are_accepted():
    layout = OneHotLayout((1025,))
    cells = np.random.default_rng(0).integers(0, 1025, size=(2000, 1))
    ok = _run(layout.one_hot(cells), layout)
    assert ok.all()
    multi = OneHotLayout((5, 40, 3))
    cells = np.column_stack([np.random.default_rng(1).integers(0, s, 500) for s in multi.sizes])
    assert _run(multi.one_hot(cells), multi).all()


@pytest.mark.parametrize(
    "kind", ["thousand", "two_ones", "negative", "zero", "two_minus_one", "all_ones", "half", "p_minus_one"]
)
def test_invalid_contributions_are_rejected(kind):
    layout = OneHotLayout((64,))
    B = 300
    x = np.zeros((B, 64), dtype=np.int64)
    r = np.arange(B)
    i = r % 64
    j = (r * 7 + 3) % 64
    j = np.where(j == i, (j + 1) % 64, j)
    if kind == "thousand":
        x[r, i] = 1000
    elif kind == "two_ones":
        x[r, i] = 1
        x[r, j] = 1
    elif kind == "negative":
        x[r, i] = -1
    elif kind == "zero":
        pass
    elif kind == "two_minus_one":  # sums to 1: only the quadratic check catches it
        x[r, i] = 2
        x[r, j] = -1
    elif kind == "all_ones":
        x[:] = 1
    elif kind == "half":  # 2^-1 in F_p twice: sum 1, entries not bits
        x[r, i] = (P61 + 1) // 2
        x[r, j] = (P61 + 1) // 2
    else:
        x[r, i] = P61 - 1
        x[r, j] = 2
    assert not _run(x, layout).any()


def test_cheating_square_pair_cannot_rescue_an_invalid_report():
    layout = OneHotLayout((16,))
    B = 500
    x = np.zeros((B, 16), dtype=np.int64)
    x[:, 3] = 2
    x[:, 5] = -1  # P(t) = 2t^3 - t^5: P^2 - P(t^2) has no constant term
    for delta in (-2, 2, 1, -1, 12345):
        assert not _run(x, layout, square_error=delta).any()
    honest = layout.one_hot(np.full((B, 1), 4))
    assert not _run(honest, layout, square_error=7).any()  # a bad pair only hurts its own client


def test_shares_of_different_values_are_rejected():
    layout = OneHotLayout((32,))
    B = 400
    a0, _ = share_contributions(layout.one_hot(np.full((B, 1), 3)), layout, rng=5)
    _, b1 = share_contributions(layout.one_hot(np.full((B, 1), 9)), layout, rng=6)
    ok = validate_shares(a0, b1, layout, KEY, TASK, _ids(B))
    assert not ok.any()
    # and the matching pairs are fine
    c0, c1 = share_contributions(layout.one_hot(np.full((B, 1), 9)), layout, rng=6)
    assert validate_shares(c0, c1, layout, KEY, TASK, _ids(B)).all()


def test_challenge_depends_on_secret_key_and_report_id():
    ids = _ids(4)
    r1 = joint_randomness(KEY, TASK, ids, 2)
    r2 = joint_randomness(bytes(16), TASK, ids, 2)
    r3 = joint_randomness(KEY, b"other-task", ids, 2)
    assert r1.t != r2.t and r1.t != r3.t
    assert not np.array_equal(r1.lam, r2.lam) and not np.array_equal(r1.lam, r3.lam)
    assert len(set(r1.lam[:, 0].tolist())) == 4  # per report
    assert joint_randomness(KEY, TASK, ids, 2, job_id=b"job-2").t != r1.t  # per verification job
    assert np.array_equal(joint_randomness(KEY, TASK, ids, 2).lam, r1.lam)
    with pytest.raises(ValueError, match="report_ids"):
        joint_randomness(KEY, TASK, [b"short"], 1)
    with pytest.raises(ValueError, match="verify_key"):
        joint_randomness(b"k", TASK, ids, 1)


def test_messages_reveal_nothing_but_uniform_values_for_honest_reports():
    """d = z - a is uniform; the W shares of an honest report are negatives of each other."""
    layout = OneHotLayout((8,))
    B = 4000
    x = layout.one_hot(np.zeros((B, 1), dtype=np.int64))  # every client in cell 0
    s0, s1 = share_contributions(x, layout, rng=11)
    rand = joint_randomness(KEY, TASK, _ids(B, 2), 1)
    st0, st1 = prepare(s0, 0, layout, rand), prepare(s1, 1, layout, rand)
    d = FIELD.add(st0.d_share, st1.d_share)[:, 0]
    top = (d >> np.uint64(58)).astype(np.int64)  # 8 equiprobable buckets if uniform
    counts = np.bincount(top, minlength=8)
    expected = B * np.array([1] * 7 + [1]) / 8
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    w0, w1 = check_value(st0, st1.d_share), check_value(st1, st0.d_share)
    assert np.array_equal(FIELD.neg(w0), w1)


def _small_acceptance(q, x, square_error, trials, seed, per_job=4):
    """Acceptance rate over ``trials`` reports spread over trials/per_job jobs (t is drawn per job)."""
    f = SmallField(q)
    layout = OneHotLayout((x.size,))
    xs = np.repeat(x[None, :], trials, axis=0)
    s0, s1 = share_contributions(xs, layout, rng=seed, field=f, square_error=square_error)
    ids = _ids(trials, seed + 1)
    ok = [
        validate_shares(
            s0[i : i + per_job],
            s1[i : i + per_job],
            layout,
            KEY,
            TASK,
            ids[i : i + per_job],
            field=f,
            job_id=i.to_bytes(8, "little"),
        )
        for i in range(0, trials, per_job)
    ]
    return float(np.concatenate(ok).mean()), layout


@pytest.mark.parametrize(
    "x, delta",
    [([0, 2, -1], 0), ([0, 2, -1], 5), ([1, 1, -1], 0), ([3, 0, 0], 0), ([0, 1, 1], 0), ([5, -4, 0], 3)],
)
def test_soundness_bound_holds_in_a_small_field(x, delta):
    """Over F_101 the bound (2N - 1)/q = 5/101 is observable; the observed rate must stay under it."""
    q, trials = 101, 20_000
    rate, layout = _small_acceptance(q, np.asarray(x, dtype=np.int64), delta, trials, seed=len(x) + delta)
    bound = soundness_error(layout, p=q)
    assert bound == pytest.approx(5 / 101)
    assert rate <= bound + 5 * np.sqrt(bound * (1 - bound) / trials)


def test_small_field_cheater_does_get_through_sometimes():
    """The check is probabilistic: in F_101 some invalid reports pass, at a rate well above 0 —
    the bound is not vacuous, and the 2^61 field is what makes it negligible."""
    q, trials = 101, 20_000
    rate, _ = _small_acceptance(q, np.array([0, 2, -1]), 0, trials, seed=9)
    assert rate > 1 / q / 4


def test_an_under_powered_check_is_caught():
    """Without the multiplication check (sum test only) 2·e_i - e_j would pass: the quadratic term matters."""
    layout = OneHotLayout((16,))
    x = np.zeros((200, 16), dtype=np.int64)
    x[:, 2], x[:, 7] = 2, -1
    s0, s1 = share_contributions(x, layout, rng=1)
    rand = joint_randomness(KEY, TASK, _ids(200), 1)
    st0, st1 = prepare(s0, 0, layout, rand), prepare(s1, 1, layout, rand)
    sums = FIELD.sub(FIELD.add(st0.sums, st1.sums), np.uint64(1))
    assert np.all(sums == 0)  # a sum-only check passes them all
    assert not decide(check_value(st0, st1.d_share), check_value(st1, st0.d_share)).any()


def test_bad_arguments():
    with pytest.raises(ValueError, match="sizes"):
        OneHotLayout(())
    layout = OneHotLayout((4,))
    with pytest.raises(ValueError, match="cells"):
        layout.one_hot(np.array([[4]]))
    with pytest.raises(ValueError, match="shape"):
        share_contributions(np.zeros((2, 3)), layout)
    with pytest.raises(ValueError, match="party"):
        prepare(np.zeros((1, 6), dtype=np.uint64), 2, layout, joint_randomness(KEY, TASK, _ids(1), 1))
    with pytest.raises(ValueError, match="q must"):
        SmallField(1 << 40)
