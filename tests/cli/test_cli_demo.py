"""``privstats demo`` run as a subprocess: tables, JSON, report figures, and exact values."""

from __future__ import annotations

import importlib
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist

from privstats import demo

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SEED = 7


def run_cli(*args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "privstats", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-small")
    proc = run_cli("demo", "--size", "small", "--seed", str(SEED), "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out, proc.stderr


def test_demo_json_has_oracle_table(small_demo):
    result, _, _ = small_demo
    rows = result["oracles"]
    names = {r["oracle"] for r in rows}
    assert "GRR" in names and "BinaryRR (item 0 vs rest)" in names
    assert {r["epsilon"] for r in rows} == set(demo.SIZES["small"].epsilons)
    from privstats import local

    for name in ("OUE", "OLH", "HadamardResponse"):
        if hasattr(local, name):
            assert name in names, f"{name} is importable but missing from the demo's oracle table"
    if hasattr(local, "best_oracle"):
        assert any(n.startswith("best_oracle") for n in names)
    for r in rows:
        assert r["mean_abs_error"] <= r["max_abs_error"]
        # a single run's max error over d items stays within a generous multiple of the exact std
        assert r["max_abs_error"] < 6 * r["exact_std"] * math.sqrt(2 * math.log(2 * r["domain"])) + 1e-12


def test_demo_runs_every_statistic(small_demo):
    result, _, _ = small_demo
    labels = {r["statistic"] for r in result["rows"]}
    expected = {
        "frequencies": "frequency of item 0",
        "ecdf": "ECDF F(40)",
        "quantiles": "median",
        "auc": "AUC",
        "roc_curve": "ROC curve AUC",
        "kendall_tau": "Kendall's tau-b",
        "gini_mean_difference": "Gini mean difference",
        "summarize": "summary MMD² (vs greedy)",
        "gini_coefficient": "Gini coefficient",
        "collision_probability": "collision probability",
        "hosmer_lemeshow": "Hosmer–Lemeshow H",
        "range_counts": "range share [0, d/8)",
    }
    for public, label in expected.items():
        assert label in labels, f"the demo has no {label!r} row for privstats.{public}"
    for r in result["rows"]:
        assert r["model"] in ("local", "shuffle", "secure", "central")
        if r["estimate"] is not None:
            assert r["abs_error"] == pytest.approx(abs(r["estimate"] - r["exact"]))


def _exact_reference(label: str, seed: int):
    """Non-private values computed here independently of the demo's own exact code."""
    if label == "frequency of item 0":
        return np.mean(demo.demo_data("zipf", "small", seed) == 0)
    first = re.search(r", first (\d+) users$", label)  # a costly row run on the first users only
    m = int(first.group(1)) if first else None
    if label.startswith("range share [0, d/8)"):
        z = demo.demo_data("zipf", "small", seed)[:m]
        return np.count_nonzero(z <= demo.SIZES["small"].domain // 8 - 1) / z.size
    if label == "ECDF F(40)":
        return np.mean(demo.demo_data("incomes", "small", seed) <= 40.0)
    if label.startswith("median"):
        x = np.sort(demo.demo_data("incomes", "small", seed)[:m])
        return x[math.ceil(0.5 * x.size) - 1]
    if label == "Gini mean difference":
        return pdist(demo.demo_data("incomes", "small", seed)[:, None], "cityblock").mean()
    if label == "Gini coefficient":
        x = demo.demo_data("incomes", "small", seed)
        return pdist(x[:, None], "cityblock").sum() / (x.size**2 * x.mean())
    if label == "collision probability":
        from scipy.special import comb

        _, counts = np.unique(demo.demo_data("zipf", "small", seed), return_counts=True)
        return comb(counts, 2).sum() / comb(counts.sum(), 2)
    if label == "Kendall's tau-b":
        return stats.kendalltau(*demo.demo_data("ordinal", "small", seed)).statistic
    if label == "AUC (synthetic scores)":
        from sklearn.metrics import roc_auc_score

        return roc_auc_score(*demo.demo_data("scores", "small", seed))
    if label == "Hosmer–Lemeshow H":
        y, p = demo.demo_data("scores", "small", seed)
        order = np.argsort(p, kind="stable")
        ps = p[order]
        h = 0.0
        lo = -np.inf
        for q in range(1, 11):  # groups (t_{q-1}, t_q], t_q the smallest p with F(p) >= q/10
            hi = ps[math.ceil(q * p.size / 10) - 1] if q < 10 else np.inf
            m = (p > lo) & (p <= hi)
            e1, e0, o1 = p[m].sum(), (1 - p[m]).sum(), y[m].sum()
            h += (o1 - e1) ** 2 / e1 + ((m.sum() - o1) - e0) ** 2 / e0
            lo = hi
        return h
    if label in ("AUC", "ROC curve AUC"):
        from sklearn.metrics import roc_auc_score

        return roc_auc_score(*demo.demo_data("breast_cancer", "small", seed))
    if label.startswith("summary"):
        import privstats

        owners, target = demo.demo_data("digits", "small", seed)
        res = demo._call(
            privstats.summarize,
            owners,
            target,
            size=demo.SIZES["small"].summary_size,
            method="greedy",
            rng=demo.scenario_seed(seed, "greedy"),
        )
        return res.mmd2
    raise AssertionError(f"no reference for {label!r}")


def test_demo_exact_values_equal_nonprivate_computations(small_demo):
    result, _, _ = small_demo
    for r in result["rows"]:
        assert r["exact"] == pytest.approx(_exact_reference(r["statistic"], SEED), rel=1e-12, abs=1e-12), r


def test_exact_reference_catches_a_wrong_value():
    # the comparison above can fail: a shifted exact value is rejected
    ref = _exact_reference("Kendall's tau-b", SEED)
    assert ref + 1e-6 != pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert demo.gini_mean_difference_exact([1.0, 2.0, 4.0]) == pytest.approx((1 + 3 + 2) / 3)


def test_demo_report_and_png_figures(small_demo):
    result, out, _ = small_demo
    import matplotlib.image as mpimg

    report = out / "report.md"
    assert result["report"] == str(report) and report.exists()
    text = report.read_text(encoding="utf-8")
    assert "Frequency oracles" in text and "Statistics under each trust model" in text
    figures = result["figures"]
    assert any(f.endswith("oracles_error_vs_epsilon.png") for f in figures)
    assert any(f.endswith("ecdf.png") for f in figures)
    assert any(f.endswith("roc.png") for f in figures)
    if result["rows"]:
        assert any(f.endswith("error_vs_epsilon.png") for f in figures)
    for f in figures:
        data = Path(f).read_bytes()
        assert data[:8] == PNG_SIGNATURE, f
        img = mpimg.imread(f)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
        assert img.std() > 0.01, f"{f} is blank"
        name = f.rsplit("/", 1)[-1]
        assert f"]({name})" in text


def test_demo_plain_text_table_and_report_path(tmp_path):
    out = tmp_path / "rep"
    proc = run_cli("demo", "--size", "tiny", "--only", "oracles", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout  # no terminal escapes when piped
    assert "oracle" in proc.stdout and "GRR" in proc.stdout and "max abs error" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == f"Report: {out / 'report.md'}"
    assert (out / "report.md").exists()


@pytest.mark.skipif(shutil.which("privstats") is None, reason="console script not on PATH")
def test_console_script_help():
    a = subprocess.run(["privstats", "demo", "--help"], capture_output=True, text=True, timeout=60)
    assert a.returncode == 0 and "--size" in a.stdout and "--out" in a.stdout


@pytest.mark.parametrize("command", [[], ["demo"], ["estimate"], ["experiment"]])
def test_help_everywhere(command, capsys):
    from privstats.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert "usage: privstats" in capsys.readouterr().out


def test_bad_size_exits_2(capsys):
    from privstats.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--size", "huge"])
    assert exc.value.code == 2 and "--size" in capsys.readouterr().err


def test_unimportable_scenario_is_skipped_with_a_note(monkeypatch):
    import privstats

    monkeypatch.setattr(privstats, "_LAZY", {**privstats._LAZY, "kendall_tau": "privstats.no_such_module"})
    monkeypatch.delitem(privstats.__dict__, "kendall_tau", raising=False)
    notes = []
    result = demo.collect("tiny", scenarios=["kendall"], log=notes.append)
    assert result.rows == []
    assert any("kendall" in u for u in result.unavailable) and any("kendall" in n for n in notes)
    importlib.import_module("privstats")


def test_frequency_scenario_reads_count_estimates(monkeypatch):
    """The frequencies scenario on a stand-in function with the issue-5 signature (local: GRR)."""
    import privstats
    from privstats.local import GRR

    calls = []

    def fake_frequencies(values, *, domain, epsilon, delta=0.0, model="shuffle", rng=None):
        calls.append(model)
        if model != "local":
            raise ValueError(f"model must be 'local' here, got {model!r}")
        oracle = GRR(domain, epsilon)
        return oracle.estimate(oracle.simulate(values, rng=rng))

    monkeypatch.setitem(privstats.__dict__, "frequencies", fake_frequencies)
    result = demo.collect("small", seed=SEED, scenarios=["frequencies"], epsilons=(2.0,))
    assert calls == ["local", "shuffle", "central"]  # frequencies offers no secure model: not called
    (row,) = result.rows
    zipf = demo.demo_data("zipf", "small", SEED)
    assert row["model"] == "local" and row["protocol"] == "grr" and row["bits_per_user"] == 6
    assert row["exact"] == np.mean(zipf == 0)
    # a share (count / n) with its standard error on the same scale
    assert abs(row["estimate"] - row["exact"]) < 5 * row["stderr"] and row["stderr"] < 0.05
    assert "max |error|" in row["note"]
    assert sum("frequencies [" in u for u in result.unavailable) == 3


def test_cli_scenario_choices_match_the_demo():
    from privstats import cli

    assert list(demo.SCENARIOS) == cli.DEMO_SCENARIOS


def test_every_trust_model_of_quantiles_and_ranges_runs():
    result = demo.collect("tiny", scenarios=["quantiles", "range_counts"])
    assert {r["model"] for r in result.rows if r["statistic"] == "median"} == {
        "local",
        "shuffle",
        "secure",
        "central",
    }
    assert {r["model"] for r in result.rows if r["statistic"].startswith("range share")} == {
        "local",
        "shuffle",
        "central",
    }


def test_demo_report_notes_list_the_runs_caveats(small_demo):
    result, out, _ = small_demo
    notes = result["notes"]
    text = (out / "report.md").read_text(encoding="utf-8")
    notes_section = text.split("## Notes", 1)[1]
    assert "None." not in notes_section
    for note in notes:
        assert note in notes_section
    assert any("simulation" in n and "rng=None" in n for n in notes)
    # the 'secure' summarization row's curator sees the raw points it fetches: said in the notes
    assert any("summarization" in n and "curator" in n and "raw points" in n for n in notes)
    # a row run on a subset of the users, and the rows run at the headline ε only, are listed
    subset_rows = [r for r in result["rows"] if "first" in r["statistic"]]
    assert subset_rows and any(f"first {demo.SHUFFLE_RANGE_USERS} of" in n for n in notes)
    for statistic, model in demo.HEADLINE_ONLY:
        assert any(n.startswith(f"{statistic} [{model}] runs at the headline ε") for n in notes), statistic
        eps = {
            r["epsilon"]
            for r in result["rows"]
            if r["model"] == model and r["statistic"] in _LABELS[statistic]
        }
        assert eps <= {1.0}


_LABELS = {
    "frequencies": {"frequency of item 0"},
    "range_counts": {"range share [0, d/8)", f"range share [0, d/8), first {demo.SHUFFLE_RANGE_USERS} users"},
    "quantiles": {"median", f"median, first {demo.SHUFFLE_QUANTILE_USERS} users"},
    "roc_curve": {"ROC curve AUC"},
}


def test_demo_prints_its_time_and_help_promises_none(tmp_path, capsys):
    proc = run_cli("demo", "--size", "tiny", "--only", "gini", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    finished = proc.stdout.strip().splitlines()[-2]
    assert re.fullmatch(r"Demo finished in \d+\.\d s \(statistics .* s of CPU\)\.", finished), finished
    from privstats.cli import main

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    help_text = capsys.readouterr().out
    assert "min" not in help_text.replace("minimum", "")


def test_every_series_of_a_figure_has_its_own_colour_and_marker():
    from privstats.plotting import _MODEL_STYLE, series_styles

    names = ["GRR", "OUE", "OLH", "HadamardResponse", "best_oracle → OUE", "BinaryRR (item 0 vs rest)"]
    styles = series_styles(names)
    assert len({c for c, _ in styles.values()}) == len(names)
    assert len({m for _, m in styles.values()}) == len(names)
    mixed = series_styles(["local", "GRR", "central", "OUE", "shuffle", "secure"])
    assert len(set(mixed.values())) == 6 and mixed["central"] == _MODEL_STYLE["central"]


def test_rows_carry_the_planners_pick():
    """privstats.plan's predicted-best model is marked, and the demo does not call models a statistic lacks."""
    from privstats.plan import SUPPORTED, plan

    result = demo.collect("tiny", scenarios=["kendall", "frequencies"], epsilons=(1.0,))
    for statistic, public in (("Kendall's tau-b", "kendall_tau"), ("frequency of item 0", "frequencies")):
        rows = {r["model"]: r for r in result.rows if r["statistic"] == statistic}
        assert set(rows) == set(SUPPORTED[public])
        n = demo.SIZES["tiny"].n_pairs if public == "kendall_tau" else demo.SIZES["tiny"].n_freq
        kw = {"bounds": (0.0, 6.0)} if public == "kendall_tau" else {"domain": demo.SIZES["tiny"].domain}
        options = plan(public, n=n, epsilon=1.0, delta=demo.SHUFFLE_DELTA, warn=False, **kw)
        assert rows[options.best.model]["plan"] == "best"
        no_curator = next(o.model for o in options if o.model != "central")
        assert rows[no_curator]["plan"] == "best w/o curator"
        assert sum(bool(r["plan"]) for r in rows.values()) == 2
