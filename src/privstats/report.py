"""Tables for the terminal and the Markdown report of ``privstats demo``.

Tables are lists of rows (dicts) with a list of ``(key, header)`` columns.  On a
terminal with :mod:`rich` installed they are drawn with rich; otherwise (piped
output, no rich) as aligned plain text, so scripts can read them.

>>> print(format_table([{"a": 1.23456, "b": "x"}], [("a", "A"), ("b", "B")]))
A      B
-----  -
1.235  x
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["fmt", "format_table", "markdown_table", "print_table", "use_rich", "write_markdown_report"]

Columns = Sequence[tuple[str, str]]


def fmt(value: Any) -> str:
    """Compact text for a table cell: 4 significant digits for floats, ``-`` for missing."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == 0:
            return "0"
        return f"{value:.4g}"
    return str(value)


def format_table(rows: Iterable[dict], columns: Columns) -> str:
    """Aligned plain-text table (header, dashes, one line per row)."""
    cells = [[header for _, header in columns]] + [[fmt(r.get(k)) for k, _ in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: Iterable[dict], columns: Columns) -> str:
    """A GitHub-flavoured Markdown table."""
    out = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append("| " + " | ".join(fmt(r.get(k)).replace("|", "\\|") for k, _ in columns) + " |")
    return "\n".join(out)


def use_rich(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (default stdout) is a terminal and rich is installed."""
    stream = sys.stdout if stream is None else stream
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def print_table(title: str, rows: list[dict], columns: Columns, stream: TextIO | None = None) -> None:
    """Print a table: rich on a terminal, plain text when piped."""
    stream = sys.stdout if stream is None else stream
    if use_rich(stream):
        from rich import box
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1))
        for i, (key, header) in enumerate(columns):
            numeric = any(
                isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool) for r in rows
            )
            table.add_column(header, justify="right" if numeric else "left", no_wrap=i == 0)
        for r in rows:
            table.add_row(*(fmt(r.get(k)) for k, _ in columns))
        Console(file=stream).print(table)
    else:
        print(f"\n{title}", file=stream)
        print(format_table(rows, columns), file=stream)
    stream.flush()


def write_markdown_report(path: Path, *, title: str, sections: list[tuple[str, str]]) -> Path:
    """Write ``sections`` (heading, Markdown body) under ``title`` to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = [f"# {title}\n"]
    for heading, body in sections:
        parts.append(f"## {heading}\n\n{body.rstrip()}\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
