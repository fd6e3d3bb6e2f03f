"""experiments/coverage_real.py (the real-data table of docs/results.md) runs end to end in smoke mode
and writes one row per (statistic, model) cell, outside the source tree."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

EXP = Path(__file__).resolve().parents[2] / "experiments" / "coverage_real.py"


@pytest.mark.skipif(not EXP.is_file(), reason="not a source checkout")
def test_coverage_real_smoke_writes_a_row_per_cell(tmp_path):
    spec = importlib.util.spec_from_file_location("coverage_real", EXP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    md = tmp_path / "table.md"
    assert mod.main(["--smoke", "--out", str(tmp_path / "out"), "--md", str(md)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "cells.jsonl").read_text().splitlines()]
    assert {(r["stat"], r["model"]) for r in rows} == {("auc", m) for m in mod.MODELS["auc"]} | {
        ("frequencies", m) for m in mod.MODELS["frequencies"]
    }
    for r in rows:
        assert r["runs"] == 2 and 0 <= r["coverage"] <= 1 and r["stderr_reported"] > 0
    assert md.read_text().startswith(f"{len(rows)} cells")
