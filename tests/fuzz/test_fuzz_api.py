"""Bad-input fuzzing of every public statistic × trust model (issue 18).

Each test runs enumerated bad values of every argument (NaN, ±inf, out of bounds, empty, huge Python
ints, bool/complex arrays, None in lists, ragged nesting, unknown options, tiny/huge ε, negative seeds)
plus hypothesis-drawn valid and mixed inputs.  Every call must end in a ValueError/TypeError naming the
changed argument, or a sound result (finite values, finite stderr >= 0); a per-call alarm and
pytest-timeout catch hangs.  The ``slow`` variant runs 20 times the hypothesis examples and prints the
counts (``pytest -m slow tests/fuzz -s``); the default run deselects it (see conftest.py).
"""

from __future__ import annotations

import contextlib
import warnings

import fuzz_harness as H
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LABELS = [c.label for c in H.CASES]
EXAMPLES = 4


def _bad_run(case):
    findings = []
    for arg, bad in H.bad_calls(case):
        out = H.run_call(f"{case.label} {arg}={bad!r:.60}", lambda: case.call(**{arg: bad}), (arg,))
        if H.is_finding(out):
            findings.append(H.FINDINGS[-1])
        if out == "ok" and H.must_fail(case.kinds[arg], bad):
            findings.append(f"accepted-invalid: {case.label} {arg}={bad!r:.60}")
    return findings


@pytest.mark.timeout(240)
@pytest.mark.parametrize("label", LABELS)
def test_every_bad_argument_gets_a_named_error_or_a_sound_result(label):
    warnings.simplefilter("ignore")
    case = H.CASE_BY_LABEL[label]
    assert H.run_call(label, case.call, ()) == "ok", H.FINDINGS[-1:]  # the base call is valid
    assert _bad_run(case) == []


def _valid_strategy():
    return st.fixed_dictionaries(
        {
            "n": st.integers(2, 60),
            "epsilon": st.floats(0.05, 50.0),
            "seed": st.integers(0, 2**32 - 1),
            "shape": st.sampled_from(["uniform", "ties", "edges", "constant"]),
        }
    )


def _data(d, n):
    g = np.random.default_rng(d["seed"])
    x = {
        "uniform": g.random(n),
        "ties": g.integers(0, 3, n) / 2.0,
        "edges": g.integers(0, 2, n) * 1.0,
        "constant": np.full(n, 0.5),
    }[d["shape"]]
    y = np.r_[[0, 1], g.integers(0, 2, n - 2)] if n > 2 else np.array([0, 1])
    return x, y, g


def _valid_call(case, d):
    n = d["n"]
    x, y, g = _data(d, n)
    changes: dict = {"rng": d["seed"]}
    eps = d["epsilon"]
    if "shuffle" in case.label:
        eps = max(eps, 8.0)  # shuffle accounting at small n and ε is refused (clearly) or takes seconds
    changes["epsilon"] = eps
    for arg, kind in case.kinds.items():
        if arg in case.kwargs and kind == "float_data":
            changes[arg] = x if arg != "y" else g.random(n)
        elif arg in case.kwargs and kind == "labels":
            changes[arg] = y
        elif arg in case.kwargs and kind == "int_data":
            changes[arg] = (x * 3).astype(int)
    return lambda: case.call(**changes)


def _check_valid(label, d):
    case = H.CASE_BY_LABEL[label]
    out = H.run_call(f"{label} valid {d}", _valid_call(case, d), H.arg_names(case.func))
    assert not H.is_finding(out), H.FINDINGS[-1]


def _check_mixed(label, data):
    case = H.CASE_BY_LABEL[label]
    args = sorted(case.kinds)
    picked = data.draw(st.lists(st.sampled_from(args), min_size=1, max_size=2, unique=True))
    changes = {a: data.draw(st.sampled_from(H.BAD[case.kinds[a]])) for a in picked}
    out = H.run_call(f"{label} {changes!r:.120}", lambda: case.call(**changes), tuple(picked))
    assert not H.is_finding(out), H.FINDINGS[-1]


SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("label", LABELS)
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(d=_valid_strategy())
def test_valid_inputs_give_sound_results_or_named_errors(label, d):
    warnings.simplefilter("ignore")
    _check_valid(label, d)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("label", LABELS)
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(data=st.data())
def test_combined_bad_arguments(label, data):
    warnings.simplefilter("ignore")
    _check_mixed(label, data)


# ------------------------------------------------------------------------------------------ slow, 20x
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_slow_fuzz_twenty_times_the_examples():
    """20× the default examples over every case; prints the counts for the closing note."""
    warnings.simplefilter("ignore")
    H.COUNTS.clear()
    H.FINDINGS.clear()
    accepted_invalid = []
    for case in H.CASES:
        H.run_call(case.label, case.call, ())
        accepted_invalid += [f for f in _bad_run(case) if f.startswith("accepted")]
        valid, mixed = _slow_runners(case.label)
        valid()
        mixed()
    print("\nfuzz (slow):", H.summary(), "\naccepted invalid option values:", len(accepted_invalid))
    assert not H.FINDINGS and not accepted_invalid


def _slow_runners(label):
    @settings(max_examples=20 * EXAMPLES, **SETTINGS)
    @given(d=_valid_strategy())
    def valid(d):
        case = H.CASE_BY_LABEL[label]
        H.run_call(f"{label} valid {d}", _valid_call(case, d), H.arg_names(case.func))

    @settings(max_examples=20 * EXAMPLES, **SETTINGS)
    @given(data=st.data())
    def mixed(data):
        with contextlib.suppress(AssertionError):  # counted in H.FINDINGS
            _check_mixed(label, data)

    return valid, mixed
