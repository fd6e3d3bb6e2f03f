"""The ``privstats`` command line: one module of this package per command.

Commands::

    privstats demo [--size tiny|small|full] [--out DIR] [--json]
    privstats estimate STATISTIC --input FILE --column COL [--label COL] --epsilon E
                       [--model M] [--method X] [--bounds LO HI] [--json] ...
    privstats plan STATISTIC --n N --epsilon E [--delta D] [--bounds LO HI] [--model M] [--json]
    privstats experiment NAME [args...]      |   privstats experiment --list
    privstats aggregate --protocol ... --input reports.parquet [...]
    privstats task new ... | serve ROLE ... | submit ... | collect ...

Bad input (a missing column, a non-numeric column, missing public bounds, an invalid
ε) exits with status 2 and a message naming the option.  Tables use rich on a
terminal and plain text when piped.

A command lives in ``privstats/cli/<module>.py`` with ``NAMES`` (the command names it
adds), ``add_parsers(sub)`` and ``run(args) -> int`` (or ``RAW = True`` and
``run_raw(parser, argv) -> int`` for a command that forwards its arguments unparsed);
it is registered by one line in :data:`COMMANDS`.

>>> build_parser().parse_args(["demo", "--size", "small"]).size
'small'
>>> main(["estimate", "ecdf", "--input", "x.csv", "--column", "v", "--epsilon", "1"])  # no --bounds
2
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from privstats.cli.common import CLIError, read_columns
from privstats.cli.demo import DEMO_SCENARIOS
from privstats.cli.estimate import STATISTICS
from privstats.cli.experiment import experiments_dir
from privstats.cli.services import NAMES as SERVICE_COMMANDS

__all__ = ["COMMANDS", "CLIError", "build_parser", "experiments_dir", "main", "read_columns"]
__all__ += ["DEMO_SCENARIOS", "SERVICE_COMMANDS", "STATISTICS"]

# The commands, in the order `privstats --help` lists them: modules of privstats.cli.
# To add a command, write its module and add one line here.
COMMANDS: list[str] = [
    "demo",
    "estimate",
    "plan",
    "experiment",
    "aggregate",
    "services",  # task, serve, submit, collect
    "dap",  # the DAP-09 deployment (privstats.services.dap)
]


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"privstats.cli.{name}") for name in COMMANDS]


def _module_of(command: str | None) -> ModuleType | None:
    return next((m for m in _modules() if command in m.NAMES), None)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every registered command."""
    parser = argparse.ArgumentParser(
        prog="privstats",
        description="Differentially private statistics over distributed data: local, shuffle, secure "
        "and central trust models.",
        epilog="Run 'privstats COMMAND --help' for the options of a command.",
    )
    from privstats import __version__

    parser.add_argument("--version", action="version", version=f"privstats {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _modules():
        module.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privstats`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    command = argv[0] if argv else None
    from privstats.services.party import cli as pairs_cli  # pairs tasks (backend spu): own parser

    if pairs_cli.claims(argv):
        return pairs_cli.run_argv(argv)
    try:
        module = _module_of(command)
        if module is not None and getattr(module, "RAW", False):
            return module.run_raw(parser, argv[1:])
        args = parser.parse_args(argv)
        module = _module_of(args.command)
        if module is not None:
            return module.run(args)
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
