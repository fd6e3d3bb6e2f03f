"""What every command shares: the user-error type, argument types and reading input files."""

from __future__ import annotations

import argparse
import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CLIError", "add_domain_size", "from_args", "read_columns"]


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


def add_domain_size(parser: argparse.ArgumentParser, meaning: str) -> None:
    """``--domain-size D`` (items are integers 0..D-1), with what it means to the command."""
    parser.add_argument("--domain-size", type=int, metavar="D", help=meaning)


def from_args(args: argparse.Namespace, *names: str, **renamed: str) -> dict[str, Any]:
    """Keyword arguments from parsed options: ``name=args.name`` for each of ``names``, and
    ``keyword=args.<attribute>`` for each ``keyword="attribute"`` of ``renamed``.

    >>> from_args(argparse.Namespace(out="r", seed=1, only=["auc"]), "out", "seed", scenarios="only")
    {'out': 'r', 'seed': 1, 'scenarios': ['auc']}
    """
    return {**{n: getattr(args, n) for n in names}, **{k: getattr(args, a) for k, a in renamed.items()}}


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
    bad = sum(not _is_float(v) for v in values)  # counted, never printed: a cell is data
    raise CLIError(f"{option}: column {name!r} must be numeric, {bad} entries are not numbers")


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
            f"{sum(v not in mapping for v in lowered)} entries are not"
        )
    return values
