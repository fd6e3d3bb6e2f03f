"""The ECDF reproduction runs end to end at smoke size and writes its figures, tables and fidelity rows."""

import importlib.util
import json
import pathlib

import pytest

EXP = pathlib.Path(__file__).resolve().parents[2] / "experiments"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXP / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ecdf_paper_smoke(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    assert _load("ecdf_paper").main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    for fig in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10):
        png = tmp_path / f"ecdf_fig{fig}.png"
        assert 0 < png.stat().st_size < 150_000
    rows = json.loads((tmp_path / "fidelity.json").read_text())
    assert {r["figure"] for r in rows} >= {f"Fig {i}" for i in range(1, 11)} | {"Table 1"}
    assert all(r["verdict"] for r in rows)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["smoke"] is True and meta["runs"] == 2


def test_roc_area_between_is_a_distance():
    mod = _load("ecdf_paper")
    assert mod.roc_area_between([0, 1], [0, 1], [0, 1], [0, 1]) == 0
    # the diagonal against the perfect curve: area 1/2
    assert abs(mod.roc_area_between([0, 0, 1], [0, 1, 1], [0, 1], [0, 1]) - 0.5) < 1e-3
