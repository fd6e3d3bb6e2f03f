"""Leak 3: no exact private count is published.

Under ``neighbours="add-remove"`` n is private; with ``labels="private"`` so are the class
sizes.  Before the fix ``ecdf``/``quantiles`` returned the exact n (``Estimate.n``,
``to_dict()``, repr) and ``roc_curve(labels="private")`` the exact class sizes in ``details``.
The test walks every number reachable from ``to_dict()``, ``repr`` and ``details`` (nested
estimates included) and looks for the exact counts (chosen so no grid size or parameter equals them).
"""

import numpy as np
import pytest

import privstats
from privstats.cdf.result import PrivateECDF
from privstats.estimate import Estimate

N, N_POS = 1237, 611


def _numbers(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Estimate):
        yield from _numbers(obj.to_dict(), seen)
        yield from _numbers(obj.details, seen)
        yield from _numbers(obj.n, seen)
    elif isinstance(obj, PrivateECDF):
        yield from _numbers(obj.estimate, seen)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _numbers(v, seen)
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iuf":
            yield from obj.ravel().tolist()
    elif isinstance(obj, (int, float, np.integer, np.floating)) and not isinstance(obj, bool):
        yield float(obj)
    elif hasattr(obj, "__dict__"):
        yield from _numbers(vars(obj), seen)


def _exposes(est, counts) -> list[float]:
    found = [c for c in counts if any(v == c for v in _numbers(est))]
    found += [c for c in counts if f"n={c}" in repr(est)]
    return found


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, N)
    y = np.zeros(N, dtype=int)
    y[rng.permutation(N)[:N_POS]] = 1
    return x, y


@pytest.mark.parametrize("model", ["central", "secure"])
def test_ecdf_add_remove_hides_n(data, model):
    res = privstats.ecdf(
        data[0], epsilon=1.0, bounds=(0, 1), grid=64, neighbours="add-remove", model=model, rng=1
    )
    assert res.estimate.n is None
    assert _exposes(res, [N]) == []
    assert abs(res.estimate.details["noisy_n"] - N) < 200  # the noisy n the tree already released


@pytest.mark.parametrize("method", ["exponential", "independent", "joint", "tree"])
def test_quantiles_add_remove_hide_n(data, method):
    est = (
        privstats.quantiles(
            data[0],
            [0.25, 0.5],
            epsilon=1.0,
            bounds=(0, 1),
            grid=64,
            neighbours="add-remove",
            method=method,
            rng=2,
        )
        if method != "exponential"
        else privstats.quantiles(
            data[0], [0.5], epsilon=1.0, bounds=(0, 1), neighbours="add-remove", method=method, rng=2
        )
    )
    assert est.n is None and _exposes(est, [N]) == []


@pytest.mark.parametrize("model", ["central", "secure"])
def test_roc_private_labels_hide_class_sizes(data, model):
    x, y = data
    *_, est = privstats.roc_curve(
        y, x, epsilon=1.0, bounds=(0, 1), grid=64, labels="private", model=model, rng=3
    )
    assert _exposes(est, [N_POS, N - N_POS]) == []


def test_replace_neighbours_still_report_n(data):
    """n is public under replace-one: it is reported (the test above could not pass by hiding everything)."""
    res = privstats.ecdf(data[0], epsilon=1.0, bounds=(0, 1), grid=64, rng=1)
    assert res.estimate.n == N and N in _exposes(res, [N])
