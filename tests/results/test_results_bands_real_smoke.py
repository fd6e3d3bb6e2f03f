"""experiments/bands_real.py (the pointwise bands of docs/results.md) runs end to end in smoke mode and
writes one row per (curve, model) cell, outside the source tree."""

from __future__ import annotations

import json

from harness import real_data_experiment


def test_bands_real_smoke_writes_a_row_per_cell(tmp_path):
    mod = real_data_experiment("bands_real")
    md = tmp_path / "table.md"
    assert mod.main(["--smoke", "--out", str(tmp_path / "out"), "--md", str(md)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "cells.jsonl").read_text().splitlines()]
    assert {(r["stat"], r["model"]) for r in rows} == {
        (c, m) for c in mod.CURVES for m in mod.CURVE_MODELS[c]
    }
    for r in rows:
        assert r["runs"] == 2 and r["points"] >= 2
        assert 0 <= r["worst_point"] <= r["coverage"] <= 1 and r["width"] > 0
    assert md.read_text().count("\n") == len(rows) + 2
