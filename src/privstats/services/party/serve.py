"""``privstats serve party``: one party of a pairs task, on its own data, enforcing its own task.

The party reads its copy of the public task and its secrets (the token jobs must carry), loads its
own column(s) from a CSV or .npy file, refuses values outside the task's public bounds, and serves
the aggregator's jobs one connection after another; its ledger (SQLite) survives restarts.

>>> load_column  # doctest: +ELLIPSIS
<function load_column at ...>
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from privstats.validation import check_choice

from .policy import PartyPolicy
from .task import PairsTask, read_pairs_task, read_role_secrets

__all__ = ["load_column", "party_values", "serve_party", "supervise"]

WORKER_ENV = "PRIVSTATS_PARTY_WORKER"
RESTART_EXIT = 75  # a worker whose 2PC link broke exits with this to get a fresh link


def supervise(argv: list[str], command: list[str] | None = None) -> int:
    """Run ``privstats serve party ARGS`` as a worker process and restart it if it dies (its ledger is
    durable, so a restart never re-runs a pair; SPU's link cannot be reopened in-process after the
    peer died mid-run).  SIGTERM/SIGINT stop the worker and the supervisor (exit 0).  ``command``
    replaces the worker's command line (tests).
    """
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, WORKER_ENV: "1"}
    cmd = command or [sys.executable, "-m", "privstats", *argv]
    child: list[subprocess.Popen] = []
    stopping: list[int] = []

    def stop(signum, frame):
        # only signal here: the main thread is inside child.wait(), holding the Popen's wait lock, so a
        # wait() in the handler deadlocked (the supervisor outlived `kill`, its worker a zombie)
        stopping.append(signum)
        for c in child:
            c.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        child[:] = [subprocess.Popen(cmd, env=env)]
        if stopping:  # a signal between the check and the start
            child[0].terminate()
        code = child[0].wait()
        if stopping:
            return 0
        if code in (0, 2):  # done, or refused to start (bad task or data): do not loop
            return code
        print(f"privstats serve party: worker exited ({code}); restarting", file=sys.stderr, flush=True)
        time.sleep(0.5)
    return 0


def load_column(path: str | Path, column: str | None) -> np.ndarray:
    """One numeric column of a CSV file (by header name), or a 1-d .npy array."""
    path = Path(path)
    if path.suffix == ".npy":
        return np.asarray(np.load(path), dtype=np.float64).reshape(-1)
    if column is None:
        raise ValueError("--column: name the column of the CSV file that holds this party's values")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or column not in reader.fieldnames:
            raise ValueError(f"--column: {column!r} is not a column of {path} ({reader.fieldnames})")
        try:
            return np.array([float(r[column]) for r in reader], dtype=np.float64)
        except ValueError as exc:
            raise ValueError(f"--column: column {column!r} of {path} must be numeric: {exc}") from None


def party_values(task: PairsTask, role: str, values: np.ndarray) -> np.ndarray:
    """(n, own columns) values as the kernels take them; ValueError if any is outside the bounds."""
    cols = task.columns[role]
    x = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    if x.shape[1] != len(cols):
        raise ValueError(f"the {role} party holds {len(cols)} column(s) of this task, got {x.shape[1]}")
    if x.shape[0] < 1:
        raise ValueError("the party's data is empty")
    for k, c in enumerate(cols):
        lo, hi = task.bounds[c]
        bad = ~np.isfinite(x[:, k]) | (x[:, k] < lo) | (x[:, k] > hi)
        if np.any(bad):
            raise ValueError(
                f"--data: {int(bad.sum())} value(s) outside the task's public bounds [{lo}, {hi}] "
                f"(first at row {int(np.argmax(bad))}); the party refuses to run on them"
            )
        if task.kernels[0]["kernel"] == "absdiff":  # the grid kernel works on [0, 1]
            x[:, k] = (x[:, k] - lo) / (hi - lo)
    return x


def serve_party(
    task_path: str | Path,
    role: str,
    data: str | Path,
    column: str | None = None,
    *,
    secrets_path: str | Path | None = None,
    db: str | Path | None = None,
    listen: str | None = None,
    link_timeout: float = 60.0,
    announce=None,
) -> None:
    """Run the ``left`` or ``right`` party of ``task_path`` on its own ``data`` until killed."""
    from privstats.ustat.mpc.party import Party

    role = check_choice(role, "role", ("left", "right"))
    task = read_pairs_task(task_path)
    sec = read_role_secrets(task_path, role, secrets_path)
    if sec.get("task_id") != task.task_id:
        raise ValueError(f"the secrets are for task {sec.get('task_id')}, not {task.task_id}")
    x = party_values(task, role, load_column(data, column))
    db = db or Path(task_path).with_name(f"{Path(task_path).stem}.{role}.db")
    policy = PartyPolicy(task, role, sec["token"], db, n_users=len(x))
    peer = "right" if role == "left" else "left"
    party = Party(
        role,
        task.parties[role]["link"],
        task.parties[peer]["link"],
        x,
        columns=tuple(task.columns[role]),
        policy=policy,
        link_timeout_s=link_timeout,
        restart_on_link_failure=RESTART_EXIT,
    )
    party.serve(listen or task.parties[role]["listen"], announce=announce)
