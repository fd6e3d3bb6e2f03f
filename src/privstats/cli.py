"""The ``privstats`` command line.

Commands::

    privstats demo [--size tiny|small|full] [--out DIR] [--json]
    privstats estimate STATISTIC --input FILE --column COL [--label COL] --epsilon E
                       [--model M] [--method X] [--bounds LO HI] [--json] ...
    privstats plan STATISTIC --n N --epsilon E [--delta D] [--bounds LO HI] [--model M] [--json]
    privstats experiment NAME [args...]      |   privstats experiment --list
    privstats aggregate --protocol ... --input reports.parquet [...]

Bad input (a missing column, a non-numeric column, missing public bounds, an invalid
ε) exits with status 2 and a message naming the option.  Tables use rich on a
terminal and plain text when piped.

>>> build_parser().parse_args(["demo", "--size", "small"]).size
'small'
>>> main(["estimate", "ecdf", "--input", "x.csv", "--column", "v", "--epsilon", "1"])  # no --bounds
2
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CLIError", "experiments_dir", "main", "read_columns"]


class CLIError(Exception):
    """A user error: printed as ``privstats <command>: error: <message>`` with exit status 2."""


# ----------------------------------------------------------------------------- argument parsing
def _epsilon(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def _epsilon_list(text: str) -> tuple[float, ...]:
    return tuple(_epsilon(t) for t in text.replace(" ", "").split(",") if t)


def _delta(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}") from None
    if not (0 <= v < 1):
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text!r}")
    return v


STATISTICS = {
    # name: (public function, needs bounds, needs a label column, number of value columns)
    "frequencies": ("frequencies", False, False, 1),
    "ecdf": ("ecdf", True, False, 1),
    "quantiles": ("quantiles", True, False, 1),
    "auc": ("auc", True, True, 1),
    "roc": ("roc_curve", True, True, 1),
    "kendall_tau": ("kendall_tau", False, False, 2),  # bounds: only the local model quantises
    "gini_mean_difference": ("gini_mean_difference", True, False, 1),
    "gini_coefficient": ("gini_coefficient", True, False, 1),
    "collision_probability": ("collision_probability", False, False, 1),
}


DEMO_SCENARIOS = [
    "oracles",
    "frequencies",
    "range_counts",
    "ecdf",
    "quantiles",
    "auc",
    "auc_scale",
    "roc",
    "hosmer_lemeshow",
    "kendall",
    "gini",
    "gini_coefficient",
    "collision",
    "summarization",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privstats",
        description="Differentially private statistics over distributed data: local, shuffle, secure "
        "and central trust models.",
        epilog="Run 'privstats COMMAND --help' for the options of a command.",
    )
    from privstats import __version__

    parser.add_argument("--version", action="version", version=f"privstats {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run every statistic under every trust model and write a report",
        description="Run every statistic under every trust model on bundled or "
        "generated data, print a table and write a Markdown+PNG report.",
    )
    demo.add_argument(
        "--size",
        choices=["tiny", "small", "full"],
        default="full",
        help="problem size: full (default; the run prints its own time), small (tests), tiny (smoke)",
    )
    demo.add_argument("--out", metavar="DIR", help="report directory (default ./privstats-report)")
    demo.add_argument("--seed", type=int, default=2024, help="seed of the data and of the simulated noise")
    demo.add_argument(
        "--epsilons",
        type=_epsilon_list,
        metavar="E1,E2,...",
        help="privacy budgets to run (default depends on --size)",
    )
    demo.add_argument(
        "--only",
        action="append",
        metavar="SCENARIO",
        choices=DEMO_SCENARIOS,
        help="run only this scenario (repeatable): " + ", ".join(DEMO_SCENARIOS),
    )
    demo.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")

    from privstats.plan import DEFAULT_MODEL, SUPPORTED

    models_help = "; ".join(
        f"{name}: {', '.join(SUPPORTED[fn])}" for name, (fn, *_rest) in sorted(STATISTICS.items())
    )
    est = sub.add_parser(
        "estimate",
        help="private estimate of one statistic on a CSV or Parquet file",
        description="Private estimate of one statistic on a CSV or Parquet file, with the "
        "guarantee spent. Noise comes from the OS CSPRNG unless --seed is given. "
        f"Trust models per statistic (default {DEFAULT_MODEL}): {models_help}.",
    )
    est.add_argument(
        "statistic",
        choices=sorted(STATISTICS),
        metavar="STATISTIC",
        help="one of: " + ", ".join(sorted(STATISTICS)),
    )
    est.add_argument("--input", required=True, metavar="FILE", help="a .csv or .parquet file")
    est.add_argument(
        "--column",
        required=True,
        nargs="+",
        metavar="COL",
        help="the value column (two columns for kendall_tau)",
    )
    est.add_argument("--label", metavar="COL", help="binary label column (auc, roc)")
    est.add_argument("--epsilon", required=True, type=_epsilon, help="privacy budget ε > 0")
    est.add_argument("--delta", type=_delta, help="δ for (ε, δ) protocols (e.g. the shuffle model)")
    est.add_argument(
        "--model",
        choices=["local", "shuffle", "secure", "central"],
        help=f"trust model (default {DEFAULT_MODEL}); supported per statistic: {models_help}",
    )
    est.add_argument("--method", help="protocol / method name understood by the statistic")
    est.add_argument(
        "--bounds",
        nargs=2,
        type=float,
        metavar=("LO", "HI"),
        help="public bounds of the values (required for ranked and continuous statistics; "
        "never derived from the data, which would leak it)",
    )
    est.add_argument(
        "--domain-size",
        type=int,
        metavar="D",
        help="frequencies, collision_probability: items are integers 0..D-1; auc: bins",
    )
    est.add_argument(
        "--bins", type=int, metavar="K", help="quantisation bins (kendall_tau, gini_mean_difference)"
    )
    est.add_argument("--grid", type=int, metavar="N", help="ecdf, quantiles, roc: grid size")
    est.add_argument(
        "--categories", metavar="A,B,...", help="frequencies of a text column: the public list of categories"
    )
    est.add_argument(
        "--quantiles",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 0.75],
        metavar="Q",
        help="quantile levels (quantiles; default 0.25 0.5 0.75)",
    )
    est.add_argument("--at", type=float, nargs="+", metavar="T", help="ecdf: points at which to evaluate F")
    est.add_argument(
        "--seed", type=int, help="seeded (reproducible, simulation-only) noise instead of the CSPRNG"
    )
    est.add_argument("--json", action="store_true", help="machine-readable output")

    pl = sub.add_parser(
        "plan",
        help="predicted error and cost of every trust model for a statistic",
        description="From public parameters only: every (trust model, protocol, parameters) "
        "that can compute STATISTIC, its predicted standard error (bias included), "
        "communication per user and the trust it needs, sorted by error.",
    )
    pl.add_argument(
        "statistic",
        choices=sorted(SUPPORTED),
        metavar="STATISTIC",
        help="one of: " + ", ".join(sorted(SUPPORTED)),
    )
    pl.add_argument("--n", required=True, type=float, help="number of users (1e5 is accepted)")
    pl.add_argument("--epsilon", required=True, type=_epsilon, help="privacy budget ε > 0")
    pl.add_argument("--delta", type=_delta, default=0.0, help="δ (default 0: pure-DP protocols only)")
    pl.add_argument("--bounds", nargs=2, type=float, metavar=("LO", "HI"), help="public bounds of the values")
    pl.add_argument("--model", choices=["local", "shuffle", "secure", "central"], help="keep one trust model")
    pl.add_argument(
        "--domain-size",
        type=int,
        metavar="D",
        help="frequencies, range_counts, heavy_hitters, collision_probability: domain size",
    )
    pl.add_argument(
        "--positives", type=float, metavar="N1", help="auc, roc_curve: number of positives (default n/2)"
    )
    pl.add_argument(
        "--kernel-range", nargs=2, type=float, metavar=("LO", "HI"), help="ustatistic: the kernel's range"
    )
    pl.add_argument("--json", action="store_true", help="machine-readable output")

    exp = sub.add_parser(
        "experiment",
        help="run a paper reproduction from experiments/",
        description="Run a reproduction script from the repository's experiments/ "
        "directory; arguments after NAME go to the script (try NAME --help). "
        "'privstats experiment all --out DIR' runs every one and writes the "
        "fidelity table DIR/fidelity.md. Outputs go to --out (default "
        "./privstats-experiments/NAME), never into the source tree.",
    )
    exp.add_argument("name", nargs="?", metavar="NAME", help="experiment name (see --list)")
    exp.add_argument("--list", action="store_true", help="list the experiments")

    sub.add_parser(
        "aggregate",
        help="aggregate stored reports (privstats.engine); see 'aggregate --help'",
        add_help=False,
    )
    _add_service_parsers(sub)
    from privstats.services.dap.cli import add_parser as _add_dap_parser  # DAP-09 deployment

    _add_dap_parser(sub)
    return parser


# ----------------------------------------------------------------------------- input files
def read_columns(path: str | Path, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Named columns of a CSV or Parquet file as numpy arrays (strings kept as object arrays)."""
    path = Path(path)
    if not path.exists():
        raise CLIError(f"--input: file not found: {path}")
    if not path.is_file():
        raise CLIError(f"--input: {path} is a directory, not a file; give a .csv or .parquet file")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise CLIError(
                "--input: reading Parquet needs pyarrow (pip install 'privstats[arrow]')"
            ) from None
        try:
            schema = pq.read_schema(path)
        except Exception as exc:
            raise CLIError(f"--input: cannot read Parquet file {path}: {exc}") from None
        _check_present(columns, schema.names, path)
        table = pq.read_table(path, columns=list(dict.fromkeys(columns)))
        out = {}
        for name in columns:
            col = table.column(name)
            if col.null_count:
                raise CLIError(f"--column/--label: column {name!r} has {col.null_count} missing values")
            out[name] = col.to_numpy(zero_copy_only=False)
        return out
    if suffix not in (".csv", ".txt", ".tsv"):
        raise CLIError(f"--input: unsupported file type {suffix!r} (use .csv or .parquet)")
    try:
        # utf-8-sig: a UTF-8 byte-order mark (Excel's CSV export) is dropped instead of sticking to the first name
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"--input: {path} is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8 CSV"
        ) from None
    except OSError as exc:
        raise CLIError(f"--input: cannot read {path}: {exc.strerror or exc}") from None
    with io.StringIO(text, newline="") as fh:
        reader = csv.reader(fh, delimiter="\t" if suffix == ".tsv" else ",")
        header = next(reader, None)
        if header is None:
            raise CLIError(f"--input: {path} is empty")
        header = [h.strip() for h in header]
        _check_present(columns, header, path)
        idx = {name: header.index(name) for name in columns}
        cells: dict[str, list[str]] = {name: [] for name in columns}
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            for name, i in idx.items():
                value = row[i].strip() if i < len(row) else ""
                if value == "":
                    raise CLIError(f"--column/--label: column {name!r} has a missing value on line {lineno}")
                cells[name].append(value)
    if not any(cells.values()) or not cells[columns[0]]:
        raise CLIError(f"--input: {path} has no data rows")
    out = {}
    for name, values in cells.items():
        try:
            out[name] = np.array([float(v) for v in values])
        except ValueError:
            out[name] = np.array(values, dtype=object)
    return out


def _check_present(columns, available, path) -> None:
    missing = [c for c in columns if c not in available]
    if missing:
        raise CLIError(
            f"--column/--label: column(s) {missing} not in {Path(path).name} "
            f"(columns: {', '.join(map(str, available))})"
        )


def _numeric(values: np.ndarray, option: str, name: str) -> np.ndarray:
    if values.dtype.kind in "iuf":
        return values.astype(float)
    if values.dtype.kind == "b":
        return values.astype(float)
    bad = next((v for v in values if not _is_float(v)), None)
    raise CLIError(f"{option}: column {name!r} must be numeric, found {bad!r}")


def _is_float(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _labels(values: np.ndarray, name: str) -> np.ndarray:
    if values.dtype.kind == "O" or values.dtype.kind in "SU":
        lowered = np.array([str(v).strip().lower() for v in values])
        mapping = {"true": 1, "false": 0, "yes": 1, "no": 0}
        if set(lowered) <= set(mapping):
            return np.array([mapping[v] for v in lowered])
        raise CLIError(
            f"--label: column {name!r} must hold two classes coded 0/1, -1/1 or true/false, "
            f"got {sorted(set(lowered))[:5]}"
        )
    return values


# ----------------------------------------------------------------------------- estimate
def _estimate(args) -> int:
    import privstats

    fname, needs_bounds, needs_label, n_columns = STATISTICS[args.statistic]
    if len(args.column) != n_columns:
        raise CLIError(f"--column: {args.statistic} needs {n_columns} column name(s), got {len(args.column)}")
    if needs_label and not args.label:
        raise CLIError(f"--label: {args.statistic} needs a binary label column (--label COL)")
    if needs_bounds and args.bounds is None:
        raise CLIError(
            f"--bounds: {args.statistic} needs public bounds --bounds LO HI (known without looking "
            "at the data; deriving them from the data would leak it)"
        )
    if args.bounds is not None and not args.bounds[0] < args.bounds[1]:
        raise CLIError(f"--bounds: LO must be < HI, got {args.bounds[0]} {args.bounds[1]}")
    wanted = list(args.column) + ([args.label] if args.label else [])
    data = read_columns(args.input, wanted)

    kw: dict = {"epsilon": args.epsilon, "rng": args.seed}
    for key in ("delta", "model", "method"):
        if getattr(args, key) is not None:
            kw[key] = getattr(args, key)
    if args.bounds is not None:
        kw["bounds"] = tuple(args.bounds)
    for key in ("bins", "grid"):
        if getattr(args, key) is not None:
            kw[key] = getattr(args, key)
    if args.domain_size is not None:
        kw["domain_size"] = args.domain_size
    col = args.column[0]
    categories = None
    if args.statistic in ("frequencies", "collision_probability"):
        values = data[col]
        if args.categories and values.dtype.kind != "O":  # numeric codes named as categories
            values = np.array(
                [f"{v:g}" if isinstance(v, float) else str(v) for v in values.tolist()], dtype=object
            )
        if values.dtype.kind == "O":
            if not args.categories:
                raise CLIError(
                    f"--categories: column {col!r} holds text; pass the public list of categories "
                    "(--categories A,B,...)"
                )
            categories = [c.strip() for c in args.categories.split(",")]
            index = {c: i for i, c in enumerate(categories)}
            unknown = sorted({v for v in values if v not in index})
            if unknown:
                raise CLIError(f"--categories: column {col!r} has values not in the list: {unknown[:5]}")
            values = np.array([index[v] for v in values], dtype=np.int64)
            domain = len(categories)
        else:
            if args.domain_size is None:
                raise CLIError(
                    f"--domain-size: {args.statistic} of an integer column needs the public domain "
                    "size (items 0..D-1), or --categories for a text column"
                )
            if np.any(values != np.round(values)):
                raise CLIError(f"--column: column {col!r} must hold integers 0..{args.domain_size - 1}")
            values = values.astype(np.int64)
            domain = args.domain_size
        kw.update(domain=domain, domain_size=domain)
        call = lambda: _call(fn, values, **kw)  # noqa: E731
    elif args.statistic == "quantiles":
        x = _numeric(data[col], "--column", col)
        call = lambda: _call(fn, x, list(args.quantiles), **kw)  # noqa: E731
    elif args.statistic in ("auc", "roc"):
        y = _labels(data[args.label], args.label)
        s = _numeric(data[col], "--column", col)
        call = lambda: _call(fn, y, s, **kw)  # noqa: E731
    elif args.statistic == "kendall_tau":
        a = _numeric(data[args.column[0]], "--column", args.column[0])
        b = _numeric(data[args.column[1]], "--column", args.column[1])
        call = lambda: _call(fn, a, b, **kw)  # noqa: E731
    else:
        x = _numeric(data[col], "--column", col)
        call = lambda: _call(fn, x, **kw)  # noqa: E731

    try:
        fn: Callable[..., Any] = getattr(privstats, fname)
    except (ImportError, AttributeError) as exc:
        raise CLIError(f"STATISTIC: privstats.{fname} is not available in this build ({exc})") from None
    import warnings

    from privstats.plan import UselessResultWarning

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UselessResultWarning)
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            raise CLIError(f"invalid input for {args.statistic}: {exc}") from None
    for w in caught:
        if issubclass(w.category, UselessResultWarning):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    elapsed = time.perf_counter() - t0

    from privstats.demo import _estimate_of, _jsonable, _roc_parts

    est = _estimate_of(out)
    record: dict = {
        "statistic": args.statistic,
        "input": str(args.input),
        "columns": args.column,
        "label": args.label,
        "time_s": elapsed,
    }
    if est is not None:
        record.update(est.to_dict())
    if args.statistic == "ecdf":
        lo, hi = args.bounds
        at = np.asarray(args.at if args.at else np.linspace(lo, hi, 11), dtype=float)
        record["at"] = at.tolist()
        record["cdf"] = np.asarray(out.evaluate(at), dtype=float).tolist()
        grid = getattr(out, "quantiles", None)
        if grid is not None:
            record["grid"] = np.asarray(grid, dtype=float).tolist()  # thresholds of value/stderr
        if getattr(out, "stderr", None) is not None and grid is not None:
            idx = np.clip(np.searchsorted(np.asarray(grid), at, side="right") - 1, 0, None)
            record["cdf_stderr"] = np.where(
                at >= np.asarray(grid)[0], np.asarray(out.stderr)[idx], 0.0
            ).tolist()
    elif args.statistic == "roc":
        fpr, tpr = _roc_parts(out)
        record.update(fpr=fpr.tolist(), tpr=tpr.tolist(), auc_of_curve=float(np.trapezoid(tpr, fpr)))
        if isinstance(out, tuple) and len(out) > 2:
            record["thresholds"] = np.asarray(out[2], dtype=float).tolist()
    elif est is None:
        record["value"] = out
    if args.statistic == "quantiles":
        record["levels"] = list(args.quantiles)
    if categories is not None:
        record["categories"] = categories
    if est is not None and est.stderr is not None:
        try:
            lo_ci, hi_ci = est.ci(0.95)
            record["ci95"] = [np.asarray(lo_ci).tolist(), np.asarray(hi_ci).tolist()]
        except ValueError:
            pass
    record = _jsonable(record)
    if args.json:
        print(json.dumps(record, allow_nan=False, default=str))
        return 0
    _print_estimate(record, est)
    return 0


def _call(fn, *args, **kwargs):
    from privstats.demo import _call as call

    return call(fn, *args, **kwargs)


def _print_estimate(record: dict, est) -> None:
    from privstats.report import fmt

    def short(v):
        if isinstance(v, list):
            items = [fmt(float(x)) if isinstance(x, (int, float)) else str(x) for x in v[:12]]
            return "[" + ", ".join(items) + (", ...]" if len(v) > 12 else "]")
        return fmt(v)

    lines = [("statistic", record["statistic"])]
    if est is not None:
        g = est.guarantee
        lines += [
            ("trust model", est.model),
            ("protocol", est.protocol or "-"),
            ("guarantee", str(g) if g is not None else "-"),
            ("neighbours", est.neighbours),
            ("n", est.n),
            ("bits per user", est.bits_per_user),
        ]
        if est.params:
            lines.append(
                (
                    "parameters",
                    ", ".join(
                        f"{k}={fmt(v)}" for k, v in est.params.items() if not isinstance(v, (list, dict))
                    ),
                )
            )
    keys = (
        ("at", "cdf", "cdf_stderr")
        if record["statistic"] == "ecdf"
        else ("categories", "levels", "auc_of_curve", "value", "stderr", "ci95")
    )
    for key in keys:
        if key in record and record[key] is not None:
            value = record[key]
            if key == "ci95":
                value = f"{short(value[0])} .. {short(value[1])}"
            lines.append((key, short(value) if key != "ci95" else value))
    lines.append(("time (s)", fmt(record["time_s"])))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v if isinstance(v, str) else fmt(v)}")


# ----------------------------------------------------------------------------- experiments
def experiments_dir() -> Path:
    """The repository's ``experiments/`` directory (next to ``src/`` in an editable install).

    The environment variable ``PRIVSTATS_EXPERIMENTS_DIR`` overrides it (e.g. for a copy of
    the scripts next to a wheel install).
    """
    import os

    import privstats

    override = os.environ.get("PRIVSTATS_EXPERIMENTS_DIR")
    path = Path(override) if override else Path(privstats.__file__).resolve().parents[2] / "experiments"
    if not path.is_dir():
        raise CLIError(
            f"NAME: the experiments/ directory was not found at {path}; experiments run from a "
            "source checkout (git clone, then pip install -e .)"
        )
    return path


def _experiments() -> dict[str, Path]:
    return {p.stem: p for p in sorted(experiments_dir().glob("*.py")) if not p.stem.startswith("_")}


def _first_doc_line(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (SyntaxError, UnicodeDecodeError):
        return ""
    return (doc or "").strip().splitlines()[0] if doc else ""


def _experiment(args, forwarded: list[str]) -> int:
    found = _experiments()
    if args.list or not args.name:
        if not found:
            print(f"No experiments in {experiments_dir()}")
            return 0 if args.list else 2
        width = max(map(len, found))
        for name, path in found.items():
            print(f"{name.ljust(width)}  {_first_doc_line(path)}")
        if not args.list:
            print("\nprivstats experiment: error: NAME is required (one of the above)", file=sys.stderr)
            return 2
        return 0
    if args.name not in found:
        raise CLIError(
            f"NAME: no experiment {args.name!r} in {experiments_dir()} "
            f"(available: {', '.join(found) or 'none'})"
        )
    path = found[args.name]
    spec = importlib.util.spec_from_file_location(f"privstats_experiment_{args.name}", path)
    if spec is None or spec.loader is None:
        raise CLIError(f"NAME: cannot load experiment {args.name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    sys.path.insert(0, str(path.parent))  # experiments may import helpers next to them
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "main"):
            raise CLIError(f"NAME: experiment {args.name!r} has no main(argv) function")
        # experiments draw their own progress bars, so only the start and finish lines here
        print(f"running experiment {args.name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        code = module.main(forwarded)
        code = 0 if code is None else int(code)
        print(
            f"experiment {args.name} finished in {time.perf_counter() - t0:.1f} s (exit {code})",
            file=sys.stderr,
        )
        return code
    finally:
        sys.path.remove(str(path.parent))
        sys.modules.pop(spec.name, None)


def _aggregate(forwarded: list[str]) -> int:
    try:
        from privstats.engine.cli import cli_aggregate
    except ImportError as exc:
        raise CLIError(f"aggregate: privstats.engine is not available in this build ({exc})") from None
    return int(cli_aggregate(forwarded) or 0)


# ----------------------------------------------------------------------------- plan
def _plan(args) -> int:
    import warnings

    from privstats.plan import UselessResultWarning, plan

    options: dict = {}
    if args.domain_size is not None:
        options.update(domain=args.domain_size, domain_size=args.domain_size)
    if args.positives is not None:
        options["n_pos"] = int(args.positives)
    if args.kernel_range is not None:
        if not args.kernel_range[0] < args.kernel_range[1]:
            raise CLIError(
                f"--kernel-range: LO must be < HI, got {args.kernel_range[0]} {args.kernel_range[1]}"
            )
        options["kernel_range"] = tuple(args.kernel_range)
    if args.bounds is not None and not args.bounds[0] < args.bounds[1]:
        raise CLIError(f"--bounds: LO must be < HI, got {args.bounds[0]} {args.bounds[1]}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UselessResultWarning)
        try:
            p = plan(
                args.statistic,
                n=args.n,
                epsilon=args.epsilon,
                delta=args.delta,
                bounds=None if args.bounds is None else tuple(args.bounds),
                model=args.model,
                **options,
            )
        except (ValueError, TypeError) as exc:
            raise CLIError(str(exc)) from None
    notes = [str(w.message) for w in caught if issubclass(w.category, UselessResultWarning)]
    if args.json:
        print(
            json.dumps(
                {
                    "statistic": args.statistic,
                    "n": p.n,
                    "epsilon": p.epsilon,
                    "delta": p.delta,
                    "options": [o.as_row() for o in p],
                    "warnings": notes,
                },
                default=str,
            )
        )
        return 0
    if not len(p):
        from privstats.plan import SUPPORTED

        need = []
        if args.statistic == "ustatistic" and args.kernel_range is None:
            need.append("ustatistic needs --kernel-range LO HI, the kernel's range")
        if args.statistic in ("frequencies", "range_counts", "heavy_hitters") and args.domain_size is None:
            need.append(f"{args.statistic} needs --domain-size D")
        if not args.delta and "shuffle" in SUPPORTED[args.statistic]:
            need.append("shuffle-model protocols need --delta")
        print(
            f"no protocol computes {args.statistic} with these parameters"
            + (f" ({'; '.join(need)})" if need else "")
        )
        return 0
    print(p.table())
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    from privstats.plan import SUPPORTED

    if args.delta == 0 and "shuffle" in SUPPORTED[args.statistic]:
        print("note: shuffle-model protocols are (ε, δ)-DP; pass --delta to include them", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- services (task, serve, submit, collect)
SERVICE_COMMANDS = ("task", "serve", "submit", "collect")


def _add_service_parsers(sub) -> None:
    """``privstats task new | serve ROLE | submit | collect`` (privstats.services, privstats.client)."""
    task = sub.add_parser(
        "task",
        help="create a task file for a deployment (task new --help)",
        description="Task files for the services.",
    )
    tsub = task.add_subparsers(dest="task_command", required=True, metavar="SUBCOMMAND")
    new = tsub.add_parser(
        "new",
        help="write task.json (public) and one secrets file per party",
        description="Write a task file: the public part (task.json, safe for clients) and "
        "task.<party>.json secrets (HPKE private keys, tokens; mode 0600).",
    )
    new.add_argument(
        "--statistic",
        required=True,
        choices=["frequencies", "sum", "ecdf", "quantiles", "roc", "hosmer_lemeshow"],
        help="frequencies (items 0..D-1) or sum (shuffle model, values in [0, 1]); "
        "ecdf, quantiles, roc or hosmer_lemeshow (secure model: a DAP-09 task, --bounds and --grid)",
    )
    new.add_argument("--model", required=True, choices=["local", "shuffle", "secure"], help="trust model")
    new.add_argument(
        "--protocol",
        help="local: auto|grr|oue|olh|hr; shuffle: auto|single-rr|single-rappor|"
        "multi-hadamard (default auto)",
    )
    new.add_argument("--domain-size", type=int, metavar="D", help="items are integers 0..D-1")
    new.add_argument(
        "--bounds", nargs=2, type=float, metavar=("LO", "HI"), help="public bounds (secure model)"
    )
    new.add_argument("--grid", type=int, metavar="N", help="grid size (secure model)")
    new.add_argument(
        "--tau", type=int, metavar="T", help="hash functions of multi-countmin (default: the paper's)"
    )
    new.add_argument("--epsilon", required=True, type=_epsilon, help="ε of one collection")
    new.add_argument("--delta", type=_delta, help="δ (shuffle model; default min(1e-6, 1/(10 min-batch)))")
    new.add_argument(
        "--min-batch",
        required=True,
        type=int,
        metavar="N",
        help="smallest batch of users a collection covers (the shuffle model is calibrated for it)",
    )
    new.add_argument(
        "--max-collections",
        type=int,
        default=1,
        metavar="K",
        help="the task's budget allows K collections of ε each (default 1)",
    )
    for role in ("collector", "shuffler", "analyzer", "leader", "helper"):
        new.add_argument(f"--{role}", metavar="URL", help=f"{role} URL (default http://127.0.0.1:PORT)")
    new.add_argument(
        "--max-request-bytes",
        type=int,
        default=16 << 20,
        metavar="B",
        help="largest upload body a server accepts (default 16 MiB)",
    )
    new.add_argument("--out", required=True, metavar="FILE", help="task file to write (e.g. task.json)")

    serve = sub.add_parser(
        "serve",
        help="run a service role (collector, shuffler, analyzer, leader, helper)",
        description="Run one role of a task over HTTP until SIGTERM (drains, exits 0).",
    )
    serve.add_argument("role", choices=["collector", "shuffler", "analyzer", "leader", "helper"])
    serve.add_argument(
        "--task",
        required=True,
        metavar="FILE",
        help="task.json (the role's secrets are read from task.<role>.json next to it)",
    )
    serve.add_argument("--secrets", metavar="FILE", help="the role's secrets file (default task.<role>.json)")
    serve.add_argument(
        "--db",
        metavar="URL",
        help="sqlite:///FILE (default: a SQLite file next to the task) or "
        "postgresql+psycopg://USER@HOST:PORT/DB",
    )
    serve.add_argument("--host", help="listen address (default: the host of the role's URL in the task)")
    serve.add_argument("--port", type=int, help="listen port (default: the port of the role's URL)")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--engine",
        choices=["local", "dask"],
        help="collector: how stored reports are re-aggregated (privstats.engine; dask needs the dask extra)",
    )
    serve.add_argument(
        "--scheduler", metavar="ADDR", help="collector: a Dask scheduler (default: a local cluster)"
    )
    serve.add_argument(
        "--rebuild",
        action="store_true",
        help="collector: re-aggregate every stored report at start through the engine (replaces the state)",
    )

    submit = sub.add_parser(
        "submit",
        help="encode values on this device and upload them (client role)",
        description="Randomize values with the task's protocol (OS CSPRNG) and upload them.",
    )
    submit.add_argument("--task", required=True, metavar="FILE")
    submit.add_argument("--input", required=True, metavar="FILE", help="a .csv or .parquet file")
    submit.add_argument("--column", required=True, metavar="COL")
    submit.add_argument("--url", help="server URL (default: the task's collector or shuffler)")
    submit.add_argument("--token", help="upload token (default: task.client.json or $PRIVSTATS_UPLOAD_TOKEN)")
    submit.add_argument("--batch-size", type=int, default=1000, metavar="N")

    collect = sub.add_parser(
        "collect",
        help="collect the estimate of a task (analyst role)",
        description="Spend one collection of the task's budget and print the estimate.",
    )
    collect.add_argument("--task", required=True, metavar="FILE")
    collect.add_argument("--url", help="server URL (default: the task's collector or analyzer)")
    collect.add_argument(
        "--token", help="collect token (default: task.analyst.json or $PRIVSTATS_COLLECT_TOKEN)"
    )
    collect.add_argument("--collection-id", help="idempotency key (a retry with the same id spends nothing)")
    collect.add_argument(
        "--min-reports",
        type=int,
        metavar="N",
        help="release only once the batch holds at least N reports (with --wait: wait for them)",
    )
    collect.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="S",
        help="retry for up to S seconds while the batch is below --min-batch (e.g. the "
        "shuffler has not forwarded it yet)",
    )
    collect.add_argument("--json", action="store_true", help="machine-readable output")


def _service_command(args) -> int:
    try:
        import privstats.services  # noqa: F401
    except ImportError as exc:
        raise CLIError(
            f"{args.command}: the services need the serve extra (pip install 'privstats[serve]'): {exc}"
        ) from None
    try:
        if args.command == "task":
            return _task_new(args)
        if args.command == "serve":
            from privstats.services.app import serve

            options: dict = {}
            if args.engine or args.scheduler or args.rebuild:
                if args.role != "collector":
                    raise CLIError(
                        "--engine/--scheduler/--rebuild: only the collector aggregates stored reports"
                    )
                options = {
                    "engine": args.engine or "local",
                    "scheduler": args.scheduler,
                    "rebuild": args.rebuild,
                }
            return serve(
                args.role,
                args.task,
                db=args.db,
                host=args.host,
                port=args.port,
                secrets_path=args.secrets,
                log_level=args.log_level,
                **options,
            )
        if args.command == "submit":
            return _submit(args)
        return _collect(args)
    except ImportError as exc:
        raise CLIError(
            f"{args.command}: the services need the serve extra (pip install 'privstats[serve]'): {exc}"
        ) from None
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    except RuntimeError as exc:  # privstats.client.ServiceError: the server refused or is down
        raise CLIError(str(exc)) from None


def _task_new(args) -> int:
    from privstats.services.tasks import new_task, write_task

    params: dict = {}
    if args.domain_size is not None:
        params["domain_size"] = args.domain_size
    if args.model == "secure":
        if args.bounds is not None:
            params["bounds"] = list(args.bounds)
        if args.grid is not None:
            params["grid"] = args.grid
    elif args.bounds is not None or args.grid is not None:
        raise CLIError("--bounds/--grid: only the secure model's tasks take them here")
    if args.tau is not None:
        if args.protocol not in ("multi-countmin", "shuffle-countmin"):
            raise CLIError("--tau: only the multi-countmin protocol takes it")
        params["tau"] = args.tau
    if args.min_batch < 1:
        raise CLIError("--min-batch must be a positive integer")
    urls = {
        r: getattr(args, r)
        for r in ("collector", "shuffler", "analyzer", "leader", "helper")
        if getattr(args, r)
    }
    task, secrets = new_task(
        args.statistic,
        model=args.model,
        protocol=args.protocol,
        params=params,
        epsilon=args.epsilon,
        delta=args.delta,
        min_batch=args.min_batch,
        max_collections=args.max_collections,
        urls=urls,
        max_request_bytes=args.max_request_bytes,
    )
    paths = write_task(task, secrets, args.out)
    print(f"task {task.task_id}: {task.statistic} / {task.model} / {task.protocol}")
    for party, path in paths.items():
        print(f"  {party:<9} {path}")
    return 0


def _submit(args) -> int:
    from privstats.client import Client

    data = read_columns(args.input, [args.column])[args.column]
    with Client(args.url, args.task, args.token, batch_size=args.batch_size) as client:
        if client.task.statistic == "frequencies":
            if data.dtype.kind == "O" or np.any(data != np.round(data)):
                raise CLIError(f"--column: column {args.column!r} must hold integer items")
            data = data.astype(np.int64)
        acked = client.submit(data)
    print(f"{acked} reports acknowledged")
    return 0


def _collect(args) -> int:
    import uuid

    from privstats.client import Client, ServiceError

    cid = args.collection_id or uuid.uuid4().hex
    deadline = time.monotonic() + max(args.wait, 0.0)
    with Client(args.url, args.task, args.token, collect_url=args.url) as client:
        while True:
            try:
                query = {} if args.min_reports is None else {"min_reports": args.min_reports}
                est = client.collect(cid, **query)
                break
            except ServiceError as exc:
                if exc.code != "batch_too_small" or time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
    est = est[3] if isinstance(est, tuple) else getattr(est, "estimate", est)  # a secure task's statistic
    if args.json:
        print(json.dumps(est.to_dict(), allow_nan=False))
        return 0
    print(f"protocol {est.protocol}  model {est.model}  n {est.n}  guarantee {est.guarantee}")
    value, se = np.atleast_1d(est.value), np.atleast_1d(est.stderr)
    for i, (v, s) in enumerate(zip(value, se, strict=True)):
        print(f"{i:>6}  {v:12.2f}  ± {s:.2f}")
    return 0


# ----------------------------------------------------------------------------- entry point
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privstats`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    command = argv[0] if argv else None
    try:
        if command == "aggregate":
            return _aggregate(argv[1:])
        if command == "experiment":
            # everything after NAME belongs to the experiment script (including --help)
            rest = argv[1:]
            split = next((i for i, a in enumerate(rest) if not a.startswith("-")), len(rest))
            args = parser.parse_args(["experiment", *rest[: split + 1]])
            return _experiment(args, rest[split + 1 :])
        args = parser.parse_args(argv)
        if args.command == "demo":
            from privstats.demo import run_demo

            return run_demo(
                args.size,
                out=args.out,
                seed=args.seed,
                epsilons=args.epsilons,
                scenarios=args.only,
                as_json=args.json,
            )
        if args.command == "estimate":
            return _estimate(args)
        if args.command == "plan":
            return _plan(args)

        if args.command in SERVICE_COMMANDS:
            return _service_command(args)
        if args.command == "dap":
            from privstats.services.dap.cli import run as _run_dap

            return _run_dap(args)
    except CLIError as exc:
        print(f"privstats {command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `privstats experiment --list | head -1`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
