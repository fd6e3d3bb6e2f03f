"""``privstats collect`` for a pairs task: the aggregator pairs users, drives the jobs, estimates.

The aggregator never sees a value: it asks each party how many users it holds, draws the pairs
(OS randomness; P rounds), and sends each party only the indices of its own users in each pair.  Its
state (the plan and every job's released outputs) is kept in SQLite next to the task, so a run that
stops (a party killed, the network down) is resumed by running ``collect`` again: finished jobs are not
run again, a job a party reports as interrupted has spent its pairs and is left out of the estimate
(never counted twice), and the rest run as planned.

>>> rows_for("two-sample", np.array([[0, 5], [1, 2]]), 3)[1].tolist()
[[-1, 5], [-1, 2]]
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from privstats.estimate import Estimate, constrain
from privstats.privacy.guarantees import ApproxDP, PureDP
from privstats.ustat.pairs import PairsProtocol, combination_variance

from .task import PairsTask, open_task_db, read_pairs_task, read_role_secrets

__all__ = ["CollectError", "collect_pairs", "estimate_from_outputs", "plan_pairs", "rows_for"]

STATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan (id INTEGER PRIMARY KEY CHECK (id = 0), pairs BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, start INTEGER NOT NULL, stop INTEGER NOT NULL, state TEXT NOT NULL,
    outputs BLOB, error TEXT
);
"""


class CollectError(RuntimeError):
    """The run stopped (a party is unreachable); the state is kept, ``collect`` again resumes it."""


def plan_pairs(task: PairsTask, n_left: int, n_right: int) -> np.ndarray:
    """(pairs, 2) user ids: two-sample (left index, right index); otherwise ids of the users."""
    proto = PairsProtocol(lambda a, b: a, epsilon=task.epsilon, P=task.P, kernel_range=(0.0, 1.0))
    if task.layout == "two-sample":
        return proto.make_bipartite_pairs(n_left, n_right)
    if task.layout == "vertical":
        if n_left != n_right:
            raise ValueError(
                f"vertical task: the parties hold {n_left} and {n_right} users (rows must align)"
            )
        return proto.make_pairs(n_left)
    return proto.make_pairs(n_left + n_right)


def rows_for(layout: str, pairs: np.ndarray, n_left: int) -> tuple[np.ndarray, np.ndarray]:
    """Each party's rows: its local user index in each slot, −1 where the slot is not its user."""
    p = np.asarray(pairs, dtype=np.int64)
    if layout == "two-sample":
        neg = -np.ones(len(p), np.int64)
        return np.stack([p[:, 0], neg], 1), np.stack([neg, p[:, 1]], 1)
    if layout == "vertical":
        return p, p
    return np.where(p < n_left, p, -1), np.where(p >= n_left, p - n_left, -1)


class _State:
    def __init__(self, path: Path, task: PairsTask):
        self.db = open_task_db(path, STATE, task.task_id, "state")

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def pairs(self) -> np.ndarray | None:
        row = self.db.execute("SELECT pairs FROM plan").fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.int64).reshape(-1, 2)

    def save_plan(self, pairs: np.ndarray, n_left: int, n_right: int, batch: int, task_id: str) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO plan VALUES (0, ?)", (np.ascontiguousarray(pairs, np.int64).tobytes(),))
        self.db.executemany(
            "INSERT INTO meta VALUES (?, ?)", [("n_left", str(n_left)), ("n_right", str(n_right))]
        )
        jobs = [
            (f"{task_id}-{k}", s, min(s + batch, len(pairs)))
            for k, s in enumerate(range(0, len(pairs), batch))
        ]
        self.db.executemany("INSERT INTO jobs VALUES (?, ?, ?, 'pending', NULL, NULL)", jobs)
        self.db.execute("COMMIT")

    def jobs(self, state: str | None = None) -> list[tuple]:
        q = "SELECT job_id, start, stop, state, outputs FROM jobs"
        rows = self.db.execute(
            q + (" WHERE state=?" if state else "") + " ORDER BY start", (state,) if state else ()
        )
        return rows.fetchall()

    def finish(self, job_id: str, state: str, outputs: np.ndarray | None, error: str | None = None) -> None:
        blob = None if outputs is None else np.ascontiguousarray(outputs, np.int64).tobytes()
        self.db.execute(
            "UPDATE jobs SET state=?, outputs=?, error=? WHERE job_id=?", (state, blob, error, job_id)
        )


def _connect(task: PairsTask, tokens: dict, timeout: float):
    import socket

    from privstats.ustat.mpc.session import SpuSession

    addrs = (task.parties["left"]["listen"], task.parties["right"]["listen"])
    try:
        sess = SpuSession(parties=addrs, tokens=(tokens["left"], tokens["right"]))
    except OSError as exc:
        raise CollectError(
            f"cannot reach the parties at {addrs}: {exc}; start them and collect again"
        ) from None
    for s in sess.socks:
        s.settimeout(timeout)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return sess


def _run_job(sess, task: PairsTask, io, libspu, job_id: str, rows: tuple[np.ndarray, np.ndarray]):
    """('done', outputs) or ('lost', error): a refusal for an interrupted job spends its pairs."""
    from privstats.ustat.mpc.backend import reconstruct

    m = len(rows[0])
    h = {"op": "job", **task.job_header(), "job_id": job_id, "m": m}
    try:
        shares = sess.run(({**h, "rows": rows[0].tolist()}, {**h, "rows": rows[1].tolist()}), None, None)
    except RuntimeError as exc:
        if "interrupted" in str(exc) or "already run" in str(exc):
            return "lost", str(exc)
        raise CollectError(
            f"job {job_id} failed ({exc}); the state is kept: collect again to resume"
        ) from None
    return "done", reconstruct(io, libspu, shares, m, len(task.kernels))


def collect_pairs(
    task_path: str | Path,
    *,
    secrets_path: str | Path | None = None,
    state_path: str | Path | None = None,
    timeout: float = 600.0,
    progress=None,
) -> Estimate:
    """Drive (or resume) the task's jobs and return its Estimate; :class:`CollectError` if a party is
    unreachable mid-run (the state is kept: collect again to resume)."""
    from privstats.ustat.mpc.circuit import require_spu, runtime_config

    task = read_pairs_task(task_path)
    tokens = read_role_secrets(task_path, "aggregator", secrets_path)["tokens"]
    state = _State(
        Path(state_path or Path(task_path).with_name(f"{Path(task_path).stem}.aggregator.db")), task
    )
    spu, libspu = require_spu()
    io = spu.Io(2, runtime_config(libspu))
    sess = _connect(task, tokens, timeout)
    try:
        left, right = sess.hello({"task_id": task.task_id})
        for role, r in (("left", left), ("right", right)):
            if r.get("task_id") != task.task_id:
                raise ValueError(f"the {role} party serves task {r.get('task_id')}, not {task.task_id}")
        if state.pairs() is None:
            pairs = plan_pairs(task, int(left["n"]), int(right["n"]))
            state.save_plan(pairs, int(left["n"]), int(right["n"]), task.batch_size, task.task_id)
        planned, n_left = state.pairs(), int(state.meta("n_left") or 0)
        assert planned is not None
        pairs = planned
        rows = rows_for(task.layout, pairs, n_left)
        for job_id, s, e, _, _ in state.jobs("pending"):
            st, out = _run_job(sess, task, io, libspu, job_id, (rows[0][s:e], rows[1][s:e]))
            state.finish(job_id, st, out if st == "done" else None, None if st == "done" else str(out))
            if progress is not None:
                progress(job_id, st)
    except (ConnectionError, OSError) as exc:
        raise CollectError(
            f"a party stopped mid-run ({exc}); the state is kept: collect again to resume"
        ) from None
    finally:
        sess.close()
    return estimate_from_outputs(task, state, pairs, n_left, int(state.meta("n_right") or 0))


def _gather(task: PairsTask, state: _State, pairs: np.ndarray):
    keep, outs = [], []
    for _, s, e, _, blob in state.jobs("done"):
        keep.append(np.arange(s, e))
        outs.append(np.frombuffer(blob, dtype=np.int64).reshape(e - s, len(task.kernels)))
    if not keep:
        raise CollectError("no job of the plan finished: nothing to estimate")
    idx = np.concatenate(keep)
    lost = sum(e - s for _, s, e, _, _ in state.jobs("lost"))
    return pairs[idx], np.concatenate(outs), lost


def estimate_from_outputs(
    task: PairsTask, state: _State, pairs: np.ndarray, n_left: int, n_right: int
) -> Estimate:
    """The Estimate from the finished jobs' released outputs (lost jobs' pairs are left out)."""
    from privstats.ustat.mpc.backend import SECURITY, debias, noise_variance
    from privstats.ustat.mpc.circuit import JobSpec

    job = JobSpec.from_header(task.job_header())
    used, raw, lost = _gather(task, state, pairs)
    vals = [debias(o, raw[:, k]) for k, o in enumerate(job.outputs)]
    protos = [_proto(task, o, noise_variance(o), SECURITY) for o in job.outputs]
    n = n_left if task.layout == "vertical" else n_left + n_right
    if task.statistic == "auc":
        value, var, info = protos[0].estimate_two_sample(vals[0], used, n_pos=n_left, n_neg=n_right)
        support: tuple[float, float] = (0.0, 1.0)
    elif task.statistic == "kendall_tau":
        ta, var, info = protos[0].estimate(vals[0], used, n=n)
        ny, nz = (max(protos[k].estimate(vals[k], used, n=n)[0], 1e-3) for k in (1, 2))
        value = ta / math.sqrt(ny * nz)
        grad = [1 / math.sqrt(ny * nz), -value / (2 * ny), -value / (2 * nz)]
        var = combination_variance(
            vals, grad, [p.backend.noise_variance for p in protos], used, n=n, P=task.P
        )
        support = (-1.0, 1.0)
    else:
        value, var, info = protos[0].estimate(vals[0], used, n=n)
        w = task.bounds[0][1] - task.bounds[0][0] if job.spec.name == "absdiff" else 1.0
        value, var = w * value, w * w * var
        support = (job.spec.lo * w, job.spec.hi * w)
    delta = task.P * sum(o.plan.delta for o in job.outputs)
    est = Estimate(
        value=float(value),
        stderr=math.sqrt(max(float(var), 0.0)),
        guarantee=ApproxDP(task.epsilon, delta) if delta > 0 else PureDP(task.epsilon),
        model="secure",
        protocol="ustat-pairs",
        params={"P": task.P, "kernels": task.kernels, "layout": task.layout, "task_id": task.task_id},
        n=n,
        messages_per_user=float(task.P),
        details={**info, "pairs_lost": int(lost), "backend": "spu", "security": SECURITY},
    )
    return constrain(est, *support)


class _Released:
    def __init__(self, noise_variance: float, security: str):
        self.noise_variance, self.security = noise_variance, security


def _proto(task: PairsTask, o, noise_var: float, security: str) -> PairsProtocol:
    mech = "rr" if o.mechanism == "rr" else "laplace"
    kr = (o.spec.lo, o.spec.hi)
    return PairsProtocol(
        lambda a, b: a,
        epsilon=o.pair_epsilon * task.P,
        P=task.P,
        kernel_range=kr,
        mechanism=mech,
        backend=_Released(noise_var, security),  # type: ignore[arg-type]
    )
