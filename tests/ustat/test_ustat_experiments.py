"""The U-statistics reproductions run end to end with --smoke and write figures and tables."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name,files", [
    ("ustat_auc", ["figure3.png", "figure5.png", "figure6.png", "figure7.png", "ustat_auc.csv", "ustat_auc.md"]),
    ("ustat_kendall", ["figure4.png", "ustat_kendall.csv", "ustat_kendall.md"]),
])
def test_experiment_smoke(tmp_path, name, files):
    pytest.importorskip("matplotlib")
    assert _load(name).main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    for f in files:
        assert (tmp_path / f).stat().st_size > 0
