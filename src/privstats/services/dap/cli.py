"""``privstats dap ...``: the DAP-09 deployment from the command line.

* ``privstats dap task new --statistic ecdf --bounds 0 1 --grid 63 --epsilon 1 --min-batch 100
  --out task.json`` — writes ``task.json`` (with its ``dap`` object) and the parties' secrets files.
* ``privstats dap serve leader|helper --task task.json [--db URL] [--host H] [--port P]`` — runs an
  aggregator until SIGTERM (drains, exits 0).
* ``privstats dap upload --task task.json --values FILE`` — privstats' own DAP client.
* ``privstats dap collect --task task.json [--start S --duration D]`` — collect and print the ECDF.

Imports nothing heavy at parse time (``add_parser``); ``run`` loads the services.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``dap`` and its subcommands on the top-level ``privstats`` parser."""
    dap = subparsers.add_parser(
        "dap", help="DAP-09 leader/helper deployment (Prio3)", description="DAP-09 deployment with Prio3."
    )
    sub = dap.add_subparsers(dest="dap_command", required=True, metavar="SUBCOMMAND")
    task = sub.add_parser("task", help="create a DAP task")
    tsub = task.add_subparsers(dest="dap_task_command", required=True, metavar="SUBCOMMAND")
    new = tsub.add_parser("new", help="write task.json and the secrets files")
    new.add_argument("--statistic", default="ecdf", choices=["ecdf", "quantiles", "roc", "hosmer_lemeshow"])
    new.add_argument("--bounds", nargs=2, type=float, required=True, metavar=("LO", "HI"))
    new.add_argument("--grid", type=int, default=63, help="grid points (Prio3Histogram length = grid + 1)")
    new.add_argument("--epsilon", type=float, required=True)
    new.add_argument("--min-batch", type=int, required=True)
    new.add_argument("--max-collections", type=int, default=1)
    new.add_argument("--time-precision", type=int, default=3600, help="seconds (default 3600)")
    new.add_argument("--chunk-length", type=int, default=None)
    new.add_argument("--leader", default=None, help="leader base URL (default http://127.0.0.1:8473)")
    new.add_argument("--helper", default=None, help="helper base URL (default http://127.0.0.1:8474)")
    new.add_argument("--out", required=True, help="path of task.json")
    serve = sub.add_parser("serve", help="run the leader or the helper")
    serve.add_argument("role", choices=["leader", "helper"])
    serve.add_argument("--task", required=True)
    serve.add_argument("--secrets", default=None, help="the role's secrets (default task.<role>.json)")
    serve.add_argument("--db", default=None, help="SQLAlchemy URL (default: SQLite beside the task file)")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--job-size", type=int, default=1024, help="reports per aggregation job (leader)")
    serve.add_argument(
        "--lease-seconds", type=int, default=30, help="an unfinished job is retried after this (leader)"
    )
    serve.add_argument(
        "--job-workers",
        type=int,
        default=2,
        help="aggregation jobs run at once (leader; 2, the default, overlaps "
        "the leader's preparation of one job with the helper's of another)",
    )
    serve.add_argument(
        "--driver",
        default="process",
        choices=["process", "thread"],
        help="run the aggregation-job driver in its own process (default; it prepares jobs while "
        "the server takes uploads) or as a thread of the server (leader)",
    )
    up = sub.add_parser("upload", help="upload values (one report each)")
    up.add_argument("--task", required=True)
    up.add_argument("--values", required=True, help="text file, one number per line")
    col = sub.add_parser("collect", help="collect a batch and print the statistic")
    col.add_argument("--task", required=True)
    col.add_argument("--secrets", default=None, help="analyst secrets (default task.analyst.json)")
    col.add_argument("--start", type=int, default=None)
    col.add_argument("--duration", type=int, default=None)
    col.add_argument("--json", action="store_true")


def _serve(args: argparse.Namespace) -> int:
    import os
    from urllib.parse import urlsplit

    from privstats.services.app import run_server
    from privstats.services.storage import Storage, default_db_url
    from privstats.services.tasks import load_secrets, load_task

    task = load_task(args.task)
    secrets = load_secrets(args.task, args.role, args.secrets)
    url = urlsplit(task.dap.get(args.role, "") if isinstance(task.dap, dict) else "")
    host = args.host or url.hostname or "127.0.0.1"
    port = args.port if args.port is not None else (url.port or 80)
    db = (
        args.db
        or os.environ.get("PRIVSTATS_DB")
        or default_db_url("dap-" + args.role, task.task_id, os.path.dirname(os.path.abspath(args.task)))
    )
    storage = Storage(db)
    if args.role == "leader":
        from privstats.services.dap.leader import create_leader_app

        app = create_leader_app(
            task, secrets, storage, job_size=args.job_size, lease_seconds=args.lease_seconds,
            workers=args.job_workers, driver_process=args.driver == "process",
        )  # fmt: skip
    else:
        from privstats.services.dap.helper import create_helper_app

        app = create_helper_app(task, secrets, storage)
    return run_server(app, host, port, log_level=args.log_level)


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``privstats dap ...`` command; returns the exit status."""
    cmd = args.dap_command
    if cmd == "task":
        from privstats.services.dap.task import new_dap_task
        from privstats.services.tasks import write_task

        urls = {k: v for k, v in (("leader", args.leader), ("helper", args.helper)) if v}
        task, secrets = new_dap_task(
            args.statistic,
            bounds=tuple(args.bounds),
            grid=args.grid,
            epsilon=args.epsilon,
            min_batch=args.min_batch,
            max_collections=args.max_collections,
            time_precision=args.time_precision,
            urls=urls or None,
            chunk_length=args.chunk_length,
        )
        paths = write_task(task, secrets, args.out)
        print(json.dumps({k: str(v) for k, v in paths.items()}, indent=2))
        return 0
    if cmd == "serve":
        return _serve(args)
    if cmd == "upload":
        import numpy as np

        from privstats.services.dap.client import DapClient

        values = np.loadtxt(args.values, dtype=np.float64, ndmin=1)
        print(DapClient(args.task).upload(values))
        return 0
    if cmd == "collect":
        from privstats.services.dap.client import collect
        from privstats.services.dap.codec import Interval

        interval = None
        if args.start is not None or args.duration is not None:
            if args.start is None or args.duration is None:
                print("privstats dap collect: --start and --duration go together", file=sys.stderr)
                return 2
            interval = Interval(args.start, args.duration)
        res = collect(args.task, args.secrets, interval=interval)
        if hasattr(res, "probabilities"):  # an ECDF
            out: Any = {"thresholds": res.quantiles.tolist(), "values": res.probabilities.tolist()}
        else:
            out = str(res)
        print(json.dumps(out) if args.json else out)
        return 0
    return 2
