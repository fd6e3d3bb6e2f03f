"""The demo's report (Markdown + PNG figures) and the ``privstats demo`` command."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from privstats.demo.collect import collect
from privstats.demo.config import (
    HEADLINE_EPSILON,
    INCOME_BOUNDS,
    ORACLE_COLUMNS,
    ORDINAL_LEVELS,
    ROW_COLUMNS,
    SHUFFLE_DELTA,
    SIZES,
)
from privstats.demo.running import DemoResult


# ----------------------------------------------------------------------------- report
def write_report(result: DemoResult, out_dir: Path) -> Path:
    """Markdown report with PNG figures in ``out_dir``; returns the Markdown file's path."""
    from privstats.plotting import matplotlib_available
    from privstats.report import write_markdown_report

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, str]] = []
    if matplotlib_available():
        figures = _figures(result, out_dir)
    else:
        result.notes.append("figures skipped: matplotlib is not installed (pip install 'privstats[plot]')")
    result.figures = [str(out_dir / f) for _, f in figures]
    sections = _sections(result, figures)
    path = write_markdown_report(out_dir / "report.md", title="privstats demo report", sections=sections)
    result.report = str(path)
    return path


def _figures(result: DemoResult, out_dir: Path) -> list[tuple[str, str]]:
    """Draw the PNG figures; returns (caption, file name) pairs."""
    from privstats.plotting import plot_ecdf, plot_error_vs_epsilon, plot_roc

    figures: list[tuple[str, str]] = []
    ecdf = result.curves.get("ecdf")
    if ecdf and ecdf["private"]:
        plot_ecdf(
            out_dir / "ecdf.png",
            ecdf["grid"],
            exact=ecdf["exact"],
            private=ecdf["private"],
            bands=ecdf["bands"],
            title=f"Incomes ECDF: private (ε={_headline_of(result):g}) vs exact",
            xlabel="income (thousands)",
        )
        figures.append(("Private vs exact ECDF with 95% confidence band", "ecdf.png"))
    roc = result.curves.get("roc")
    if roc and roc["private"]:
        plot_roc(
            out_dir / "roc.png",
            exact=roc["exact"],
            private=roc["private"],
            title=f"Breast cancer ROC: private (ε={_headline_of(result):g}) vs exact",
        )
        figures.append(("Private vs exact ROC curve", "roc.png"))
    scalar_rows = [r for r in result.rows if r["abs_error"] is not None]
    if scalar_rows:
        plot_error_vs_epsilon(out_dir / "error_vs_epsilon.png", scalar_rows)
        figures.append(("Absolute error vs ε per trust model", "error_vs_epsilon.png"))
    if result.oracle_rows:
        plot_error_vs_epsilon(
            out_dir / "oracles_error_vs_epsilon.png",
            [
                {
                    "statistic": "frequency oracles (Zipf)",
                    "model": r["oracle"],
                    "epsilon": r["epsilon"],
                    "abs_error": r["max_abs_error"],
                    "stderr": r["exact_std"],
                }
                for r in result.oracle_rows
            ],
            title="frequency oracles on Zipf data: max |error| and exact std vs ε",
            ylabel="relative frequency: max |error| (markers), exact std (dashed)",
            legend_title="oracle",
        )
        figures.append(
            ("Frequency oracles: max abs error and exact std vs ε", "oracles_error_vs_epsilon.png")
        )
    return figures


def _sections(result: DemoResult, figures: list[tuple[str, str]]) -> list[tuple[str, str]]:
    from privstats.report import markdown_table

    cfg = SIZES[result.size]
    return [
        (
            "Run",
            f"size `{result.size}`, seed {result.seed}, ε ∈ {list(result.epsilons)}, "
            f"statistics computed in {result.wall_time_s:.1f} s ({result.cpu_time_s:.1f} s of CPU). "
            f"Shuffle-model rows use δ = {SHUFFLE_DELTA:g}.\n\n"
            "Data (all generated or bundled, nothing downloaded): "
            f"Zipf(1.1) over d = {cfg.domain} items for n = {cfg.n_freq} users; "
            f"log-normal incomes for n = {cfg.n_cont}, public bounds {INCOME_BOUNDS}; "
            "scikit-learn's breast-cancer data (569 patients) scored by a logistic regression; "
            f"a calibrated synthetic score (p ~ Beta(2,5), y ~ Bernoulli(p)) for n = {cfg.n_scores}; "
            f"an ordinal {ORDINAL_LEVELS}×{ORDINAL_LEVELS} pair for n = {cfg.n_pairs}; "
            "scikit-learn's 8×8 digits split across 5 owners by digit pairs.",
        ),
        (
            "Frequency oracles (local model, Zipf data)",
            "Errors are in relative frequency (count / n); *exact std* is the square root of the oracle's "
            "exact variance averaged over the domain.\n\n"
            + markdown_table(result.oracle_rows, ORACLE_COLUMNS),
        ),
        (
            "Statistics under each trust model",
            "Exact values come from numpy / SciPy / scikit-learn (non-private). Rows with vector outputs "
            "show one scalar; the note gives the error over the whole output. *planner's pick*: the trust model "
            "`privstats.plan` predicts most accurate from the public parameters (*best*), and the most "
            "accurate one without a trusted curator (*best w/o curator*).\n\n"
            + markdown_table(result.rows, [*ROW_COLUMNS, ("note", "note")]),
        ),
        (
            "Figures",
            "\n\n".join(f"### {caption}\n\n![{caption}]({name})" for caption, name in figures)
            or "No figures (matplotlib missing or no curve-producing statistic available).",
        ),
        ("Not available in this build", "\n".join(f"- {u}" for u in result.unavailable) or "Everything ran."),
        ("Notes", "\n".join(f"- {n}" for n in result.notes) or "None."),
    ]


def _headline_of(result: DemoResult) -> float:
    return HEADLINE_EPSILON if HEADLINE_EPSILON in result.epsilons else result.epsilons[0]


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None  # strict JSON has no NaN / Infinity
    return x


def run_demo(
    size: str = "full",
    *,
    out: str | Path | None = None,
    seed: int = 2024,
    epsilons=None,
    scenarios=None,
    as_json: bool = False,
    stream: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The ``privstats demo`` command: run, print the tables, write the report, print its path."""
    from privstats.report import print_table, use_rich

    stream = sys.stdout if stream is None else stream
    err = sys.stderr if err is None else err

    def log(text: str) -> None:
        print(text, file=err, flush=True)

    t0, c0 = time.perf_counter(), time.process_time()
    result = collect(
        size,
        seed=seed,
        epsilons=epsilons,
        scenarios=scenarios,
        log=log,
        progress=use_rich(err) and not as_json,
    )
    out_dir = Path(out) if out is not None else Path.cwd() / "privstats-report"
    write_report(result, out_dir)
    total = time.perf_counter() - t0
    if as_json:
        json.dump(
            _jsonable({**result.to_dict(), "total_time_s": total, "total_cpu_s": time.process_time() - c0}),
            stream,
            indent=1,
            allow_nan=False,
        )
        print(file=stream)
        return 0
    if result.oracle_rows:
        print_table(
            "Frequency oracles on Zipf data (local model; errors in relative frequency)",
            result.oracle_rows,
            ORACLE_COLUMNS,
            stream,
        )
    headline = _headline_of(result)
    rows = [r for r in result.rows if r["epsilon"] == headline] or result.rows
    if rows:
        print_table(
            f"Statistics under each trust model (ε = {headline:g}; all ε in the report)",
            rows,
            ROW_COLUMNS,
            stream,
        )
    if result.unavailable:
        print("\nNot available in this build:", file=stream)
        for u in result.unavailable:
            print(f"  - {u}", file=stream)
    print(
        f"\nDemo finished in {total:.1f} s (statistics {result.wall_time_s:.1f} s, report and figures "
        f"{total - result.wall_time_s:.1f} s; {time.process_time() - c0:.1f} s of CPU).",
        file=stream,
    )
    print(f"Report: {result.report}", file=stream)
    return 0
