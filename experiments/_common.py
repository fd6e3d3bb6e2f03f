"""Shared plumbing of the reproduction scripts: options, progress, tables, figures, fidelity rows.

Every experiment ``NAME.py`` builds its parser with :func:`parser` (``--out`` defaults to
``./privstats-experiments/NAME``, never the source tree; ``--smoke``; ``--seed``; ``--runs``),
reports progress with :class:`Progress` (a bar on a terminal, a few plain lines otherwise),
prints its tables with :func:`show` (rich on a terminal, aligned text when piped) and writes
``fidelity.json`` (paper claim → our figure → verdict) and ``meta.json`` (runs, seeds, time) with
:func:`finish`.  ``all.py`` gathers them into ``fidelity.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_ROOT = "privstats-experiments"
VERDICTS = ("reproduced", "partly", "disagrees", "inconclusive", "not reproduced")


def parser(
    name: str, doc: str | None, *, runs: int | None = None, runs_help: str = "runs per point"
) -> argparse.ArgumentParser:
    """The common options of every experiment (``privstats experiment NAME --help`` shows them)."""
    ap = argparse.ArgumentParser(
        prog=f"privstats experiment {name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_ROOT) / name,
        metavar="DIR",
        help=f"output directory (default: {DEFAULT_ROOT}/{name} under the current directory)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, seconds (what CI runs)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of data and simulated noise (default 0)")
    if runs is not None:
        ap.add_argument(
            "--runs", type=int, default=runs, help=f"{runs_help} (default {runs}; --smoke uses 2)"
        )
    return ap


def prepare(args: argparse.Namespace) -> Path:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return out


class Progress:
    """A progress bar over ``total`` steps: rich on a terminal, ~10 plain lines on stderr otherwise."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.done = max(1, int(total)), label, 0
        self.t0 = time.perf_counter()
        self._next_line = 0.1
        self._rich = None
        if sys.stderr.isatty() and not os.environ.get("PRIVSTATS_NO_PROGRESS"):
            try:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
                from rich.progress import (
                    Progress as RichProgress,
                )

                self._rich = RichProgress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    transient=True,
                )
            except ImportError:
                self._rich = None

    def __enter__(self) -> Progress:
        if self._rich is not None:
            self._rich.start()
            self._task = self._rich.add_task(self.label, total=self.total)
        return self

    def advance(self, k: int = 1) -> None:
        self.done += k
        if self._rich is not None:
            self._rich.update(self._task, advance=k)
            return
        frac = self.done / self.total
        if frac >= self._next_line and not os.environ.get("PRIVSTATS_NO_PROGRESS"):
            el = time.perf_counter() - self.t0
            eta = el / frac * (1 - frac) if frac > 0 else float("nan")
            print(
                f"  {self.label}: {self.done}/{self.total} ({100 * frac:.0f}%), {el:.0f} s, eta {eta:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            while self._next_line <= frac:
                self._next_line += 0.1

    def __exit__(self, *exc: Any) -> None:
        if self._rich is not None:
            self._rich.stop()


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lower, upper): Student-t confidence interval of the mean of ``values``."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(v.mean())
    if v.size < 2:
        return m, m, m
    h = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - h, m + h


def fit_slope(x, y, *, log: bool = True, level: float = 0.95) -> tuple[float, float, float]:
    """Least-squares slope of log y on log x (every run a point) with its t confidence interval."""
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & ((x > 0) & (y > 0) if log else True)
    x, y = x[ok], y[ok]
    if log:
        x, y = np.log(x), np.log(y)
    if x.size < 3 or np.ptp(x) == 0:
        return float("nan"), float("nan"), float("nan")
    res = stats.linregress(x, y)
    h = float(stats.t.ppf(0.5 + level / 2, x.size - 2) * res.stderr)
    return float(res.slope), float(res.slope - h), float(res.slope + h)


def show(title: str, rows: list[dict], columns: list[tuple[str, str]]) -> None:
    """Print a table (rich on a terminal, aligned text when piped)."""
    from privstats.report import print_table

    print_table(title, rows, columns)


def write_rows(out: Path, stem: str, rows: list[dict], columns: list[tuple[str, str]] | None = None) -> None:
    """``stem.csv`` (every key) and ``stem.md`` (``columns``, or every key)."""
    from privstats.report import markdown_table

    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    cols = columns or [(k, k) for k in keys]
    (out / f"{stem}.md").write_text(markdown_table(rows, cols) + "\n", encoding="utf-8")


def publish(out: Path, text: str, md: Path | None) -> None:
    """Write a real-data table to OUT/table.md (and to ``md`` if given) and print it."""
    (out / "table.md").write_text(text)
    if md:
        md.write_text(text)
    print(text)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "font.size": 8,
            "axes.titlesize": 9,
            "legend.fontsize": 7,
            "lines.markersize": 4,
        }
    )
    return plt


def savefig(fig, path: Path, dpi: int = 100) -> Path:
    """Save a compact PNG (``dpi`` 100; reduced until it is under 150 KB)."""
    plt = pyplot()
    from matplotlib.ticker import NullFormatter

    for ax in fig.get_axes():  # log axes: no minor tick labels (they overlap on short ranges)
        if ax.get_xscale() == "log":
            ax.xaxis.set_minor_formatter(NullFormatter())
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    while path.stat().st_size > 150_000 and dpi > 60:
        dpi -= 15
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def band(ax, x, rows: list[dict], key: str, label: str, **kw) -> None:
    """Plot the mean of ``key`` with its 95 % confidence band (keys ``key``, ``key_lo``, ``key_hi``)."""
    m = [r[key] for r in rows]
    (line,) = ax.plot(x, m, marker=kw.pop("marker", "o"), label=label, **kw)
    lo, hi = [r.get(f"{key}_lo", np.nan) for r in rows], [r.get(f"{key}_hi", np.nan) for r in rows]
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)


def put_ci(row: dict, key: str, values) -> dict:
    m, lo, hi = mean_ci(values)
    row[key], row[f"{key}_lo"], row[f"{key}_hi"] = m, lo, hi
    return row


def verdict(ok: bool | None, yes: str = "reproduced", no: str = "disagrees") -> str:
    return "inconclusive" if ok is None else (yes if ok else no)


def finish(
    out: Path,
    name: str,
    *,
    paper: str,
    fidelity: list[dict],
    runs: Any,
    seed: int,
    t0: float,
    smoke: bool,
    notes: str = "",
) -> None:
    """Write ``fidelity.json`` and ``meta.json`` and print the fidelity rows.

    Each fidelity row: ``figure`` (the paper's label), ``claim`` (what the paper states),
    ``ours`` (our figure file), ``verdict`` (one of :data:`VERDICTS`, optionally ``: reason``),
    ``evidence`` (the measured numbers behind the verdict).
    """
    seconds = time.perf_counter() - t0
    meta = {
        "experiment": name,
        "paper": paper,
        "runs": runs,
        "seed": seed,
        "seconds": round(seconds, 1),
        "smoke": smoke,
        "notes": notes,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    for row in fidelity:
        row.setdefault("paper", paper)
        row.setdefault("experiment", name)
    (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    (out / "fidelity.json").write_text(json.dumps(fidelity, indent=1), encoding="utf-8")
    show(
        f"{name}: fidelity ({seconds:.0f} s, runs {runs}, seed {seed})",
        fidelity,
        [("figure", "figure"), ("verdict", "verdict"), ("evidence", "evidence")],
    )
