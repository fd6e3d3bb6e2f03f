"""The shuffle experiment scripts run with --smoke and write their table and figure."""

import importlib.util
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "experiments")


@pytest.mark.parametrize("name", ["shuffle_error"])
def test_experiment_smoke(name, tmp_path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    for f in ("results.csv", "results.md", "shuffle_error.png"):
        assert (tmp_path / f).exists()
