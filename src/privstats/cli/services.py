"""``privstats task new | serve ROLE | submit | collect``: the services (privstats.services, privstats.client)."""

from __future__ import annotations

import json
import time

import numpy as np

from privstats.cli.common import CLIError, _delta, _epsilon, add_domain_size, from_args, read_columns

NAMES = ("task", "serve", "submit", "collect")


def add_parsers(sub) -> None:
    _add_task(sub)
    _add_serve(sub)
    _add_submit_collect(sub)


def run(args) -> int:
    return _service_command(args)


def _add_task(sub) -> None:
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
    add_domain_size(new, "items are integers 0..D-1")
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


def _add_serve(sub) -> None:
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


def _add_submit_collect(sub) -> None:
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
            _announce(args)
            where = from_args(args, "db", "host", "port", "log_level", secrets_path="secrets")
            return serve(args.role, args.task, **where, **options)
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

    _check_task_numbers(args)
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
    numbers = ("epsilon", "delta", "min_batch", "max_collections", "max_request_bytes")
    task, secrets = new_task(
        args.statistic, params=params, urls=urls, **from_args(args, "model", "protocol", *numbers)
    )
    paths = write_task(task, secrets, args.out)
    print(f"task {task.task_id}: {task.statistic} / {task.model} / {task.protocol}")
    for party, path in paths.items():
        print(f"  {party:<9} {path}")
    return 0


def _announce(args) -> None:
    """One line when a server starts: its role, URL and task id (the log level may hide the rest)."""
    from urllib.parse import urlsplit

    from privstats.services.tasks import load_task

    task = load_task(args.task)
    url = urlsplit(task.url(args.role))
    host = args.host or url.hostname or "127.0.0.1"
    port = args.port if args.port is not None else (url.port or 80)
    print(
        f"privstats serve: {args.role} of task {task.task_id} ({task.statistic} / {task.model}) "
        f"listening on http://{host}:{port}",
        flush=True,
    )


def _check_task_numbers(args) -> None:
    """The numeric options of ``task new``, named, before any protocol is calibrated with them."""
    from privstats.validation import MAX_GRID, check_domain_size, check_epsilon, check_positive_int

    check_epsilon(args.epsilon, "--epsilon", model=args.model)  # local/shuffle: e^ε must fit a float
    if args.domain_size is not None:
        check_domain_size(args.domain_size, "--domain-size")
    if args.grid is not None:
        check_positive_int(args.grid, "--grid", minimum=2, maximum=MAX_GRID)


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
                est = client.collect(cid)
                break
            except ServiceError as exc:
                if exc.code != "batch_too_small" or time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
        est = est[3] if isinstance(est, tuple) else getattr(est, "estimate", est)  # a secure task's statistic
        est = in_range(est, client.task.statistic, client.task.params)
    if args.json:
        print(json.dumps(est.to_dict(), allow_nan=False))
        return 0
    print("\n".join(collect_lines(est)))
    return 0


def in_range(est, statistic: str, params: dict):
    """``est`` projected into its statistic's range, as the library's functions do (counts in [0, n],
    ECDF/ROC in [0, 1], quantiles in the bounds); the raw values stay in ``details["unbiased"]``."""
    from privstats.estimate import constrain

    if est.support is not None:
        return est
    rng_ = {"ecdf": (0.0, 1.0), "roc": (0.0, 1.0)}.get(statistic)
    if statistic in ("frequencies", "sum") and est.n is not None:
        rng_ = (0.0, float(est.n))
    if statistic == "quantiles" and params.get("bounds") is not None:
        rng_ = (float(params["bounds"][0]), float(params["bounds"][1]))
    return est if rng_ is None else constrain(est, *rng_, monotone=statistic == "quantiles")


def collect_lines(est) -> list[str]:
    """The analyst's table: one row per value with its stderr; ``*`` marks values clipped into range.

    >>> from privstats.estimate import Estimate, constrain
    >>> collect_lines(constrain(Estimate([-2.0, 7.0], stderr=[168.0, 168.0], n=10), 0, 10))[1:]
    ['     0          0.00  ± 168.00 *', '     1          7.00  ± 168.00', '* clipped into the range [0, 10]']
    """
    lines = [f"protocol {est.protocol}  model {est.model}  n {est.n}  guarantee {est.guarantee}"]
    value, se = np.atleast_1d(est.value), np.atleast_1d(est.stderr)
    raw = np.atleast_1d(np.asarray(est.unclipped, dtype=float))
    marks = raw != value if raw.shape == value.shape else np.zeros(value.shape, bool)
    for i, (v, s, m) in enumerate(zip(value, se, marks, strict=True)):
        lines.append(f"{i:>6}  {v:12.2f}  ± {s:.2f}" + (" *" if m else ""))
    if marks.any() and est.support is not None:
        lines.append(f"* clipped into the range [{est.support[0]:g}, {est.support[1]:g}]")
    return lines
