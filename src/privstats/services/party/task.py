"""The public task of a two-party pairs deployment (``backend: spu``) and each role's secrets.

The task fixes everything the parties enforce: the statistic, its kernels with their mechanisms and
ε per pair, the public bounds of each column, the total ε, the number P of pairs per user, and the
data layout (which party holds which users or columns).  Each party and the aggregator read their own
copy; a party refuses any job whose parameters differ from its copy.

>>> t, s = new_pairs_task("auc", epsilon=1.0, bounds=[(-8, 8)])
>>> [k["kernel"] for k in t.kernels], t.layout, sorted(s)
(['greater_half'], 'two-sample', ['aggregator', 'left', 'right'])
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from privstats.validation import check_choice, check_epsilon, check_positive_int

__all__ = ["PAIRS_STATISTICS", "PairsTask", "new_pairs_task", "read_pairs_task", "write_pairs_task"]

FORMAT = "privstats-pairs-task/1"
PAIRS_STATISTICS = ("auc", "kendall_tau", "gini_mean_difference", "ustatistic")
LAYOUTS = {"auc": "two-sample", "kendall_tau": "vertical", "gini_mean_difference": "horizontal"}
ROLES = ("left", "right")


@dataclass(frozen=True)
class PairsTask:
    """The public task file (``task.json``)."""

    task_id: str
    statistic: str
    epsilon: float
    P: int
    bounds: list  # [[lo, hi]] per column
    kernels: list  # [{"kernel", "mechanism", "pair_epsilon"}], released together on the same pairs
    layout: str  # two-sample | vertical | horizontal
    columns: dict  # role -> the columns it holds
    parties: dict  # role -> {"listen": HOST:PORT (aggregator), "link": HOST:PORT (the 2PC link)}
    grid_bits: int = 10
    ties: str = "half"
    batch_size: int = 20_000
    model: str = "secure"
    backend: str = "spu"
    format: str = FORMAT
    extra: dict = field(default_factory=dict)

    def public(self) -> dict:
        return asdict(self)

    def digest(self) -> str:
        """SHA-256 of everything the parties agree on (all fields but the network addresses)."""
        import hashlib

        d = {k: v for k, v in self.public().items() if k != "parties"}
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

    def job_header(self) -> dict:
        """What every job must carry (the parties compare it with their own copy)."""
        return {
            "task_id": self.task_id,
            "task_digest": self.digest(),
            "outputs": self.kernels,
            "grid_bits": self.grid_bits,
        }


def _kernels(statistic: str, epsilon: float, P: int, ties: str, kernel: str | None, mechanism: str):
    e = epsilon / P
    if statistic == "auc":
        return [("greater_half", "laplace", e) if ties == "half" else ("greater", "rr", e)]
    if statistic == "kendall_tau":  # tau-b: the sign product and the two tie indicators (budget ½, ¼, ¼)
        return [
            ("sign_product", "laplace", e / 2),
            ("not_equal_0", "rr", e / 4),
            ("not_equal_1", "rr", e / 4),
        ]
    if statistic == "gini_mean_difference":
        return [("absdiff", "laplace", e)]
    from privstats.ustat.mpc.kernels import SPECS

    if kernel is None:
        raise ValueError(f"statistic='ustatistic' needs kernel, one of {list(SPECS)}")
    check_choice(kernel, "kernel", SPECS)
    return [(kernel, check_choice(mechanism, "mechanism", ("laplace", "rr")), e)]


def new_pairs_task(
    statistic: str,
    *,
    epsilon: float,
    bounds: list,
    P: int = 1,
    ties: str = "half",
    kernel: str | None = None,
    mechanism: str = "laplace",
    grid_bits: int = 10,
    noise: str = "joint",
    layout: str | None = None,
    parties: dict | None = None,
    batch_size: int = 20_000,
) -> tuple[PairsTask, dict]:
    """A new task and the secrets of each role (``left``, ``right``: the token a job must carry for
    that party; ``aggregator``: both tokens).  ``noise``: ``"joint"`` draws each discrete Laplace
    inside the 2PC from both parties' random words (one Laplace; ~2 secure comparisons per random
    word), ``"shares"`` lets each party add its own full discrete Laplace (twice the noise variance,
    no secure comparison; ε-DP against either party colluding with the aggregator either way)."""
    check_choice(statistic, "statistic", PAIRS_STATISTICS)
    epsilon, P = check_epsilon(epsilon), check_positive_int(P, "P")
    check_choice(ties, "ties", ("half", "zero"))
    from privstats.ustat.mpc.circuit import JobSpec  # validates the kernels (no SPU needed)

    check_choice(noise, "noise", ("joint", "shares"))
    triples = _kernels(statistic, epsilon, P, ties, kernel, mechanism)
    if noise == "shares":  # each party adds a full discrete Laplace share: no comparisons, 2× variance
        triples = [(k, "laplace-shares" if m == "laplace" else m, e) for k, m, e in triples]
    job = JobSpec.build(triples, grid_bits)
    ncol = job.columns
    bounds = [[float(lo), float(hi)] for lo, hi in bounds]
    if len(bounds) == 1 and ncol == 2:
        bounds = bounds * 2
    if len(bounds) != ncol or any(not (lo < hi) for lo, hi in bounds):
        raise ValueError(f"bounds: the {statistic} task needs {ncol} pair(s) LO < HI, got {bounds}")
    layout = check_choice(
        layout or LAYOUTS.get(statistic, "horizontal"), "layout", tuple(set(LAYOUTS.values()))
    )
    if layout == "vertical" and ncol != 2:
        raise ValueError("layout='vertical' splits two columns between the parties (Kendall's tau)")
    columns = {"left": [0], "right": [1]} if layout == "vertical" else {r: list(range(ncol)) for r in ROLES}
    parties = parties or {}
    addrs = {
        r: {"listen": f"127.0.0.1:{7301 + i}", "link": f"127.0.0.1:{7401 + i}"} for i, r in enumerate(ROLES)
    }
    for r in ROLES:
        addrs[r].update(parties.get(r, {}))
    task = PairsTask(
        task_id=secrets.token_hex(8),
        statistic=statistic,
        epsilon=epsilon,
        P=P,
        bounds=bounds,
        kernels=[{"kernel": k, "mechanism": m, "pair_epsilon": e} for k, m, e in triples],
        layout=layout,
        columns=columns,
        parties=addrs,
        grid_bits=int(grid_bits),
        ties=ties,
        batch_size=check_positive_int(batch_size, "batch_size"),
    )
    tokens = {r: secrets.token_urlsafe(24) for r in ROLES}
    sec: dict[str, dict] = {r: {"role": r, "task_id": task.task_id, "token": tokens[r]} for r in ROLES}
    sec["aggregator"] = {"role": "aggregator", "task_id": task.task_id, "tokens": tokens}
    return task, sec


def write_pairs_task(task: PairsTask, secrets_: dict, out: str | Path) -> dict[str, Path]:
    """Write ``task.json`` and ``task.<role>.json`` (mode 0600) next to it; returns the paths."""
    out = Path(out)
    out.write_text(json.dumps(task.public(), indent=2) + "\n")
    paths = {"task": out}
    for role, sec in secrets_.items():
        p = out.with_name(f"{out.stem}.{role}.json")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(sec, indent=2) + "\n")
        paths[role] = p
    return paths


def read_pairs_task(path: str | Path) -> PairsTask:
    """Read a task file written by :func:`write_pairs_task` (ValueError if it is not a pairs task)."""
    d = json.loads(Path(path).read_text())
    if d.get("format") != FORMAT:
        raise ValueError(f"{path} is not a two-party pairs task (format {d.get('format')!r})")
    return PairsTask(**d)


def read_role_secrets(task_path: str | Path, role: str, path: str | Path | None = None) -> dict:
    p = Path(path) if path else Path(task_path).with_name(f"{Path(task_path).stem}.{role}.json")
    sec = json.loads(p.read_text())
    if sec.get("role") != role:
        raise ValueError(f"{p} holds the secrets of {sec.get('role')!r}, not {role!r}")
    return sec


def open_task_db(
    path: str | Path, schema: str, task_id: str, what: str, *, wal: bool = False, **connect: Any
) -> sqlite3.Connection:
    """A role's own SQLite file (autocommit, ``synchronous=FULL``, WAL if asked) with ``schema``,
    whose ``meta`` table binds it to ``task_id`` on first use: the file of another task is refused
    (ValueError naming it as ``what``)."""
    db = sqlite3.connect(str(path), isolation_level=None, **connect)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(schema)
    row = db.execute("SELECT value FROM meta WHERE key='task_id'").fetchone()
    if row is None:
        db.execute("INSERT INTO meta VALUES ('task_id', ?)", (task_id,))
    elif row[0] != task_id:
        db.close()
        raise ValueError(f"{what} {path} belongs to task {row[0]}, not {task_id}")
    return db


def is_pairs_task(path: str | Path) -> bool:
    try:
        return json.loads(Path(path).read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False
