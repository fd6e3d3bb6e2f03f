"""The CLI of a pairs deployment: ``task new --backend spu``, ``serve party``, ``collect`` (pairs task).

``privstats.cli`` hands an argument list to :func:`run_argv` when :func:`claims` says it is ours, so
these commands need no change to the main parser.

>>> claims(["serve", "party", "--task", "t.json"]), claims(["serve", "collector"])
(True, False)
>>> claims(["task", "new", "--backend=spu"]), claims(["task", "new", "--model", "local"])
(True, False)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

__all__ = ["add_parser", "claims", "run", "run_argv"]


def claims(argv: Sequence[str]) -> bool:
    """True for the commands of a pairs task (backend spu)."""
    argv = list(argv)
    if argv[:2] == ["serve", "party"]:
        return True
    if argv[:2] == ["task", "new"]:
        return _option(argv, "--backend") == "spu"
    if argv[:1] == ["collect"]:
        from .task import is_pairs_task

        task = _option(argv, "--task")
        return task is not None and is_pairs_task(task)
    return False


def _option(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _task_new_parser(sub) -> None:
    new = sub.add_parser("new", help="write task.json and task.{left,right,aggregator}.json")
    new.add_argument(
        "--statistic", required=True, choices=["auc", "kendall_tau", "gini_mean_difference", "ustatistic"]
    )
    new.add_argument("--model", required=True, choices=["secure"], help="secure (two-party computation)")
    new.add_argument("--backend", required=True, choices=["spu"])
    new.add_argument("--epsilon", required=True, type=float, help="ε of the whole task (each user)")
    new.add_argument("--P", type=int, default=1, help="pairs per user (default 1)")
    new.add_argument(
        "--bounds",
        nargs=2,
        type=float,
        action="append",
        required=True,
        metavar=("LO", "HI"),
        help="public bounds of the values (Kendall: give it twice, one per column)",
    )
    new.add_argument("--ties", choices=["half", "zero"], default="half", help="auc: ties count ½ or 0")
    new.add_argument("--kernel", help="ustatistic: a kernel of privstats.ustat.mpc.SPECS")
    new.add_argument("--mechanism", choices=["laplace", "rr"], default="laplace", help="ustatistic")
    new.add_argument("--grid-bits", type=int, default=10, help="absdiff: grid of 2^-bits of the bounds")
    new.add_argument(
        "--noise",
        choices=["joint", "shares"],
        default="joint",
        help="Laplace kernels: one discrete Laplace drawn inside the 2PC (joint), or one full share "
        "added by each party (shares: 2x the noise variance, several times the throughput)",
    )
    new.add_argument("--layout", choices=["two-sample", "vertical", "horizontal"])
    new.add_argument("--batch-size", type=int, default=20_000, help="pairs per job")
    for role in ("left", "right"):
        new.add_argument(
            f"--{role}", metavar="HOST:PORT", help=f"where the {role} party serves the aggregator"
        )
        new.add_argument(f"--{role}-link", metavar="HOST:PORT", help=f"the {role} party's 2PC link address")
    new.add_argument("--out", required=True, metavar="FILE")


def add_parser(subparsers) -> None:
    """Add ``task new``, ``serve party`` and ``collect`` for pairs tasks to ``subparsers``."""
    task = subparsers.add_parser("task", help="pairs task files (backend spu)")
    _task_new_parser(task.add_subparsers(dest="task_command", required=True))
    serve = subparsers.add_parser("serve", help="serve a party of a pairs task")
    serve.add_argument("role", choices=["party"])
    serve.add_argument("--task", required=True, metavar="FILE")
    serve.add_argument("--role", dest="party_role", required=True, choices=["left", "right"])
    serve.add_argument("--data", required=True, metavar="FILE", help="this party's own data (.csv or .npy)")
    serve.add_argument("--column", metavar="NAME", help="the CSV column of this party's values")
    serve.add_argument("--secrets", metavar="FILE", help="default task.<role>.json next to the task")
    serve.add_argument("--db", metavar="FILE", help="the party's ledger (default task.<role>.db)")
    serve.add_argument("--listen", metavar="HOST:PORT", help="default: the task's address of the role")
    serve.add_argument("--link-timeout", type=float, default=60.0, metavar="S", help="2PC link timeout")
    collect = subparsers.add_parser("collect", help="run (or resume) a pairs task and print its estimate")
    collect.add_argument("--task", required=True, metavar="FILE")
    collect.add_argument("--secrets", metavar="FILE", help="default task.aggregator.json")
    collect.add_argument("--state", metavar="FILE", help="default task.aggregator.db")
    collect.add_argument("--json", action="store_true", help="machine-readable output")


#: the options of ``task new`` that go to :func:`new_pairs_task` as they are parsed
_TASK_OPTIONS = (
    "epsilon",
    "bounds",
    "P",
    "ties",
    "kernel",
    "mechanism",
    "grid_bits",
    "noise",
    "layout",
    "batch_size",
)


def _task_new(args) -> int:
    from .task import new_pairs_task, write_pairs_task

    parties = {}
    for role in ("left", "right"):
        parties[role] = {
            k: v for k, v in (("listen", getattr(args, role)), ("link", getattr(args, f"{role}_link"))) if v
        }
    options = {name: getattr(args, name) for name in _TASK_OPTIONS}
    task, sec = new_pairs_task(args.statistic, parties=parties, **options)
    paths = write_pairs_task(task, sec, args.out)
    print(
        f"task {task.task_id}: {task.statistic} / secure / spu ({task.layout}, P={task.P}, ε={task.epsilon})"
    )
    for role, path in paths.items():
        print(f"  {role:<10} {path}")
    return 0


def run(args) -> int:
    """Run a parsed pairs-task command; returns the exit status."""
    if args.command == "task":
        return _task_new(args)
    if args.command == "serve":
        from .serve import serve_party

        serve_party(
            args.task,
            args.party_role,
            args.data,
            args.column,
            secrets_path=args.secrets,
            db=args.db,
            listen=args.listen,
            link_timeout=args.link_timeout,
            announce=lambda port: print(
                f"party {args.party_role} serving on port {port} (pid {os.getpid()})", flush=True
            ),
        )
        return 0
    from .collect import collect_pairs

    est = collect_pairs(args.task, secrets_path=args.secrets, state_path=args.state)
    if args.json:
        counts = {k: int(est.details[k]) for k in ("pairs", "pairs_lost")}
        print(json.dumps({**est.to_dict(), "details": counts}, allow_nan=False))
    else:
        lost = est.details.get("pairs_lost", 0)
        print(f"{est.value:.6f} ± {est.stderr:.6f}  ({est.guarantee}, n {est.n}, pairs lost {lost})")
    return 0


def run_argv(argv: Sequence[str]) -> int:
    """Parse and run; errors are printed as ``privstats CMD: error: ...`` with exit status 2 (1 if a
    run stopped and can be resumed)."""
    import os

    from .collect import CollectError
    from .serve import WORKER_ENV, supervise

    parser = argparse.ArgumentParser(prog="privstats")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    if args.command == "serve" and not os.environ.get(WORKER_ENV):
        return supervise(list(argv))
    try:
        return run(args)
    except CollectError as exc:
        print(f"privstats {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, ImportError, RuntimeError, OSError) as exc:
        print(f"privstats {args.command}: error: {exc}", file=sys.stderr)
        return 2
