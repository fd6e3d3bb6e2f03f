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


@pytest.mark.skipif(not EXP.is_file(), reason="not a source checkout")
def test_seed_moves_each_cells_noise_seeds(tmp_path):
    """``--seed S`` runs seeds S … S + runs − 1 (a re-measurement on fresh seeds): the row of seeds 0-1
    is the root mean square of the rows of seed 0 and of seed 1 alone; ``--seed`` was ignored before."""
    spec = importlib.util.spec_from_file_location("coverage_real", EXP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cell = {"data": "breast_cancer", "n": 300, "eps": 1.0, "stat": "auc", "model": "central"}
    e0, e1 = (mod.run_cell(cell, 1, first)["rmse"] for first in (0, 1))
    assert e0 != e1
    assert mod.run_cell(cell, 2)["rmse"] == pytest.approx(((e0**2 + e1**2) / 2) ** 0.5, rel=1e-12)
    argv = ["--out", str(tmp_path / "o"), "--data", "breast_cancer", "--corners", "300:1", "--stats", "auc"]
    assert mod.main([*argv, "--models", "central", "--runs", "1", "--seed", "1"]) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "o" / "cells.jsonl").read_text().splitlines()]
    assert row["first_seed"] == 1 and row["rmse"] == pytest.approx(e1, rel=1e-12)


@pytest.mark.skipif(not EXP.is_file(), reason="not a source checkout")
def test_quantization_reaches_the_local_gini_releases_and_their_plan(tmp_path):
    """``--quantization dither`` reproduces docs/results.md's dithered rows: the local GMD and coefficient
    run on the dithered grid and are planned on it; the other models and statistics are untouched."""
    spec = importlib.util.spec_from_file_location("coverage_real", EXP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data, _ = mod.subsample(mod.load("breast_cancer"), 300, seed=300)
    for stat in ("gini_mean_difference", "gini_coefficient"):
        s = mod.spec(stat, data, 300, "dither")
        assert s["call"]("local", 1.0, 0).params["quantization"] == "dither"
        assert "quantization" not in s["call"]("central", 1.0, 0).params
        assert s["plan"]["quantization"] == "dither"
    argv = ["--out", str(tmp_path / "o"), "--data", "breast_cancer", "--corners", "300:1"]
    argv += [
        "--stats",
        "gini_mean_difference",
        "--models",
        "local",
        "--runs",
        "1",
        "--quantization",
        "dither",
    ]
    assert mod.main(argv) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "o" / "cells.jsonl").read_text().splitlines()]
    assert row["quantization"] == "dither"
