"""Issue 18 reproducers and the non-statistic surfaces: engine files, saved ledgers, CountState bytes,
the ECDF result object, the CLI's input reading, the accountant's guards."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privstats
from privstats.local import GRR, CountState
from privstats.privacy import BudgetLedger, PureDP
from privstats.privacy.composition import optimal_composition

pytestmark = pytest.mark.timeout(120)


def test_issue_reproducers_end_in_named_errors_or_sound_results():
    est = privstats.frequencies(np.arange(40) % 2, domain=2, epsilon=0.01, delta=1e-6, model="shuffle", rng=1)
    assert np.all(np.isfinite(est.value)) and np.all(np.asarray(est.stderr) >= 0)
    est = privstats.ustatistic(
        np.linspace(0, 1, 19), lambda a, b: abs(a - b), epsilon=40.0, bounds=(0, 1), model="local", rng=3
    )
    assert est.params["bins"] <= 256 and math.isfinite(est.value)
    with pytest.raises(ValueError, match="bounds"):
        privstats.gini_mean_difference(np.linspace(0, 1, 30), epsilon=1.0, bounds=(-1e308, 1e308), rng=1)
    x = np.arange(40) % 4
    for kw in (
        {"epsilon": 1e-300, "model": "local"},
        {"epsilon": 10**400, "model": "local"},
        {"epsilon": 1e6, "model": "shuffle"},
    ):
        with pytest.raises(ValueError, match="epsilon"):
            privstats.range_counts(x, [(0, 2)], domain=4, delta=1e-6, rng=1, **kw)
    with pytest.raises(ValueError, match="epsilon"):
        privstats.auc([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1e-300, model="central", rng=1)
    with pytest.raises(ValueError, match="y_true"):
        privstats.auc([0, 1, None, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, model="central", rng=1)
    with pytest.raises(ValueError, match="method"):
        privstats.ecdf(np.linspace(0, 1, 20), epsilon=1.0, bounds=(0, 1), method=None, rng=1)
    for bad in (np.array([True, False] * 10), np.linspace(0, 1, 20) + 0j):
        with pytest.raises(TypeError, match="x"):
            privstats.ecdf(bad, epsilon=1.0, bounds=(0, 1), rng=1)
    with pytest.raises(ValueError, match="rng"):
        privstats.frequencies(x, domain=4, epsilon=1.0, model="local", rng=-1)
    with pytest.raises(ValueError, match="P"):
        privstats.auc([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, model="central", P=float("nan"))
    q = privstats.quantiles(
        np.linspace(0.05, 0.95, 39),
        [0.9, 0.2, 0.5, 0.7],
        epsilon=0.5,
        bounds=(0, 1),
        method="independent",
        rng=1,
    ).value
    assert q[1] <= q[2] <= q[3] <= q[0]


def test_optimal_composition_with_huge_k_is_refused_or_answered_quickly():
    try:
        g = optimal_composition(0.1, 10**9, 1e-6)
    except ValueError as exc:
        assert "k" in str(exc)
    else:
        assert math.isfinite(g.epsilon) and g.epsilon > 0


def test_ecdf_result_refuses_nan_and_non_numbers():
    F = privstats.ecdf(np.linspace(0, 1, 40), epsilon=1.0, bounds=(0, 1), grid=16, rng=1)
    for bad, name in ((float("nan"), "t"), ("a", "t"), ([0.1, None], "t")):
        with pytest.raises((ValueError, TypeError), match=name):
            F.evaluate(bad)
    with pytest.raises((ValueError, TypeError), match="p"):
        F.quantile([0.5, None])
    with pytest.raises((ValueError, TypeError), match="confidence_level"):
        F.confidence_interval("high")


def test_count_state_from_bytes_validates_its_header():
    state = GRR(4, 1.0).simulate(np.arange(40) % 4, rng=1)
    blob = state.to_bytes()
    assert CountState.from_bytes(blob) == state
    for old, new in (
        (b'"n": 40', b'"n": -5'),
        (b'"n": 40', b'"n": 4.5'),
        (b'"n": 40', b'"n": true'),
        (b'"protocol": "grr"', b'"protocol": 7'),
    ):
        tampered = blob.replace(old, new)
        tampered = (
            tampered[:6]
            + len(tampered[10 : 10 + len(tampered) - 10 - 32]).to_bytes(4, "little")[:0]
            + tampered[6:]
            if False
            else _repack(blob, old, new)
        )
        with pytest.raises(ValueError, match="CountState"):
            CountState.from_bytes(tampered)


def _repack(blob: bytes, old: bytes, new: bytes) -> bytes:
    import struct

    version, hlen = struct.unpack("<HI", blob[4:10])
    header = blob[10 : 10 + hlen].replace(old, new)
    return blob[:4] + struct.pack("<HI", version, len(header)) + header + blob[10 + hlen :]


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=200))
def test_count_state_from_random_bytes_is_a_clear_error(data):
    with pytest.raises(ValueError):
        CountState.from_bytes(data)


def test_saved_ledger_is_tamper_evident():
    led, key = BudgetLedger(PureDP(1.0)), BudgetLedger.new_key()
    led.spend(PureDP(0.4), "a")
    led.spend(PureDP(0.5), "b")
    text = led.to_json(key)
    assert BudgetLedger.from_json(text, key=key).entries == led.entries
    raised = json.loads(text)
    raised["total"]["epsilon"] = 5.0
    deleted = json.loads(text)
    deleted["entries"] = deleted["entries"][:1]
    for bad in (json.dumps(raised), json.dumps(deleted)):
        with pytest.raises(ValueError, match="HMAC"):
            BudgetLedger.from_json(bad, key=key)
    with pytest.raises(ValueError, match="HMAC"):
        BudgetLedger.from_json(text, key=BudgetLedger.new_key())
    with pytest.raises(ValueError, match="key"):
        BudgetLedger.from_json(text)  # a signed ledger needs its key
    duplicate = text[:-1] + ', "total": {"kind": "pure", "epsilon": 9.0}}'
    with pytest.raises(ValueError, match="duplicate"):
        BudgetLedger.from_json(duplicate, key=key)
    with pytest.raises(ValueError, match="duplicate"):
        BudgetLedger.from_json(led.to_json()[:-1] + ', "composition": "basic"}')


def test_engine_refuses_a_file_whose_metadata_was_edited(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from privstats.engine import aggregate, write_reports
    from privstats.engine.format import METADATA_KEY, ReportFormatError

    oracle = GRR(4, epsilon=1.0)
    path = tmp_path / "r.parquet"
    write_reports(oracle, np.arange(400) % 4, path, rng=0)
    assert aggregate(oracle, path).n == 400  # the current writer's files are read
    pf = pq.ParquetFile(path)
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    edited = json.loads(meta[METADATA_KEY])
    edited["params"]["epsilon"] = 5.0
    meta[METADATA_KEY] = json.dumps(edited, sort_keys=True).encode()
    footer = {k: v for k, v in (pf.metadata.metadata or {}).items() if k.startswith(b"privstats.")}
    out = tmp_path / "edited.parquet"
    with pq.ParquetWriter(out, table.schema.with_metadata(meta)) as w:
        w.write_table(table, row_group_size=pf.metadata.row_group(0).num_rows)
        w.add_key_value_metadata(footer)
    forged = GRR(4, epsilon=5.0)
    with pytest.raises(ReportFormatError, match="digest|MAC"):  # the keyed MAC refuses it first
        aggregate(forged, out)
    # a file without the digest (older writer, or the digest deleted) is refused with the reason
    out2 = tmp_path / "nodigest.parquet"
    with pq.ParquetWriter(out2, table.schema) as w:
        w.write_table(table, row_group_size=pf.metadata.row_group(0).num_rows)
        w.add_key_value_metadata({k: v for k, v in footer.items() if k != b"privstats.digests"})
    with pytest.raises(ReportFormatError, match="older privstats"):
        aggregate(oracle, out2)
    assert pa is not None


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "privstats.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=100
    )


def test_cli_input_files(tmp_path: Path):
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfv\n0.1\n0.5\n0.7\n0.2\n")
    (tmp_path / "latin1.csv").write_bytes(b"v\n0.1\ncaf\xe9\n")
    (tmp_path / "dir.csv").mkdir()
    base = ["estimate", "ecdf", "--column", "v", "--epsilon", "1", "--bounds", "0", "1"]
    ok = _cli(*base, "--input", "bom.csv", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    for name, msg in (("latin1.csv", "not UTF-8"), ("dir.csv", "directory")):
        r = _cli(*base, "--input", name, cwd=tmp_path)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
