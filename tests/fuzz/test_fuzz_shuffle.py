"""Bad-input fuzzing of the shuffle protocol classes (issue 26, deliverable 6).

Each class is constructed with every bad value of every argument, then simulates (the
vectorized path) and estimates; the base call also runs the client path (encode → aggregate).
Findings listed in ``shuffle_cases.KNOWN`` belong to privstats/shuffle/* and are reported to its
owner; any other finding fails the test (the harness checks results for range too).
"""

from __future__ import annotations

import warnings

import fuzz_harness as H
import pytest
from shuffle_cases import NAMES, SHUFFLE_CASES, known, shuffle_call


@pytest.mark.parametrize("label", sorted(SHUFFLE_CASES))
@pytest.mark.parametrize("path", ["simulate", "encode"])
def test_shuffle_base_calls_are_sound(label, path):
    warnings.simplefilter("ignore")
    assert H.run_call(label, lambda: shuffle_call(label, path), ()) == "ok", H.FINDINGS[-1:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("label", sorted(SHUFFLE_CASES))
def test_shuffle_bad_arguments_get_named_errors_or_sound_results(label):
    warnings.simplefilter("ignore")
    _, _, kinds = SHUFFLE_CASES[label]
    findings = []
    for arg, kind in kinds.items():
        for bad in H.BAD[kind]:
            names = NAMES.get(arg, (arg,))
            out = H.run_call(f"{label} {arg}={bad!r:.50}", lambda: shuffle_call(label, **{arg: bad}), names)
            if H.is_finding(out) and not known(label, arg, bad):
                findings.append(H.FINDINGS[-1])
    assert findings == []
