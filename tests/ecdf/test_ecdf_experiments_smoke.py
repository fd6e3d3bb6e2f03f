"""The ECDF reproduction script runs end to end in smoke mode."""

import importlib.util
import pathlib

import pytest

SCRIPTS = sorted((pathlib.Path(__file__).resolve().parents[2] / "experiments").glob("ecdf_*.py"))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_experiment_smoke(path, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    assert (tmp_path / "results.csv").exists() and list(tmp_path.glob("*.png"))
