"""``privstats aggregate``: aggregate stored reports (privstats.engine; its own --help)."""

from __future__ import annotations

from privstats.cli.common import CLIError

NAMES = ("aggregate",)
RAW = True  # privstats.engine.cli parses its own arguments


def add_parsers(sub) -> None:
    sub.add_parser(
        "aggregate",
        help="aggregate stored reports (privstats.engine); see 'aggregate --help'",
        add_help=False,
    )


def run_raw(parser, rest: list[str]) -> int:
    try:
        from privstats.engine.cli import cli_aggregate
    except ImportError as exc:
        raise CLIError(f"aggregate: privstats.engine is not available in this build ({exc})") from None
    return int(cli_aggregate(rest) or 0)
