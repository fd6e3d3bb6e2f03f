"""``privstats dap``: the DAP-09 deployment (task new, serve leader|helper, upload, collect)."""

from __future__ import annotations

import argparse

NAMES = ("dap",)


def add_parsers(sub) -> None:
    from privstats.services.dap.cli import add_parser

    add_parser(sub)


def run(args: argparse.Namespace) -> int:
    from privstats.services.dap.cli import run as run_dap

    return run_dap(args)
