"""``privstats aggregate`` run as a subprocess."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from privstats.engine import aggregate, write_reports
from privstats.engine.cli import cli_aggregate
from privstats.local import GRR, OUE


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "privstats", "aggregate", *args], capture_output=True, text=True, timeout=120
    )


def test_json_output_rebuilds_the_oracle_from_the_file(tmp_path):
    oracle = OUE(20, epsilon=2.0)
    values = np.random.default_rng(0).integers(0, 5, 3000)
    path = write_reports(oracle, values, tmp_path / "r.parquet", rng=1, chunk_size=700)
    proc = _run("--protocol", "oue", "--input", str(path), "--json", "--state-out", str(tmp_path / "s.bin"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    state = aggregate(oracle, path)
    est = oracle.estimate(state)
    assert out["protocol"] == "oue" and out["params"] == oracle.params and out["n"] == 3000
    assert out["counts"] == state.counts.tolist()
    np.testing.assert_allclose(out["estimate"]["value"], est.value, rtol=1e-12)
    from privstats.privacy.integrity import load_state

    assert load_state(tmp_path / "s.bin") == state  # signed with the owner's default key


def test_text_output_lists_top_items(tmp_path, capsys):
    oracle = GRR(16, epsilon=4.0)
    path = write_reports(oracle, [3] * 2000 + [5] * 500, tmp_path / "r.parquet", rng=0)
    assert cli_aggregate(["--input", str(path), "--top", "2"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[-2:]]
    assert [r[0] for r in rows] == ["3", "5"]


def test_errors_name_the_file_and_exit_2(tmp_path, capsys):
    oracle = GRR(8, epsilon=1.0)
    path = write_reports(oracle, [1, 2, 3], tmp_path / "r.parquet", rng=0)
    proc = _run("--protocol", "olh", "--input", str(path))
    assert proc.returncode == 2 and "r.parquet" in proc.stderr and "'grr'" in proc.stderr
    (tmp_path / "broken.parquet").write_bytes(path.read_bytes()[:-20])
    assert cli_aggregate(["--input", str(tmp_path / "broken.parquet")]) == 2
    captured = capsys.readouterr()
    assert "broken.parquet" in captured.err and captured.out == ""


def test_usage_errors_return_2_in_process(capsys):
    assert cli_aggregate([]) == 2
    assert "--input" in capsys.readouterr().err
    assert cli_aggregate(["--input", "x.parquet", "--scheduler", "tcp://h:1", "--engine", "local"]) == 2
    assert cli_aggregate(["--help"]) == 0
