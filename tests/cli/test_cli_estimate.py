"""``privstats estimate`` on files the tests write (CSV and Parquet), and every error path."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def run_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "privstats", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(11)
    n = 3000
    item = rng.choice(8, size=n, p=np.array([8, 7, 6, 5, 4, 3, 2, 1]) / 36)
    other = rng.integers(0, 8, size=n)  # a decoy column with a different distribution
    income = np.round(rng.uniform(0, 100, size=n), 3)
    label = rng.integers(0, 2, size=n)
    score = np.clip(0.5 + 0.25 * (label - 0.5) + rng.normal(0, 0.15, n), 0, 1).round(4)
    city = np.array(["paris", "lyon", "nice"])[rng.integers(0, 3, size=n)]
    return {"item": item, "other": other, "income": income, "label": label, "score": score, "city": city}


@pytest.fixture(scope="module")
def csv_file(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("est") / "data.csv"
    names = list(table)
    lines = [",".join(names)] + [",".join(str(table[k][i]) for k in names) for i in range(len(table["item"]))]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def parquet_file(table, tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("est") / "data.parquet"
    pq.write_table(pa.table({k: v for k, v in table.items()}), path)
    return path


def _json(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_frequencies_from_file(fmt, table, csv_file, parquet_file):
    path = csv_file if fmt == "csv" else parquet_file
    out = _json(
        run_cli(
            "estimate",
            "frequencies",
            "--input",
            path,
            "--column",
            "item",
            "--domain-size",
            8,
            "--epsilon",
            4,
            "--model",
            "local",
            "--seed",
            5,
            "--json",
        )
    )
    truth = np.bincount(table["item"], minlength=8)
    value, se = np.asarray(out["value"]), np.asarray(out["stderr"])
    assert out["model"] == "local" and out["n"] == truth.sum()
    assert out["guarantee"]["epsilon"] == 4
    # the chosen column, not the decoy, within 5 standard errors (the decoy is ~uniform and far away)
    assert np.all(np.abs(value - truth) < 5 * se)
    assert np.any(np.abs(value - np.bincount(table["other"], minlength=8)) > 5 * se)


def test_frequencies_of_text_categories(table, csv_file):
    out = _json(
        run_cli(
            "estimate",
            "frequencies",
            "--input",
            csv_file,
            "--column",
            "city",
            "--categories",
            "paris,lyon,nice",
            "--epsilon",
            3,
            "--model",
            "central",
            "--seed",
            1,
            "--json",
        )
    )
    truth = [np.sum(table["city"] == c) for c in ("paris", "lyon", "nice")]
    assert out["categories"] == ["paris", "lyon", "nice"]
    assert np.all(np.abs(np.asarray(out["value"]) - truth) < 5 * np.asarray(out["stderr"]) + 1e-9)


def test_quantiles_parquet_text_output(parquet_file, table):
    proc = run_cli(
        "estimate",
        "quantiles",
        "--input",
        parquet_file,
        "--column",
        "income",
        "--bounds",
        0,
        100,
        "--epsilon",
        1,
        "--quantiles",
        0.5,
        "--model",
        "central",
        "--seed",
        3,
    )
    assert proc.returncode == 0, proc.stderr
    assert "guarantee" in proc.stdout and "central" in proc.stdout


def test_ecdf_json_evaluates_at_points(csv_file, table):
    out = _json(
        run_cli(
            "estimate",
            "ecdf",
            "--input",
            csv_file,
            "--column",
            "income",
            "--bounds",
            0,
            100,
            "--epsilon",
            50,
            "--model",
            "central",
            "--at",
            25,
            50,
            75,
            "--seed",
            2,
            "--json",
        )
    )
    exact = [np.mean(table["income"] <= t) for t in (25, 50, 75)]
    assert out["at"] == [25, 50, 75]
    assert np.allclose(out["cdf"], exact, atol=0.05)


def test_auc_with_label_column(csv_file, table):
    from sklearn.metrics import roc_auc_score

    out = _json(
        run_cli(
            "estimate",
            "auc",
            "--input",
            csv_file,
            "--column",
            "score",
            "--label",
            "label",
            "--bounds",
            0,
            1,
            "--epsilon",
            20,
            "--model",
            "central",
            "--seed",
            4,
            "--json",
        )
    )
    assert abs(out["value"] - roc_auc_score(table["label"], table["score"])) < 5 * out["stderr"] + 1e-3


ERRORS = [
    # (arguments after the input file, option the message must name, words it must contain)
    (
        ["gini_mean_difference", "--column", "nope", "--bounds", "0", "100", "--epsilon", "1"],
        "--column",
        "nope",
    ),
    (
        ["gini_mean_difference", "--column", "city", "--bounds", "0", "100", "--epsilon", "1"],
        "--column",
        "must be numeric",
    ),
    (["ecdf", "--column", "income", "--epsilon", "1"], "--bounds", "public bounds"),
    (["ecdf", "--column", "income", "--bounds", "5", "1", "--epsilon", "1"], "--bounds", "LO must be < HI"),
    (["auc", "--column", "score", "--bounds", "0", "1", "--epsilon", "1"], "--label", "label"),
    (
        ["auc", "--column", "score", "--label", "city", "--bounds", "0", "1", "--epsilon", "1"],
        "--label",
        "two classes",
    ),
    (["frequencies", "--column", "city", "--epsilon", "1"], "--categories", "text"),
    (
        ["frequencies", "--column", "city", "--categories", "paris,lyon", "--epsilon", "1"],
        "--categories",
        "entries not in the list",  # counted: the unlisted value ('nice') is data and is not printed
    ),
    (["frequencies", "--column", "item", "--epsilon", "1"], "--domain-size", "domain size"),
    (["frequencies", "--column", "income", "--domain-size", "8", "--epsilon", "1"], "--column", "integers"),
    (["kendall_tau", "--column", "income", "--bounds", "0", "100", "--epsilon", "1"], "--column", "2 column"),
    (["ecdf", "--column", "income", "--bounds", "0", "100", "--epsilon", "-1"], "--epsilon", "> 0"),
    (["ecdf", "--column", "income", "--bounds", "0", "100", "--epsilon", "abc"], "--epsilon", "number"),
    (["median", "--column", "income", "--epsilon", "1"], "STATISTIC", "invalid choice"),
]


@pytest.mark.parametrize("args, option, words", ERRORS, ids=[f"{e[0][0]}-{e[1]}-{e[2]}" for e in ERRORS])
def test_error_paths_exit_2_naming_the_option(csv_file, args, option, words):
    # in-process (the same main() the console script runs) to keep the suite fast
    code, out, err = run_main("estimate", *args[:1], "--input", csv_file, *args[1:])
    assert code == 2, (out, err)
    assert option in err and words in err, err
    assert out == ""


@pytest.mark.parametrize("index", [0, 1, 2])
def test_error_paths_as_subprocess(csv_file, index):
    args, option, words = ERRORS[index]
    proc = run_cli("estimate", *args[:1], "--input", csv_file, *args[1:])
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert option in proc.stderr and words in proc.stderr, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def run_main(*args):
    """In-process run of the CLI's main(); returns (exit code, stdout, stderr)."""
    import contextlib
    import io

    from privstats.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_missing_file_and_parquet_missing_column(parquet_file, tmp_path):
    code, _, err = run_main(
        "estimate",
        "ecdf",
        "--input",
        tmp_path / "absent.csv",
        "--column",
        "x",
        "--bounds",
        0,
        1,
        "--epsilon",
        1,
    )
    assert code == 2 and "--input" in err and "not found" in err
    code, _, err = run_main(
        "estimate", "ecdf", "--input", parquet_file, "--column", "incme", "--bounds", 0, 100, "--epsilon", 1
    )
    assert code == 2 and "--column" in err and "incme" in err
    assert "income" in err  # the available columns are listed


def test_read_columns_in_process(csv_file, table, tmp_path):
    from privstats.cli import CLIError, read_columns

    cols = read_columns(csv_file, ["income", "city"])
    assert np.array_equal(cols["income"], table["income"])
    assert cols["city"].dtype == object and list(cols["city"][:3]) == list(table["city"][:3])
    holes = tmp_path / "holes.csv"
    holes.write_text("a,b\n1,2\n,3\n")
    with pytest.raises(CLIError, match="missing value on line 3"):
        read_columns(holes, ["a"])
    sheet = tmp_path / "x.xlsx"
    sheet.write_text("")
    with pytest.raises(CLIError, match="unsupported file type"):
        read_columns(sheet, ["a"])


def test_library_errors_are_reported_not_raised(csv_file):
    # income is in [0, 100]; bounds that exclude values must fail cleanly (library ValueError → exit 2)
    code, out, err = run_main(
        "estimate",
        "gini_mean_difference",
        "--input",
        csv_file,
        "--column",
        "income",
        "--bounds",
        0,
        10,
        "--epsilon",
        1,
        "--model",
        "central",
    )
    assert code == 2 and "invalid input" in err and out == ""


def test_kendall_two_columns_in_process(csv_file, table):
    from scipy import stats

    code, out, err = run_main(
        "estimate",
        "kendall_tau",
        "--input",
        csv_file,
        "--column",
        "income",
        "score",
        "--bounds",
        0,
        100,
        "--epsilon",
        5,
        "--model",
        "central",
        "--seed",
        8,
        "--json",
    )
    assert code == 0, err
    res = json.loads(out)
    exact = stats.kendalltau(table["income"], table["score"]).statistic
    assert res["columns"] == ["income", "score"]
    assert abs(res["value"] - exact) < 5 * res["stderr"]


def test_roc_json_curve(csv_file, table):
    code, out, err = run_main(
        "estimate",
        "roc",
        "--input",
        csv_file,
        "--column",
        "score",
        "--label",
        "label",
        "--bounds",
        0,
        1,
        "--epsilon",
        50,
        "--model",
        "central",
        "--seed",
        9,
        "--json",
    )
    assert code == 0, err
    res = json.loads(out)
    fpr, tpr = np.asarray(res["fpr"]), np.asarray(res["tpr"])
    assert fpr.shape == tpr.shape and fpr.min() >= 0 and tpr.max() <= 1
    from sklearn.metrics import roc_auc_score

    assert abs(res["auc_of_curve"] - roc_auc_score(table["label"], table["score"])) < 0.02


def test_frequencies_path_on_a_stand_in(csv_file, table, monkeypatch):
    """The CLI's frequencies path (integer codes and text categories) on a stand-in with issue 5's signature."""
    import privstats
    from privstats.local import GRR

    seen = {}

    def fake_frequencies(values, *, domain, epsilon, delta=0.0, model="shuffle", rng=None):
        seen.update(domain=domain, model=model, n=len(values))
        oracle = GRR(domain, epsilon)
        return oracle.estimate(oracle.simulate(values, rng=rng))

    monkeypatch.setitem(privstats.__dict__, "frequencies", fake_frequencies)
    code, out, err = run_main(
        "estimate",
        "frequencies",
        "--input",
        csv_file,
        "--column",
        "city",
        "--categories",
        "nice,lyon,paris",
        "--epsilon",
        6,
        "--model",
        "local",
        "--seed",
        3,
        "--json",
    )
    assert code == 0, err
    res = json.loads(out)
    assert seen == {"domain": 3, "model": "local", "n": len(table["city"])}
    truth = [np.sum(table["city"] == c) for c in ("nice", "lyon", "paris")]
    assert np.all(np.abs(np.asarray(res["value"]) - truth) < 5 * np.asarray(res["stderr"]))
    code, out, err = run_main(
        "estimate",
        "frequencies",
        "--input",
        csv_file,
        "--column",
        "item",
        "--domain-size",
        8,
        "--epsilon",
        6,
        "--model",
        "local",
        "--seed",
        3,
    )
    assert code == 0, err
    assert seen["domain"] == 8 and "grr" in out and "value" in out
