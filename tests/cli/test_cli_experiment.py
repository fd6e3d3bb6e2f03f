"""``privstats experiment`` and ``privstats aggregate`` run as subprocesses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import privstats


def run_cli(*args, env=None, timeout=120):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "privstats", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )


@pytest.fixture()
def fake_experiments(tmp_path):
    d = tmp_path / "experiments"
    d.mkdir()
    (d / "echo_args.py").write_text(
        '"""Echo the arguments (a test experiment)."""\n'
        "from __future__ import annotations\n"
        "import argparse, pathlib\n"
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class Row:\n"  # needs the module registered in sys.modules while it runs
        "    smoke: bool\n"
        "def main(argv=None):\n"
        "    p = argparse.ArgumentParser(prog='echo_args')\n"
        "    p.add_argument('--smoke', action='store_true')\n"
        "    p.add_argument('--out', required=True)\n"
        "    a = p.parse_args(argv)\n"
        "    pathlib.Path(a.out).write_text(f'smoke={Row(a.smoke).smoke}')\n"
        "    return 0\n"
    )
    (d / "fails.py").write_text('"""Always fails."""\ndef main(argv=None):\n    return 3\n')
    (d / "_helper.py").write_text("X = 1\n")
    return d


def test_list_and_run_with_forwarded_arguments(fake_experiments, tmp_path):
    env = {"PRIVSTATS_EXPERIMENTS_DIR": str(fake_experiments)}
    listing = run_cli("experiment", "--list", env=env)
    assert listing.returncode == 0
    assert "echo_args" in listing.stdout and "Echo the arguments" in listing.stdout
    assert "_helper" not in listing.stdout
    out = tmp_path / "result.txt"
    proc = run_cli("experiment", "echo_args", "--smoke", "--out", out, env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "smoke=True"
    assert "finished" in proc.stderr


def test_forwarded_help_exit_code_and_unknown_name(fake_experiments, monkeypatch, capsys):
    from privstats.cli import main

    monkeypatch.setenv("PRIVSTATS_EXPERIMENTS_DIR", str(fake_experiments))
    with pytest.raises(SystemExit) as exc:  # the script's own --help, not ours
        main(["experiment", "echo_args", "--help"])
    assert exc.value.code == 0 and "usage: echo_args" in capsys.readouterr().out
    assert main(["experiment", "fails"]) == 3
    assert main(["experiment", "nope"]) == 2
    err = capsys.readouterr().err
    assert "NAME" in err and "echo_args" in err


def test_missing_experiments_directory(tmp_path, monkeypatch, capsys):
    from privstats.cli import main

    monkeypatch.setenv("PRIVSTATS_EXPERIMENTS_DIR", str(tmp_path / "absent"))
    assert main(["experiment", "--list"]) == 2
    assert "experiments/ directory was not found" in capsys.readouterr().err


def test_default_directory_is_next_to_the_source_tree():
    from privstats.cli import experiments_dir

    expected = Path(privstats.__file__).resolve().parents[2] / "experiments"
    if not expected.is_dir():
        pytest.skip("not a source checkout")
    assert os.environ.get("PRIVSTATS_EXPERIMENTS_DIR") is None
    assert experiments_dir() == expected


def test_aggregate_is_wired_to_the_engine():
    pytest.importorskip("privstats.engine.cli")
    proc = run_cli("aggregate", "--help")
    assert proc.returncode == 0 and "--input" in proc.stdout and "privstats aggregate" in proc.stdout


# ---------------------------------------------------------------- the repository's own experiments
REAL = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.skipif(not REAL.is_dir(), reason="not a source checkout")
@pytest.mark.parametrize(
    "name",
    [
        "ecdf_paper",
        "ustat_auc",
        "ustat_kendall",
        "shuffle_error",
        "summarization_digits",
        "summarization_covariate_shift",
        "coverage_real",
        "all",
    ],
)
def test_each_experiment_has_its_own_help_and_an_out_default_outside_the_tree(name, capsys):
    from privstats.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["experiment", name, "--help"])
    out = re.sub(r"-\s+", "-", capsys.readouterr().out)  # argparse wraps the help at hyphens
    assert exc.value.code == 0
    assert f"usage: privstats experiment {name}" in out and "--out" in out and "--smoke" in out
    assert "privstats-experiments" in out


@pytest.mark.skipif(not REAL.is_dir(), reason="not a source checkout")
def test_default_out_is_relative_to_the_working_directory():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_common", REAL / "_common.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = mod.parser("x", None, runs=3).parse_args([])
    assert args.out == Path("privstats-experiments") / "x" and not args.out.is_absolute()
    assert args.runs == 3 and args.smoke is False


@pytest.mark.skipif(not REAL.is_dir(), reason="not a source checkout")
def test_all_writes_the_fidelity_table_and_publishes(tmp_path):
    pytest.importorskip("matplotlib")
    out, repo = tmp_path / "out", tmp_path / "repo"
    proc = run_cli(
        "experiment",
        "all",
        "--smoke",
        "--only",
        "ustat_kendall",
        "--out",
        out,
        "--publish",
        repo,
        env={"PRIVSTATS_NO_PROGRESS": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    text = (out / "fidelity.md").read_text()
    assert "| U-statistics (Bell et al.) | Fig 4 |" in text and "Verdicts:" in text
    assert (repo / "docs" / "experiments" / "fidelity.md").read_text() == text
    assert (repo / "docs" / "experiments" / "ustat_fig4.png").stat().st_size > 0
    # tables are printed as aligned tables, not dicts
    assert "protocol" in proc.stdout and "----" in proc.stdout and "{'" not in proc.stdout
    assert "finished in" in proc.stderr
