"""Each summarization experiment runs with --smoke and writes its figure, tables and fidelity rows."""

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

EXP = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("name", ["summarization_digits", "summarization_covariate_shift"])
def test_experiment_smoke(name, tmp_path):
    spec = importlib.util.spec_from_file_location(name, EXP / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    for suffix in (".png", "_table.csv", "_table.md", "_runs.csv"):
        assert (tmp_path / f"{name}{suffix}").stat().st_size > 0
    rows = json.loads((tmp_path / "fidelity.json").read_text())
    assert rows and all(r["verdict"] for r in rows)


def test_fallback_experiment_smoke(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("summarization_fallback", EXP / "summarization_fallback.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    rows = (tmp_path / "summarization_fallback.csv").read_text().splitlines()
    assert len(rows) == 1 + 8  # 2 cases x 2 targets x 2 epsilons
    assert "uniform" in capsys.readouterr().out


def test_real_data_experiment_smoke(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("summarization_real", EXP / "summarization_real.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    for stem in ("summarization_real", "summarization_real_diagnostics", "summarization_real_noise"):
        assert (tmp_path / f"{stem}.csv").stat().st_size > 0 and (tmp_path / f"{stem}.md").stat().st_size > 0
    main = (tmp_path / "summarization_real.csv").read_text().splitlines()
    assert len(main) == 1 + len(mod.SETTINGS) * len(mod.MAIN)
    assert "gap closed" in capsys.readouterr().out
