"""``privstats aggregate``: aggregate a Parquet report file or dataset and print the estimate.

The protocol and its parameters are read from the file's metadata (see
docs/report-format.md) and the oracle is rebuilt with the registry; ``--protocol``
checks that the file holds what you expect.  Wired into ``privstats.cli`` as::

    if argv and argv[0] == "aggregate": return cli_aggregate(argv[1:])

Example::

    privstats aggregate --protocol grr --input reports.parquet --engine dask --json

Exit status: 0 on success; 2 on bad arguments or input that cannot be aggregated
(as the rest of the ``privstats`` CLI), with a message naming the file.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

__all__ = ["build_parser", "cli_aggregate"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privstats aggregate",
        description="Aggregate local-model reports from Parquet and print the frequency estimate.",
    )
    parser.add_argument("--input", "-i", required=True, help="report file (.parquet) or dataset directory")
    parser.add_argument("--protocol", help="expected protocol name (checked against the file's metadata)")
    parser.add_argument(
        "--engine",
        choices=["local", "dask"],
        default=None,
        help="local (default) or dask (default when --scheduler is given)",
    )
    parser.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://host:8786")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="workers of the LocalCluster started for --engine dask without --scheduler",
    )
    parser.add_argument("--chunk-size", type=int, default=1 << 20, help="rows per chunk (default 1048576)")
    parser.add_argument(
        "--top", type=int, default=10, help="items to print, largest estimates first (text output)"
    )
    parser.add_argument("--json", action="store_true", help="print the full estimate as JSON")
    parser.add_argument("--state-out", metavar="FILE", help="also write the signed aggregator state here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    return parser


def cli_aggregate(args_list: list[str]) -> int:
    """Run ``privstats aggregate`` with these arguments; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help or a usage error
        return int(exc.code or 0)
    engine = args.engine or ("dask" if args.scheduler else "local")
    if args.scheduler and engine != "dask":
        parser.print_usage(sys.stderr)
        print("privstats aggregate: error: --scheduler needs --engine dask", file=sys.stderr)
        return 2

    from privstats.engine.core import aggregate
    from privstats.engine.format import read_report_metadata
    from privstats.engine.registry import build_oracle

    try:
        meta = read_report_metadata(args.input)
        if args.protocol is not None and args.protocol != meta["protocol"]:
            raise ValueError(f"{args.input} holds {meta['protocol']!r} reports, not {args.protocol!r}")
        oracle = build_oracle(meta["protocol"], meta["params"])
        state = aggregate(
            oracle,
            args.input,
            engine=engine,
            chunk_size=args.chunk_size,
            scheduler=args.scheduler,
            n_workers=args.workers,
            progress=False if args.no_progress else None,
        )
        estimate = oracle.estimate(state)
        if args.state_out:  # signed (privstats.privacy.integrity.load_state reads it back)
            from privstats.privacy.integrity import save_state

            save_state(state, args.state_out)
    except (ValueError, OSError, TypeError) as exc:
        print(f"privstats aggregate: error: {exc}", file=sys.stderr)
        return 2

    if args.json:
        out = {
            "input": str(args.input),
            "files": meta["files"],
            "engine": engine,
            "format_version": meta["version"],
            "protocol": oracle.name,
            "params": meta["params"],
            "n": int(state.n),
            "counts": np.asarray(state.counts).tolist(),
            "estimate": estimate.to_dict(),
        }
        print(json.dumps(out))
        return 0
    value = np.atleast_1d(np.asarray(estimate.value, dtype=float))
    stderr = np.atleast_1d(np.asarray(estimate.stderr, dtype=float)) if estimate.stderr is not None else None
    print(f"protocol {oracle!r}  reports {state.n:,}  files {len(meta['files'])}  engine {engine}")
    print(f"guarantee {estimate.guarantee}  model {estimate.model}")
    top = np.argsort(-value, kind="stable")[: max(args.top, 0)]
    print(f"{'item':>8} {'estimate':>14} {'stderr':>12}")
    for i in top:
        se = f"{stderr[i]:12.1f}" if stderr is not None else f"{'-':>12}"
        print(f"{i:>8} {value[i]:14.1f} {se}")
    return 0
