"""The shuffle model's two server roles: the shuffler (anonymises) and the analyzer (decrypts, aggregates).

**Shuffler** (:class:`ShufflerRole`).  Clients upload reports whose payload is the user's ``m``
messages, each HPKE-encrypted separately to the analyzer (the shuffler cannot read them; every
ciphertext has the same length).  A report is exactly ``m`` ciphertexts — the record size is
fixed, so no report carries more or fewer messages (:func:`messages_per_report`) — and a report id
counts once (replays, within an upload or across uploads, are acknowledged and not stored again).
The shuffler stores each report durably under its report id and acknowledges after the commit.
When at least ``task.min_batch`` reports
are pending and no upload arrived for ``linger_seconds`` (1 s; or the pool fills a whole batch, or it
has waited ``max_linger_seconds``, 30 s, so a client trickling uploads cannot hold a batch back), a
background worker puts them into new batches of equal size (one transaction each), splits them
into single messages, permutes the messages with the OS CSPRNG and forwards them to the analyzer as
one opaque block: no report id, no timestamp, no order, no connection detail leaves the shuffler —
only the batch's random id, its number of reports and the ciphertexts.  After the analyzer has
acknowledged, the batch's bodies are erased (the report ids stay, as replay protection).  A batch
interrupted by a crash is forwarded again on restart with the same batch id (a fresh permutation);
the analyzer applies a batch id once.

**Analyzer** (:class:`AnalyzerRole`).  Accepts batches only from the shuffler (forward token),
decrypts each message (HPKE info binds the task id), drops messages that do not open or that the
protocol refuses (not fatal: a malicious client cannot block a batch), and counts the reports
itself: ``floor(well-formed messages / m)`` — the report count the batch header claims is only
checked against its length, never trusted.  A batch whose own count is below ``task.min_batch``
is acknowledged (so the shuffler erases it) but not applied; otherwise its messages are folded
into the protocol's mergeable state in the same transaction that records the batch id.
Collections are as in the collector (:func:`~privstats.services.collection.run_collection`).

What one malicious client can shift: everything it sends is one report of ``m`` messages per
report id; each message counts like any honest message, so one report moves an item's estimate by
at most ``m`` (k-RR, RAPPOR: one message; Hadamard: ``k + ρ``, every message voting for the item;
summation: ``blanket + 1`` messages of value 1; Count-Min: ``message_cap`` cells) — see the README.
No status or refusal carries a report or message count (:mod:`privstats.services.collector`).

=================================  ===============  =============================================
``POST /tasks/{id}/reports``       upload token     shuffler: binary upload
``GET  /tasks/{id}/status``        upload token     shuffler: whether its worker runs (no counts)
``POST /tasks/{id}/batches``       forward token    analyzer: a shuffled batch from the shuffler
``POST /tasks/{id}/collect``       collect token    analyzer: an Estimate
``GET  /tasks/{id}/status``        collect token    analyzer: budget and collections (no counts)
=================================  ===============  =============================================
"""

import contextlib
import dataclasses
import math
import os
import threading
import time
from typing import Any

import numpy as np

from privstats.local.base import CountState
from privstats.services.collection import STATE_NAME, budget_status, load_state, run_collection
from privstats.services.security import HPKE_OVERHEAD, hpke_info, hpke_open_many
from privstats.services.storage import Storage
from privstats.services.tasks import RoleSecrets, Task, build_protocol
from privstats.services.wire import (
    WireError,
    pack_batch,
    record_layout,
    unpack_batch,
    unpack_upload_array,
)

__all__ = [
    "AnalyzerRole",
    "ShufflerRole",
    "create_analyzer_app",
    "create_shuffler_app",
    "messages_per_report",
    "operator_counts",
]

DROPPED_NAME = "dropped"


def messages_per_report(oracle: Any) -> int:
    """The fixed number of messages one user sends (1; k + ρ for Hadamard; blanket + 1 for summation;
    the padded cap for Count-Min)."""
    inner = oracle.protocol
    if inner.name in ("shuffle-krr", "shuffle-rappor"):
        return 1
    if inner.name == "shuffle-hadamard":
        return int(inner.k + inner.rho)
    if inner.name == "shuffle-sum":
        return int(inner.blanket + 1)
    if inner.name == "shuffle-countmin":
        return int(inner.message_cap)
    raise ValueError(
        f"protocol {inner.name!r} sends a data-dependent number of messages; the shuffler "
        "service needs a fixed number per user"
    )


class _ShuffleTask:
    def __init__(self, task: Task):
        if task.model != "shuffle":
            raise ValueError(f"the shuffler and analyzer serve shuffle-model tasks, not {task.model!r}")
        self.task = task
        self.tid = task.id_bytes
        self.oracle = build_protocol(task)
        self.layout = record_layout(self.oracle)
        self.m = messages_per_report(self.oracle)
        self.ct_size = self.layout.size + HPKE_OVERHEAD
        self.record_size = 16 + self.m * self.ct_size


class ShufflerRole(_ShuffleTask):
    """Store encrypted reports, release shuffled batches of at least ``min_batch`` reports to the analyzer."""

    def __init__(
        self,
        task: Task,
        secrets: RoleSecrets,
        storage: Storage,
        *,
        poll_seconds: float = 0.5,
        forward_timeout: float = 600.0,
        max_batch_messages: int = 500_000,
        linger_seconds: float = 1.0,
        max_linger_seconds: float = 30.0,
    ):
        super().__init__(task)
        self.secrets = secrets
        self.storage = storage
        self.analyzer_url = task.url("analyzer")
        self.poll_seconds = poll_seconds
        self.forward_timeout = forward_timeout
        self.max_batch_messages = max_batch_messages
        self.linger_seconds = linger_seconds
        self.max_linger_seconds = max_linger_seconds
        self._last_upload = -math.inf
        self._waiting_since: float | None = None  # when a full-enough pool was first held back
        self.max_records = max(1, task.max_request_bytes // self.record_size)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.forwarded_batches = 0

    # ---- uploads ----------------------------------------------------------------------------------------
    def ingest(self, body: bytes) -> dict[str, int]:
        """Store an upload (structure checked; contents are opaque); acknowledged after the commit."""
        tid, ids, rows = unpack_upload_array(body, record_size=self.record_size, max_records=self.max_records)
        if tid != self.tid:
            raise WireError("the upload names another task")
        if not ids:
            return {"acknowledged": 0, "new": 0, "duplicates": 0}
        payloads = [r.tobytes() for r in rows]
        with self.storage.transaction() as conn:
            new = self.storage.insert_reports(conn, self.tid, ids, payloads)
        if new:
            self._last_upload = time.monotonic()
            self._wake.set()
        return {"acknowledged": len(ids), "new": len(new), "duplicates": len(ids) - len(new)}

    # ---- batches ----------------------------------------------------------------------------------------
    def _shuffled_messages(self, batch_id: bytes) -> tuple[list[bytes], int]:
        with self.storage.read() as conn:
            bodies = self.storage.batch_bodies(conn, self.tid, batch_id)
        if not bodies:
            return [], 0
        arr = np.frombuffer(b"".join(bodies), dtype=np.uint8).reshape(len(bodies) * self.m, self.ct_size)
        from privstats.privacy.randomness import SecureSource

        order = SecureSource().permutation(arr.shape[0])  # OS CSPRNG, always
        shuffled = arr[order]
        return [r.tobytes() for r in shuffled], len(bodies)

    def forward(self, batch_id: bytes) -> bool:
        """Send one batch (shuffled afresh) to the analyzer; True once it acknowledged and is erased."""
        import httpx

        msgs, n_reports = self._shuffled_messages(batch_id)
        body = pack_batch(self.tid, batch_id, n_reports, msgs)
        url = f"{self.analyzer_url}/tasks/{self.task.task_id}/batches"
        headers = {
            "Authorization": f"Bearer {self.secrets.token('forward')}",
            "Content-Type": "application/octet-stream",
        }
        try:
            with httpx.Client(timeout=self.forward_timeout) as http:
                resp = http.post(url, content=body, headers=headers)
        except httpx.TransportError:
            return False
        if resp.status_code != 200:
            return False
        with self.storage.transaction() as conn:
            self.storage.finish_batch(conn, self.tid, batch_id, erase_bodies=True)
        self.forwarded_batches += 1
        return True

    def step(self) -> int:
        """One round of the worker: finish interrupted batches, then cut and forward a new one if the
        pool holds at least ``min_batch`` reports.  Returns the number of batches forwarded."""
        done = 0
        for batch_id, _n in self.storage.pending_batches(self.tid, "shuffler"):
            if self._stop.is_set() or not self.forward(batch_id):
                return done
            done += 1
        # cut batches of at least min_batch reports and at most ~max_batch_messages messages (a backlog
        # after an analyzer outage goes out in bounded requests), of equal sizes; a remainder below
        # min_batch waits.  While uploads keep arriving (one within linger_seconds) and fit in one batch,
        # wait for them: a batch cut mid-upload made a collection right after `submit` see 1,000 of 5,000
        limit = max(self.task.min_batch, self.max_batch_messages // self.m)
        while not self._stop.is_set():
            pending = self.storage.count_reports(self.tid, pending_only=True)
            now = time.monotonic()
            if pending < self.task.min_batch:
                break
            if pending < limit and now - self._last_upload < self.linger_seconds:
                self._waiting_since = self._waiting_since if self._waiting_since is not None else now
                if now - self._waiting_since < self.max_linger_seconds:
                    break  # uploads are arriving: wait for them (at most max_linger_seconds)
            self._waiting_since = None
            size = -(-pending // -(-pending // limit))  # ceil(pending / number of batches)
            batch_id = os.urandom(16)
            with self.storage.transaction() as conn:
                n = self.storage.assign_batch(conn, self.tid, batch_id, "shuffler", limit=size)
            if not n or not self.forward(batch_id):
                break
            done += 1
        return done

    def _run(self) -> None:
        backoff = self.poll_seconds
        while not self._stop.is_set():
            try:
                ok = True
                self.step()
                ok = not self.storage.pending_batches(self.tid, "shuffler")
            except Exception:
                ok = False
            backoff = self.poll_seconds if ok else min(backoff * 2, 10.0)
            self._wake.wait(backoff)
            self._wake.clear()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="privstats-shuffler", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the worker after its current step (a batch being forwarded finishes or stays pending)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def status(self) -> dict:
        """Whether the forwarding worker runs; no counts (clients hold the token that reads this)."""
        return {
            "task_id": self.task.task_id,
            "role": "shuffler",
            "worker_running": self._thread is not None and self._thread.is_alive(),
        }


class AnalyzerRole(_ShuffleTask):
    """Decrypt shuffled batches, aggregate, answer collections."""

    def __init__(self, task: Task, secrets: RoleSecrets, storage: Storage):
        super().__init__(task)
        self.secrets = secrets
        self.storage = storage
        self._sk = secrets.private_key_bytes
        self._info = hpke_info("shuffle", self.tid)
        self.field = next(iter(self.oracle.report_fields))
        storage.ensure_budget(self.tid, task.budget_value)
        storage.ensure_aggregate(self.tid, STATE_NAME, self.oracle.new_state().to_bytes())
        storage.ensure_aggregate(self.tid, DROPPED_NAME, b"")

    def _fold(self, plaintexts: list[bytes]) -> tuple[CountState, int]:
        """State of the messages the protocol accepts, and how many it refused."""
        if not plaintexts:
            return self.oracle.new_state(), 0
        sizes_ok = [p for p in plaintexts if len(p) == self.layout.size]
        bad = len(plaintexts) - len(sizes_ok)
        if not sizes_ok:
            return self.oracle.new_state(), bad
        rows = np.frombuffer(b"".join(sizes_ok), dtype=np.uint8).reshape(len(sizes_ok), self.layout.size)
        cols = self.layout.unpack(rows)
        try:
            return self.oracle.aggregate(cols), bad
        except (ValueError, TypeError):
            pass
        # someone sent junk: keep the valid messages, found by bisection (O(junk * log n) folds)
        col = cols[self.field]
        state = self.oracle.new_state()
        todo = [(0, len(col))]
        while todo:
            lo, hi = todo.pop()
            try:
                state = self.oracle.aggregate({self.field: col[lo:hi]}, state)
            except (ValueError, TypeError):
                if hi - lo == 1:
                    bad += 1
                else:
                    mid = (lo + hi) // 2
                    todo += [(lo, mid), (mid, hi)]
        return state, bad

    def receive(self, body: bytes) -> dict:
        """Apply a batch from the shuffler once (a repeated batch id changes nothing).

        The report count is the analyzer's own: ``floor(well-formed messages / m)``; a batch whose
        count is below ``task.min_batch`` is recorded (so it is not sent again) but not applied.
        """
        tid, batch_id, n_claimed, msgs = unpack_batch(body)
        if tid != self.tid:
            raise WireError("the batch names another task")
        if msgs.shape[0] and msgs.shape[1] != self.ct_size:
            raise WireError(f"messages must be {self.ct_size} bytes")
        if msgs.shape[0] != n_claimed * self.m:
            raise WireError(f"a batch must carry {self.m} messages per report")
        plaintexts, undecryptable = hpke_open_many(self._sk, (r.tobytes() for r in msgs), self._info)
        delta, refused = self._fold(plaintexts)
        n_reports = (int(msgs.shape[0]) - undecryptable - refused) // self.m
        applied = n_reports >= self.task.min_batch
        with self.storage.transaction() as conn:
            if not self.storage.record_batch(
                conn, self.tid, batch_id, "analyzer", n_reports if applied else 0
            ):
                return {"batch": batch_id.hex(), "applied": False}
            if applied:
                self._apply(conn, delta, n_reports, undecryptable + refused)
        return {"batch": batch_id.hex(), "applied": applied}

    def _apply(self, conn: Any, delta: CountState, n_reports: int, dropped: int) -> None:
        n_before, state = load_state(self.storage, conn, self.tid, self.oracle, for_update=True)
        merged = state.merge(delta)
        self.storage.put_aggregate(conn, self.tid, STATE_NAME, n_before + n_reports, merged.to_bytes())
        drow = self.storage.get_aggregate(conn, self.tid, DROPPED_NAME, for_update=True)
        self.storage.put_aggregate(conn, self.tid, DROPPED_NAME, (drow[0] if drow else 0) + dropped, b"")

    def collect(self, collection_id: Any, min_reports: Any = None) -> dict:
        """As the collector's: min batch (in reports), durable budget, idempotent per collection id."""

        def release(conn: Any) -> tuple[int, Any]:
            n, state = load_state(self.storage, conn, self.tid, self.oracle, for_update=True)

            def make() -> Any:
                est = self.oracle.estimate(state)
                return dataclasses.replace(est, n=int(n), details={**est.details, "messages": int(state.n)})

            return n, make

        return run_collection(self.storage, self.task, collection_id, release, min_reports)

    def status(self) -> dict:
        """Budget and collections; no report, message or dropped count (the operator reads those in
        the database: :func:`operator_counts`)."""
        return budget_status(self.storage, self.task, "analyzer")


def operator_counts(storage: Storage, task: Task) -> dict[str, int]:
    """Exact counts for the operator, who holds the database (never served over HTTP): reports and
    messages applied and messages dropped (analyzer's database), reports stored and pending
    (shuffler's).  Open ``storage`` with the role's key, ``Storage(db, key=secrets.integrity_key_bytes)``,
    as the aggregates carry its MAC."""
    tid = task.id_bytes
    with storage.read() as conn:
        row = storage.get_aggregate(conn, tid, STATE_NAME)
        drow = storage.get_aggregate(conn, tid, DROPPED_NAME)
    return {
        "n_reports": 0 if row is None else int(row[0]),
        "n_messages": 0 if row is None else CountState.from_bytes(row[1]).n,
        "dropped_messages": int(drow[0]) if drow else 0,
        "stored_reports": storage.count_reports(tid),
        "pending_reports": storage.count_reports(tid, pending_only=True),
        "pending_batches": len(storage.pending_batches(tid, "shuffler")),
    }


# ------------------------------------------------------------------------------------------------- HTTP
def create_shuffler_app(task: Task, secrets: RoleSecrets, storage: Storage, **options: Any):
    """FastAPI app of the shuffler; its forwarding worker runs for the app's lifetime."""
    from fastapi.concurrency import run_in_threadpool

    from privstats.services.app import TaskRoutes, role_app

    role = ShufflerRole(task, secrets, storage, **options)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any):
        role.start()
        yield
        await run_in_threadpool(role.stop)

    app, check_task = role_app("shuffler", task.task_id, role, lifespan=lifespan)
    routes = TaskRoutes(app, check_task, secrets)
    routes.binary("reports", "upload", task.max_request_bytes, role.ingest, "bad_report")
    routes.status("upload", role.status)
    return app


def create_analyzer_app(task: Task, secrets: RoleSecrets, storage: Storage, **options: Any):
    """FastAPI app of the analyzer."""
    from privstats.services.app import TaskRoutes, role_app

    role = AnalyzerRole(task, secrets, storage, **options)
    app, check_task = role_app("analyzer", task.task_id, role)
    routes = TaskRoutes(app, check_task, secrets)
    routes.binary("batches", "forward", max(task.max_request_bytes, 1 << 30), role.receive, "bad_batch")
    routes.collect(role.collect)
    routes.status("collect", role.status)
    return app
