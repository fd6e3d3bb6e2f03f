"""A party's own enforcement of its task, with a durable record (SQLite) of the pairs it took part in.

:class:`PartyPolicy` is what the party process consults before each job:

* the job's kernels, mechanisms, ε per pair and grid must equal the party's own copy of the task
  (an aggregator asking for mechanism ``"none"`` or a larger ε is refused);
* every user of the party may be in at most P pairs over the task's lifetime: the count is kept in
  SQLite, reserved durably **before** the 2PC runs, so a repeat of a job (15 runs and a majority vote)
  or a crash and retry never releases a user's value more often than the plan allows;
* a job id that completed is answered with the stored output share (the same release again, no new
  noise); a job id that was interrupted mid-run has spent its pairs and is refused.

>>> import tempfile, os
>>> from privstats.services.party.task import new_pairs_task
>>> t, s = new_pairs_task("auc", epsilon=1.0, bounds=[(0, 1)])
>>> pol = PartyPolicy(t, "left", s["left"]["token"], os.path.join(tempfile.mkdtemp(), "l.db"), n_users=3)
>>> pol.hello({})["n"]
3
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import numpy as np

from .task import PairsTask, open_task_db

__all__ = ["PartyPolicy", "PolicyError"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS usage (user INTEGER PRIMARY KEY, pairs INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, digest TEXT NOT NULL, state TEXT NOT NULL, share BLOB
);
CREATE TABLE IF NOT EXISTS comparisons (job_id TEXT NOT NULL, slot0 INTEGER NOT NULL, slot1 INTEGER NOT NULL);
"""


class PolicyError(PermissionError):
    """A job this party refuses (its parameters differ from the task, or it exceeds the plan)."""


def _digest(header: dict) -> str:
    keep = {k: header.get(k) for k in ("task_id", "outputs", "grid_bits", "m", "rows")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


class PartyPolicy:
    """The task a party enforces and its durable ledger (``db``: a SQLite file of its own)."""

    def __init__(self, task: PairsTask, role: str, token: str, db: str | Path, *, n_users: int):
        self.task, self.role, self.token, self.n = task, role, token, int(n_users)
        self.db = open_task_db(db, SCHEMA, task.task_id, "ledger", wal=True, check_same_thread=False)
        self.expected = task.job_header()
        self.usage = np.zeros(self.n, dtype=np.int64)  # the ledger's per-user counts, kept in step
        for user, pairs in self.db.execute("SELECT user, pairs FROM usage"):
            if 0 <= user < self.n:
                self.usage[user] = pairs

    # ---- checks --------------------------------------------------------------------------------
    def authenticate(self, header: dict) -> bool:
        return hmac.compare_digest(str(header.get("token", "")).encode(), self.token.encode())

    def hello(self, header: dict) -> dict:
        used = self.db.execute("SELECT COALESCE(SUM(pairs), 0) FROM usage").fetchone()[0]
        return {"task_id": self.task.task_id, "role": self.role, "n": self.n, "pairs_used": int(used)}

    def _same_task(self, header: dict) -> None:
        for key, want in self.expected.items():
            got = header.get(key)
            if key == "outputs":
                got = [{k: o.get(k) for k in ("kernel", "mechanism", "pair_epsilon")} for o in got or []]
            if got != want:
                raise PolicyError(f"job parameter {key}={got!r} differs from this party's task ({want!r})")
        if "rows" not in header or "indices" in header:
            raise PolicyError("this party only takes jobs that name its users (rows), never values")

    def _users(self, header: dict) -> np.ndarray:
        rows = np.asarray(header["rows"], dtype=np.int64).reshape(-1, 2)
        if rows.shape[0] != int(header.get("m", -1)):
            raise PolicyError("rows do not match m")
        if np.any(rows < -1) or np.any(rows >= self.n):
            raise PolicyError(f"rows must hold user indices in [0, {self.n}) or -1")
        layout, slot = self.task.layout, (0 if self.role == "left" else 1)
        if layout == "two-sample" and (np.any(rows[:, slot] < 0) or np.any(rows[:, 1 - slot] != -1)):
            raise PolicyError("two-sample task: this party fills exactly its own slot of every pair")
        if layout == "vertical" and (np.any(rows < 0) or np.any(rows[:, 0] == rows[:, 1])):
            raise PolicyError("vertical task: every pair names two different users")
        if layout == "horizontal" and np.any((rows[:, 0] == rows[:, 1]) & (rows[:, 0] >= 0)):
            raise PolicyError("a pair names the same user twice")
        return rows

    def _over_plan(self, rows: np.ndarray) -> None:
        uniq, cnt = np.unique(rows[rows >= 0], return_counts=True)
        total = cnt + self.usage[uniq]
        if np.any(total > self.task.P):
            bad = int(uniq[np.argmax(total > self.task.P)])
            raise PolicyError(
                f"user {bad} would be in {int(total.max())} pairs; the task allows P = {self.task.P} "
                "(a repeat of pairs beyond the plan is refused)"
            )

    def check(self, header: dict, job, m: int):
        """Refuse a job that differs from the task or exceeds the plan; a completed job id: its share."""
        self._same_task(header)
        job_id = str(header.get("job_id", ""))
        if not job_id:
            raise PolicyError("a job needs a job_id")
        row = self.db.execute("SELECT digest, state, share FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        if row is not None:
            if row[0] != _digest(header):
                raise PolicyError(f"job {job_id} was already run with other pairs")
            if row[1] == "done":
                from privstats.ustat.mpc.wire import unframe

                return unframe(row[2])  # the same release again: no new noise, nothing new learned
            raise PolicyError(f"job {job_id} was interrupted mid-run; its pairs are spent")
        self._over_plan(self._users(header))
        return None

    # ---- durable record --------------------------------------------------------------------------
    def reserve(self, header: dict) -> None:
        """Count the job's pairs against each user's budget, durably, before the 2PC runs."""
        rows = self._users(header)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._over_plan(rows)
            self.db.execute(
                "INSERT INTO jobs VALUES (?, ?, 'reserved', NULL)", (str(header["job_id"]), _digest(header))
            )
            uniq, cnt = np.unique(rows[rows >= 0], return_counts=True)
            self.db.executemany(
                "INSERT INTO usage VALUES (?, ?) ON CONFLICT(user) DO UPDATE SET pairs = pairs + excluded.pairs",
                [(int(u), int(c)) for u, c in zip(uniq, cnt, strict=True)],
            )
            self.db.executemany(
                "INSERT INTO comparisons VALUES (?, ?, ?)",
                [(str(header["job_id"]), int(a), int(b)) for a, b in rows],
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.usage[uniq] += cnt

    def done(self, header: dict, share: list[bytes]) -> None:
        from privstats.ustat.mpc.wire import frame

        self.db.execute(
            "UPDATE jobs SET state='done', share=? WHERE job_id=?", (frame(share), str(header["job_id"]))
        )

    def pairs_of(self, user: int) -> int:
        return int(self.usage[user])
