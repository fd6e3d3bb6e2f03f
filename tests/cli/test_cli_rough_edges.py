"""CLI rough edges of issue 26 (item 8): statistic names, hosmer_lemeshow, plan --quantiles,
collect's clipping, the server's start line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privstats.cli import main
from privstats.estimate import Estimate

ROOT = Path(__file__).resolve().parents[2]


def _run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    g = np.random.default_rng(5)
    p = g.uniform(0.05, 0.95, 2000)
    y = (g.random(2000) < p).astype(int)
    path = tmp_path_factory.mktemp("cli") / "scores.csv"
    path.write_text("y,p\n" + "\n".join(f"{a},{b:.6f}" for a, b in zip(y, p, strict=True)) + "\n")
    return path


@pytest.mark.parametrize("name", ["roc", "roc_curve"])
def test_estimate_accepts_both_roc_spellings(name, scores):
    argv = ["estimate", name, "--input", str(scores), "--column", "p", "--label", "y"]
    code, out, err = _run([*argv, "--epsilon", "1", "--bounds", "0", "1", "--seed", "1", "--json"])
    assert code == 0, err
    rec = json.loads(out)
    assert rec["statistic"] == "roc" and len(rec["fpr"]) == len(rec["tpr"]) > 2


@pytest.mark.parametrize("name", ["roc", "roc_curve"])
def test_plan_accepts_both_roc_spellings(name):
    code, out, err = _run(["plan", name, "--n", "10000", "--epsilon", "1", "--json"])
    assert code == 0, err
    assert json.loads(out)["statistic"] == "roc_curve"


def test_estimate_hosmer_lemeshow(scores):
    argv = ["estimate", "hosmer_lemeshow", "--input", str(scores), "--column", "p", "--label", "y"]
    code, out, err = _run([*argv, "--epsilon", "1", "--seed", "1", "--json"])
    assert code == 0, err
    rec = json.loads(out)
    assert rec["statistic"] == "hosmer_lemeshow" and rec["value"] >= 0 and rec["model"] == "central"


def test_plan_quantiles_takes_levels():
    base = ["plan", "quantiles", "--n", "10000", "--epsilon", "1", "--bounds", "0", "1", "--json"]
    code, out, err = _run([*base, "--quantiles", "0.1", "0.9"])
    assert code == 0, err
    rows = json.loads(out)["options"]
    assert rows and all(r["stderr"] >= 0 for r in rows)
    code, _, err = _run([*base, "--quantiles", "1.5"])
    assert code == 2 and "q" in err
    code, _, err = _run(["plan", "auc", "--n", "100", "--epsilon", "1", "--quantiles", "0.5"])
    assert code == 2 and "--quantiles" in err


def test_plan_hosmer_lemeshow_takes_the_anticipated_lack_of_fit():
    """`--lack-of-fit H` reaches the planner: a model expected to lack fit has a larger predicted
    stderr than a calibrated one (the stderr grows with H); other statistics and H < 0 are refused."""
    base = ["plan", "hosmer_lemeshow", "--n", "1000", "--epsilon", "1", "--model", "central", "--json"]
    code, out, err = _run(base)
    assert code == 0, err
    calibrated = json.loads(out)["options"][0]["stderr"]
    code, out, err = _run([*base, "--lack-of-fit", "30"])
    assert code == 0, err
    assert json.loads(out)["options"][0]["stderr"] > 1.2 * calibrated
    code, _, err = _run([*base, "--lack-of-fit", "-1"])
    assert code == 2 and "--lack-of-fit" in err
    code, _, err = _run(["plan", "auc", "--n", "100", "--epsilon", "1", "--lack-of-fit", "3"])
    assert code == 2 and "--lack-of-fit" in err


def test_plan_states_the_best_case_where_the_error_depends_on_the_data_shape():
    argv = ["plan", "gini_mean_difference", "--n", "300", "--epsilon", "0.5", "--bounds", "0", "1"]
    code, out, err = _run([*argv, "--model", "local", "--json"])
    assert code == 0, err
    row = json.loads(out)["options"][0]
    assert 0 < row["best_case"] < row["stderr"]
    code, out, err = _run([*argv, "--model", "local"])
    assert code == 0, err
    assert "best case" in out


def test_collect_clips_counts_into_range_and_marks_them():
    from privstats.cli.services import collect_lines, in_range

    raw = Estimate(np.array([-2.0, 7.0, 5.0]), stderr=np.full(3, 168.0), model="local", n=10)
    est = in_range(raw, "frequencies", {})
    assert est.clipped and est.value.tolist() == [0.0, 7.0, 5.0]
    lines = collect_lines(est)
    assert "-2.00" not in "\n".join(lines)
    assert lines[1].endswith("*") and not lines[2].endswith("*") and "clipped" in lines[-1]
    q = in_range(Estimate(np.array([1.2, -0.1]), stderr=np.full(2, 0.1)), "quantiles", {"bounds": [0, 1]})
    assert q.value.tolist() == [0.0, 1.0]


def test_readme_command_list_names_plan():
    text = (ROOT / "README.md").read_text()
    assert "privstats plan" in text


@pytest.mark.timeout(120)
def test_serve_prints_role_url_and_task_id(tmp_path):
    pytest.importorskip("privstats.services")
    task = tmp_path / "task.json"
    argv = ["task", "new", "--statistic", "frequencies", "--model", "local", "--domain-size", "4"]
    code, _, err = _run([*argv, "--epsilon", "1", "--min-batch", "10", "--out", str(task)])
    assert code == 0, err
    task_id = json.loads(task.read_text())["task_id"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "privstats", "serve", "collector", "--task", str(task), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "collector" in line and task_id in line and "http://" in line


@pytest.mark.timeout(300)
def test_demo_rows_flag_clipping_and_carry_uncertainty():
    from privstats import demo

    result = demo.collect("tiny", seed=2024, scenarios=["auc", "roc", "summarization"], epsilons=(1.0,))
    rows = {(r["statistic"], r["model"]): r for r in result.rows}
    for r in result.rows:
        assert isinstance(r["clipped"], bool)
        assert r["clipped"] == ("†" in r["protocol"]) == ("clipped into the range" in r["note"])
    auc = [r for r in result.rows if r["statistic"] == "AUC"]
    assert any(r["clipped"] for r in auc)  # the default seed: breast cancer AUC 0.996, raw values past 1
    assert all(r["stderr"] is not None and r["stderr"] > 0 for r in result.rows if "ROC" in r["statistic"])
    summary = rows[("summary MMD² (vs greedy)", "secure")]
    assert summary["stderr"] is not None and summary["stderr"] > 0
    assert "/party" not in summary["privacy"] and not summary["privacy"].startswith("0")
