"""The DAP release is the in-process secure release: for the same noise draws, the collector's
opening of the two noisy Prio3 aggregate shares equals ``release_in_process`` exactly, so the two
paths are equal in law (each aggregator's noise share is ``server_noise``, exact, OS CSPRNG when
``rng`` is None); and without noise both equal ``privstats.*(model="secure")``.  A quantiles task's
grid is dithered by a shift drawn when the task is made, as the in-process release draws one per call."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import privstats
from privstats.privacy.randomness import as_source
from privstats.secure.histogram import SecureSpec, noisy_statistic, release_in_process
from privstats.services.dap.dp import noisy_share, open_noisy
from privstats.services.opening import FIELD_MODULUS, open_result

P128 = 2**128 - 7 * 2**66 + 1  # Prio3Histogram's Field128


def _shares(spec, hist, seed):
    """Additive Field128 shares of ``hist`` (what the two Prio3 aggregate shares are), noised."""
    mask = [int(v) for v in np.random.default_rng(seed).integers(0, 2**63, size=spec.length)]
    leader = [(int(h) + m) % P128 for h, m in zip(hist, mask, strict=True)]
    helper = [(-m) % P128 for m in mask]
    return leader, helper


def _data(statistic, n=3000):
    rng = np.random.default_rng(1)
    x = rng.beta(2, 5, size=n)
    y = (rng.uniform(size=n) < x).astype(int) if statistic in ("roc", "hosmer_lemeshow") else None
    return x, y


@pytest.mark.parametrize(
    "statistic,method",
    [("ecdf", "binary"), ("ecdf", "auto"), ("quantiles", "auto"), ("hosmer_lemeshow", "auto")],
)
def test_dap_opening_equals_in_process_release(statistic, method):
    shift = 0.37 if statistic == "quantiles" else None  # a quantiles task's grid is dithered
    spec = SecureSpec(statistic, epsilon=1.0, bounds=(0, 1), grid=63, method=method, shift=shift)
    x, y = _data(statistic)
    hist = np.bincount(spec.cells(x, y).ravel(), minlength=spec.length)
    leader, helper = _shares(spec, hist, 2)
    src = as_source(99)
    shares = [noisy_share(spec, leader, P128, 0, rng=src), noisy_share(spec, helper, P128, 1, rng=src)]
    kw = {"q": [0.25, 0.5, 0.9]} if statistic == "quantiles" else {}
    ours = open_noisy(spec, shares[0], shares[1], P128, x.size, **kw, rng=src)
    ref = release_in_process(spec, x, y, rng=99, **kw)
    if statistic == "ecdf":
        np.testing.assert_allclose(ours.raw, ref.raw, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.stderr, ref.stderr, rtol=0, atol=1e-12)
    elif statistic == "quantiles":
        np.testing.assert_array_equal(ours.value, ref.value)
        assert ours.params["grid_shift"] == ref.params["grid_shift"] == pytest.approx(0.37 / 62)
    else:
        assert ours.details["H_plain"] == pytest.approx(ref.details["H_plain"], abs=1e-12)
        assert ours.stderr == pytest.approx(ref.stderr, abs=1e-12)
    # and a different draw gives a different release (the noise is really there)
    other = [noisy_share(spec, s, P128, p, rng=as_source(7)) for p, s in ((0, leader), (1, helper))]
    assert other[0] != shares[0]


def test_roc_opening_equals_the_integer_path():
    """The ROC's field path (two Field128 noisy shares → open_noisy) equals the opening of
    :func:`noisy_statistic` for the same draws."""
    spec = SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=31)
    x, y = _data("roc", 2000)
    hist = np.bincount(spec.cells(x, y).ravel(), minlength=spec.length)
    leader, helper = _shares(spec, hist, 3)
    src = as_source(5)
    shares = [noisy_share(spec, leader, P128, 0, rng=src), noisy_share(spec, helper, P128, 1, rng=src)]
    _, _, _, ours = open_noisy(spec, shares[0], shares[1], P128, x.size)
    noisy = noisy_statistic(spec, hist, rng=5)
    _, _, _, ref = open_result(spec, noisy % FIELD_MODULUS, np.zeros(noisy.size, np.uint64), x.size)
    assert ours.value == ref.value and ours.stderr == ref.stderr


def test_noiseless_opening_equals_the_in_process_secure_statistics():
    """At ε = 10^6 (noise 0 with overwhelming probability) the served opening equals the exact ECDF
    and privstats.ecdf/quantiles/roc_curve(model="secure"), whose stderr (the noise law) it shares."""
    x, y = _data("roc", 4000)
    spec = SecureSpec("ecdf", epsilon=1e6, bounds=(0, 1), grid=64)
    res = release_in_process(spec, x, rng=1)
    ref = privstats.ecdf(x, epsilon=1e6, bounds=(0, 1), grid=64, model="secure", rng=2)
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])
    assert np.array_equal(res.raw, ref.raw) and np.allclose(res.raw, exact, atol=1e-12)
    assert res.estimate.params["mechanism"] == ref.estimate.params["mechanism"]
    assert np.allclose(res.stderr, ref.stderr)
    # the same at ε = 1: the stderr is a function of the noise law only
    one = release_in_process(SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=64), x, rng=3)
    assert np.allclose(
        one.stderr, privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=64, model="secure").stderr
    )
    rspec = SecureSpec("roc", epsilon=1e6, bounds=(0, 1), grid=64)
    hist = np.bincount(rspec.cells(x, y).ravel(), minlength=rspec.length)
    leader, helper = _shares(rspec, hist, 4)
    shares = [noisy_share(rspec, s, P128, p, rng=as_source(6)) for p, s in ((0, leader), (1, helper))]
    _, _, _, est = open_noisy(rspec, shares[0], shares[1], P128, x.size)
    _, _, _, rref = privstats.roc_curve(y, x, epsilon=1e6, labels="private", model="secure", grid=64, rng=2)
    assert est.value == pytest.approx(rref.value, abs=1e-9)
    assert est.details["auc_raw"] == pytest.approx(rref.details["auc_raw"], abs=1e-9)
    qref = privstats.quantiles(
        x, [0.25, 0.5, 0.9], epsilon=1e6, bounds=(0, 1), grid=256, model="secure", rng=4
    )
    # the in-process release drew its grid's shift from rng; a task with that shift releases the same
    # points, and the served opening's stderr is the same release law plus the rounding's cell²/12
    qspec = SecureSpec(
        "quantiles", epsilon=1e6, bounds=(0, 1), grid=256, shift=qref.params["grid_shift"] * 255
    )
    q = release_in_process(qspec, x, rng=3, q=[0.25, 0.5, 0.9])
    assert np.allclose(q.value, qref.value, rtol=0, atol=1e-9)
    assert not np.allclose(
        q.value, release_in_process(replace(qspec, shift=None), x, q=[0.25, 0.5, 0.9]).value
    )
    hist = np.bincount(qspec.cells(x).ravel(), minlength=qspec.length)
    opened = noisy_statistic(qspec, hist, rng=3)
    served = open_result(
        qspec, opened % FIELD_MODULUS, np.zeros(opened.size, np.uint64), x.size, q=[0.25, 0.5, 0.9]
    )
    np.testing.assert_allclose(served.stderr, qref.stderr, rtol=1e-9)
    # and the same intervals: the curve's inverted band, its ends brought in on the dithered grid
    np.testing.assert_allclose(served.ci(0.95), qref.ci(0.95), rtol=0, atol=1e-9)
    assert np.all(served.stderr >= (1 - 1e-9) * qspec.cell_width / np.sqrt(12))


def test_quantiles_task_draws_its_grid_shift_once():
    """A quantiles task's shift is drawn from the OS CSPRNG when it is made (two tasks: two shifts), is
    public in its params and survives the task's JSON; the other statistics' grids are not shifted."""
    from privstats.services.dap.task import DapTask, new_dap_task
    from privstats.services.tasks import Task

    kw = {"bounds": (17, 42), "grid": 64, "epsilon": 1.0, "min_batch": 10}
    tasks = [new_dap_task("quantiles", **kw)[0] for _ in range(2)]
    shifts = [t.params["shift"] for t in tasks]
    assert shifts[0] != shifts[1] and all(0.0 <= u < 1.0 for u in shifts)
    back = DapTask.from_task(Task.from_dict(json.loads(tasks[0].to_json())))
    spec = back.spec
    assert spec.shift == shifts[0] and SecureSpec.from_dict(spec.to_dict()) == spec
    # the grid: 64 cells of 25/63 from 17 - shift·25/63, so they cover the bounds at any shift
    assert spec.bounds == (17.0, 42.0) and spec.cell_width == pytest.approx(25 / 63)
    assert spec.thresholds[0] - spec.cell_width == pytest.approx(17.0 - spec.shift * 25 / 63)
    assert spec.thresholds[-1] >= 42.0 and spec.length == 65  # the Prio3Histogram length is unchanged
    assert back.vdaf_config["length"] == 65
    with pytest.raises(ValueError, match="values"):
        spec.cells([42.5])  # clients' values are still checked against the task's bounds
    for statistic in ("ecdf", "roc", "hosmer_lemeshow"):
        t = new_dap_task(statistic, **{**kw, "bounds": (0, 1)})[0]
        assert "shift" not in t.params and DapTask.from_task(t).spec.shift is None
    with pytest.raises(ValueError, match="shift"):
        SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=8, shift=0.5)
    with pytest.raises(ValueError, match="shift"):
        SecureSpec("quantiles", epsilon=1.0, bounds=(0, 1), grid=8, shift=1.0)


def test_error_matches_the_exact_variance():
    """Σ over 30 releases of the squared standardised error at 4 grid points ~ 120 (checked at 5 SE)."""
    x = np.random.default_rng(1).beta(2, 5, 2000)
    spec = SecureSpec("ecdf", epsilon=0.5, bounds=(0, 1), grid=32)
    pts = np.array([3, 9, 15, 25])
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])[pts]
    R = 30
    z = np.array(
        [
            (r.raw[pts] - exact) / r.stderr[pts]
            for r in (release_in_process(spec, x, rng=100 + s) for s in range(R))
        ]
    )
    assert np.all(np.abs(z.mean(axis=0)) < 5 / np.sqrt(R))  # unbiased
    z2 = z**2  # each has mean 1; discrete Laplace tails make Var(z^2) > 2: bound it by the sample spread
    se = z2.std(ddof=1) / np.sqrt(z2.size)
    assert abs(z2.mean() - 1.0) < 5 * max(se, np.sqrt(2 / z2.size))


def test_inputs_are_checked():
    spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=7)
    with pytest.raises(ValueError, match="agg_share"):
        noisy_share(spec, [0] * 3, P128, 0)
    with pytest.raises(ValueError, match="hist"):
        noisy_statistic(spec, [0] * 3)
    with pytest.raises(ValueError, match="labels"):
        SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=8).cells([0.2])
    with pytest.raises(ValueError, match="values"):
        spec.cells([1.5])
    with pytest.raises(ValueError, match="statistic"):
        SecureSpec("kendall", epsilon=1.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="statistic"):
        release_in_process(SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=8), [0.2], [1])
    with pytest.raises(ValueError, match="field"):
        open_result(spec, [FIELD_MODULUS] * 8, [0] * 8, 1)


def test_served_bands_are_the_in_process_ones():
    """A served ECDF's band is the raw curve's interval met with [0, 1], widened to hold the released
    curve, as ``privstats.ecdf``'s (its Estimate had no raw centre and no range, so the band was the
    smoothed curve's and could leave [0, 1]); a served ROC carries ``curve_ci`` as ``roc_curve`` does."""
    x = np.random.default_rng(4).beta(0.3, 3.0, size=300)  # a crowd at 0: the smoothed curve is biased there
    res = release_in_process(SecureSpec("ecdf", epsilon=0.5, bounds=(0, 1), grid=64), x, rng=3)
    assert np.array_equal(res.estimate.unclipped, res.raw) and res.estimate.support == (0.0, 1.0)
    band = res.confidence_interval(0.95)
    lo, hi = res.estimate.ci(0.95)
    assert np.array_equal(band.low.probabilities, np.minimum(lo, res.probabilities))
    assert np.array_equal(band.high.probabilities, np.maximum(hi, res.probabilities))
    assert np.all(band.low.probabilities >= 0) and np.all(band.high.probabilities <= 1)
    assert np.any(np.abs(res.raw - res.probabilities) > 0.05)  # where the two centres differ

    spec = SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=31)
    x, y = _data("roc", 2000)
    noisy = noisy_statistic(spec, np.bincount(spec.cells(x, y).ravel(), minlength=spec.length), rng=5)
    fpr, tpr, _, est = open_result(spec, noisy % FIELD_MODULUS, np.zeros(noisy.size, np.uint64), x.size)
    fpr_lo, fpr_hi, tpr_lo, tpr_hi = est.details["curve_ci"](0.9)
    pos = est.details["positives"].confidence_interval(0.9)
    assert np.array_equal(tpr_lo[1:-1], 1.0 - pos.high.probabilities[::-1])
    assert np.all((fpr_lo <= fpr) & (fpr <= fpr_hi) & (tpr_lo <= tpr) & (tpr <= tpr_hi))
