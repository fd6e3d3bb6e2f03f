"""The U-statistics reproductions run end to end with --smoke and write figures, tables and fidelity rows."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "name,files,figures",
    [
        (
            "ustat_auc",
            [
                "ustat_fig3.png",
                "ustat_fig5.png",
                "ustat_fig6.png",
                "ustat_fig7.png",
                "ustat_auc.csv",
                "ustat_auc.md",
            ],
            {"Fig 3", "Fig 5", "Fig 6", "Fig 7"},
        ),
        ("ustat_kendall", ["ustat_fig4.png", "ustat_kendall.csv", "ustat_kendall.md"], {"Fig 4"}),
    ],
)
def test_experiment_smoke(tmp_path, name, files, figures):
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    assert _load(name).main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    for f in files:
        assert (tmp_path / f).stat().st_size > 0
    rows = json.loads((tmp_path / "fidelity.json").read_text())
    assert figures <= {r["figure"] for r in rows}


def test_imbalanced_standin_has_the_papers_minority_class():
    pytest.importorskip("sklearn")
    y, s, _ = _load("ustat_auc").standin_scores(None, 0)
    assert y.size == 6300 and int(y.sum()) == 693
    assert s.min() >= 0 and s.max() <= 1
