"""``privstats estimate``: a private estimate of one statistic on a CSV or Parquet file."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from privstats.cli.common import CLIError, _delta, _epsilon, _labels, _numeric, add_domain_size, read_columns

NAMES = ("estimate",)

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
    "hosmer_lemeshow": ("hosmer_lemeshow", False, True, 1),  # the column holds predicted probabilities
}
ALIASES = {"roc_curve": "roc"}  # the name `privstats plan` and the library use
STATISTICS.update({alias: STATISTICS[name] for alias, name in ALIASES.items()})


def add_parsers(sub) -> None:
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
    est.add_argument("--label", metavar="COL", help="binary label column (auc, roc, hosmer_lemeshow)")
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
    add_domain_size(est, "frequencies, collision_probability: items are integers 0..D-1; auc: bins")
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


def run(args) -> int:
    args.statistic = ALIASES.get(args.statistic, args.statistic)
    _check_args(args)
    wanted = list(args.column) + ([args.label] if args.label else [])
    data = read_columns(args.input, wanted)
    kw = _keywords(args)
    call, categories = _prepare_call(args, data, kw)
    fn = _public_function(args.statistic)
    t0 = time.perf_counter()
    out = _run_reporting_warnings(lambda: call(fn), args.statistic)
    record = _record(args, out, time.perf_counter() - t0, categories)
    if args.json:
        print(json.dumps(record, allow_nan=False, default=str))
        return 0
    from privstats.demo import _estimate_of

    _print_estimate(record, _estimate_of(out))
    return 0


def _check_args(args) -> None:
    _fname, needs_bounds, needs_label, n_columns = STATISTICS[args.statistic]
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


def _keywords(args) -> dict:
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
    return kw


def _public_function(statistic: str) -> Callable[..., Any]:
    import privstats

    fname = STATISTICS[statistic][0]
    try:
        return getattr(privstats, fname)
    except (ImportError, AttributeError) as exc:
        raise CLIError(f"STATISTIC: privstats.{fname} is not available in this build ({exc})") from None


def _items(args, values: np.ndarray) -> tuple[np.ndarray, int, list[str] | None]:
    """Item codes 0..D-1 of a categorical column, the domain size and the categories (if named)."""
    col = args.column[0]
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
            raise CLIError(
                f"--categories: column {col!r}: {sum(v not in index for v in values)} entries not in the list"
            )
        return np.array([index[v] for v in values], dtype=np.int64), len(categories), categories
    if args.domain_size is None:
        raise CLIError(
            f"--domain-size: {args.statistic} of an integer column needs the public domain "
            "size (items 0..D-1), or --categories for a text column"
        )
    if np.any(values != np.round(values)):
        raise CLIError(f"--column: column {col!r} must hold integers 0..{args.domain_size - 1}")
    return values.astype(np.int64), args.domain_size, None


def _prepare_call(args, data: dict, kw: dict) -> tuple[Callable[[Callable], Any], list[str] | None]:
    """``fn -> fn(data..., **kw)`` for the statistic, and the categories of a text column."""
    col = args.column[0]
    if args.statistic in ("frequencies", "collision_probability"):
        values, domain, categories = _items(args, data[col])
        kw.update(domain=domain, domain_size=domain)
        return (lambda fn: _call(fn, values, **kw)), categories
    if args.statistic == "quantiles":
        x = _numeric(data[col], "--column", col)
        return (lambda fn: _call(fn, x, list(args.quantiles), **kw)), None
    if args.statistic in ("auc", "roc", "hosmer_lemeshow"):
        y = _labels(data[args.label], args.label)
        s = _numeric(data[col], "--column", col)
        return (lambda fn: _call(fn, y, s, **kw)), None
    if args.statistic == "kendall_tau":
        a = _numeric(data[args.column[0]], "--column", args.column[0])
        b = _numeric(data[args.column[1]], "--column", args.column[1])
        return (lambda fn: _call(fn, a, b, **kw)), None
    x = _numeric(data[col], "--column", col)
    return (lambda fn: _call(fn, x, **kw)), None


def _run_reporting_warnings(call: Callable[[], Any], statistic: str):
    import warnings

    from privstats.plan import UselessResultWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UselessResultWarning)
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            raise CLIError(f"invalid input for {statistic}: {exc}") from None
    for w in caught:
        if issubclass(w.category, UselessResultWarning):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def _ecdf_record(args, out) -> dict:
    lo, hi = args.bounds
    at = np.asarray(args.at if args.at else np.linspace(lo, hi, 11), dtype=float)
    record: dict = {"at": at.tolist(), "cdf": np.asarray(out.evaluate(at), dtype=float).tolist()}
    grid = getattr(out, "quantiles", None)
    if grid is not None:
        record["grid"] = np.asarray(grid, dtype=float).tolist()  # thresholds of value/stderr
    if getattr(out, "stderr", None) is not None and grid is not None:
        idx = np.clip(np.searchsorted(np.asarray(grid), at, side="right") - 1, 0, None)
        record["cdf_stderr"] = np.where(at >= np.asarray(grid)[0], np.asarray(out.stderr)[idx], 0.0).tolist()
    return record


def _record(args, out, elapsed: float, categories) -> dict:
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
        record.update(_ecdf_record(args, out))
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
    return _jsonable(record)


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
