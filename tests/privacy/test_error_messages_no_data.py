"""Error messages never print data values (issue 22, leak 7): a log line is a release.

Each message must name the argument and the bound violated and count the offending entries; no
data value may appear in it, in any of the usual renderings (repr, str, %g, rounded).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import privstats
from privstats.validation import as_binary_labels, as_domain_values, as_float_array

# distinctive values: none of their renderings can appear in a message by accident
SECRET = [0.73519826, 0.00041337, 0.99965123, 0.61803399]


def _renderings(v) -> set[str]:
    out = {repr(v), str(v), f"{v:g}", f"{v:.3g}", f"{v:.4g}", f"{v:.5g}"}
    if isinstance(v, float):
        out |= {f"{v:.2e}", f"{v:.3e}", f"{v:.4f}"}
        if abs(v) < 1e38:
            out.add(str(np.float32(v)))
    return {s for s in out if len(s.strip("0.-e+")) >= 2}  # ignore renderings like '1' or '0.0'


def assert_no_values(message: str, values) -> None:
    for v in values:
        for r in _renderings(v):
            assert r not in message, f"message prints the data value {v!r} as {r!r}: {message}"


def test_bounds_violation_counts_without_values():
    x = [*SECRET, 1.73519826, -0.31415926, 2.2360679]
    with pytest.raises(ValueError) as exc:
        as_float_array(x, "y_score", bounds=(0.0, 0.5))
    msg = str(exc.value)
    assert msg == "y_score: 6 values outside bounds [0.0, 0.5]"  # 0.00041337 is the only one inside
    assert_no_values(msg, x)


def test_auc_api_message_names_argument_bound_and_count():
    y_true = [0, 1, 0, 1, 1, 0]
    y_score = [0.1, 0.2, 0.73519826, 0.4, 0.99965123, 0.3]
    with pytest.raises(ValueError) as exc:
        privstats.auc(y_true, y_score, epsilon=1.0, bounds=(0, 0.5), rng=0)
    msg = str(exc.value)
    assert "y_score" in msg and "2 values outside bounds [0.0, 0.5]" in msg
    assert_no_values(msg, [0.73519826, 0.99965123])


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([3, 17, 123457, 5], np.int64),
        ([3, -98765, 5], np.int64),
        ([2**63 + 12345], np.uint64),
        ([1.5e300], float),
    ],
)
def test_domain_violation_counts_without_values(values, dtype):
    arr = np.array(values, dtype=dtype)
    with pytest.raises(ValueError) as exc:
        as_domain_values(arr, 16)
    msg = str(exc.value)
    assert msg.startswith("values must be in [0, 16): ") and "outside" in msg
    assert_no_values(msg, [v for v in arr.tolist() if not 0 <= v < 16])


def test_label_errors_count_classes_without_values():
    with pytest.raises(ValueError) as exc:
        as_binary_labels([3, 3, 71, 71, 913], "y_true")
    assert "3 distinct" in str(exc.value)
    assert_no_values(str(exc.value), [71, 913])
    with pytest.raises(ValueError) as exc:
        as_binary_labels([71, 913, 71], "y_true")
    assert_no_values(str(exc.value), [71, 913])


def test_categorical_values_outside_domain_are_counted():
    with pytest.raises(ValueError) as exc:
        privstats.frequencies(["a", "b", "zorglub", "zorglub"], domain=["a", "b"], epsilon=1.0, rng=0)
    assert "2 entries not in domain" in str(exc.value) and "zorglub" not in str(exc.value)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "privstats", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_cli_estimate_auc_bounds_error_prints_no_data(tmp_path):
    rng = np.random.default_rng(5)
    label = rng.integers(0, 2, 200)
    score = np.round(rng.uniform(0, 1, 200), 8)
    path = tmp_path / "d.csv"
    path.write_text(
        "label,score\n" + "".join(f"{a},{float(b)!r}\n" for a, b in zip(label, score, strict=True))
    )
    proc = _cli("estimate", "auc", "--input", path, "--column", "score", "--label", "label",
                "--bounds", 0, 0.5, "--epsilon", 1)  # fmt: skip
    assert proc.returncode != 0
    outside = int(np.count_nonzero(score > 0.5))
    assert f"y_score: {outside} values outside bounds [0.0, 0.5]" in proc.stderr
    assert_no_values(proc.stderr + proc.stdout, [float(v) for v in score])


def test_cli_text_cells_and_categories_are_counted(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,city,label\n0.25,paris,yes\nsecret-cell,lyon,no\n0.5,atlantis,maybe-secret\n")
    bad_number = _cli("estimate", "ecdf", "--input", path, "--column", "x", "--bounds", 0, 1, "--epsilon", 1)
    assert bad_number.returncode != 0 and "1 entries are not numbers" in bad_number.stderr
    assert "secret-cell" not in bad_number.stderr
    bad_cat = _cli("estimate", "frequencies", "--input", path, "--column", "city",
                   "--categories", "paris,lyon", "--epsilon", 1)  # fmt: skip
    assert bad_cat.returncode != 0 and "1 entries not in the list" in bad_cat.stderr
    assert "atlantis" not in bad_cat.stderr
