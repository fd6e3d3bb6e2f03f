"""The collector of the local model: store ε-LDP reports durably, aggregate, answer collections.

:class:`Collector` is the role's logic (usable without HTTP); :func:`create_app` puts it behind
FastAPI:

==============================  ==============  ================================================
``GET /healthz``                none            200 when the database is open and the state loaded
``POST /tasks/{id}/reports``    upload token    binary upload (:mod:`privstats.services.wire`)
``POST /tasks/{id}/collect``    collect token   JSON ``{"collection_id": ...}`` -> an Estimate
``GET /tasks/{id}/status``      collect token   budget spent and remaining, collections made
==============================  ==============  ================================================

**No exact count leaves the service except the released n.**  A status never carries report
counts, and a refused collection says only that the batch is *below the minimum batch* (the same
text and status whatever the count, so repeated refusals reveal nothing more than the one bit
"below").  The only count a collection publishes is the Estimate's ``n``: local- and shuffle-model
guarantees are stated under *replace* neighbours, for which the number of reports is public (it is
equal for all neighbouring datasets).  (The secure model's DAP collection carries a noisy count:
:mod:`privstats.services.dap.dp`.)
The operator, who holds the database, reads exact counts there (:meth:`Storage.count_reports`).

An upload is validated whole (sizes, task id, every report decodes and is in range) before
anything is written; then, in **one transaction**, the new reports are inserted (a known report
id is a replay and does nothing) and their contribution is folded into the task's mergeable
aggregator state, stored beside them.  The answer (``{"acknowledged", "new", "duplicates"}``) is
sent only after the commit, so an acknowledged report survives a crash, and state and reports
always agree.  Concurrent uploads share commits (*group commit*): whichever request holds the
commit lock writes every upload waiting at that moment in one transaction, one fsync for all,
and each is answered once that commit returns.

A collection needs at least ``task.min_batch`` reports, spends ``task.guarantee`` from the durable
ledger in the same transaction that records its result (an overspend is refused and nothing is
released), and is idempotent per ``collection_id``.  Large states can be rebuilt from the stored
reports through :func:`privstats.engine.aggregate` (:meth:`Collector.rebuild_state`).

>>> import os, tempfile
>>> from privstats.services.tasks import new_task
>>> from privstats.services.storage import Storage
>>> task, secrets = new_task("frequencies", model="local", protocol="grr", params={"domain_size": 4},
...                          epsilon=2.0, min_batch=10)
>>> col = Collector(task, Storage(f"sqlite:///{tempfile.mkdtemp()}/c.sqlite"))
>>> from privstats.client import Client
>>> body = Client(None, task).upload_body(Client(None, task).encode([1] * 20, rng=0))
>>> col.ingest(body)
{'acknowledged': 20, 'new': 20, 'duplicates': 0}
>>> col.ingest(body)["duplicates"]
20
>>> col.collect("first")["n"]
20
"""

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.local.base import CountState
from privstats.services.collection import (
    BELOW_MIN_BATCH,
    STATE_NAME,
    CollectError,
    budget_status,
    check_collection_id,
    load_state,
    run_collection,
)
from privstats.services.storage import Storage
from privstats.services.tasks import RoleSecrets, Task, build_protocol
from privstats.services.wire import WireError, record_layout, unpack_upload_array

__all__ = [
    "BELOW_MIN_BATCH",
    "STATE_NAME",
    "CollectError",
    "Collector",
    "budget_status",
    "check_collection_id",
    "create_app",
    "load_state",
    "run_collection",
]


@dataclass
class _Upload:
    """One parsed upload waiting for a (group) commit."""

    ids: list[bytes]
    rows: np.ndarray
    full: CountState
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, int] | None = None
    error: BaseException | None = None


class Collector:
    """Local-model collector over a :class:`~privstats.services.storage.Storage`."""

    def __init__(
        self,
        task: Task,
        storage: Storage,
        *,
        engine: str = "local",
        scheduler: str | None = None,
        rebuild: bool = False,
    ):
        if task.model != "local":
            raise ValueError(f"the collector serves local-model tasks, not {task.model!r}")
        if engine not in ("local", "dask"):
            raise ValueError(f"engine must be 'local' or 'dask', got {engine!r}")
        if scheduler is not None and engine != "dask":
            raise ValueError("scheduler: only engine='dask' uses a scheduler")
        self.task = task
        self.storage = storage
        self.engine = engine
        self.scheduler = scheduler
        self.oracle = build_protocol(task)
        self.layout = record_layout(self.oracle)
        self.record_size = 16 + self.layout.size
        self.tid = task.id_bytes
        self.max_records = max(1, task.max_request_bytes // self.record_size)
        self._waiting: list[_Upload] = []
        self._waiting_lock = threading.Lock()
        self._commit_lock = threading.Lock()
        storage.ensure_budget(self.tid, task.budget_value)
        with storage.read() as conn:
            has_state = storage.get_aggregate(conn, self.tid, STATE_NAME) is not None
        if (rebuild or not has_state) and storage.count_reports(self.tid):
            # reports without a state (e.g. restored from a report-only backup), or asked for: aggregate
            # every stored report through the engine and replace the incremental state
            self.rebuild_state(store=True)
        storage.ensure_aggregate(self.tid, STATE_NAME, self.oracle.new_state().to_bytes())

    # ---- upload ----------------------------------------------------------------------------------------
    def parse(self, body: bytes) -> tuple[list[bytes], np.ndarray, CountState]:
        """Validate a whole upload: ``(report ids, payload rows, state of all its reports)``.

        Raises :class:`~privstats.services.wire.WireError` (a ValueError) on a foreign task, bad sizes,
        truncation, or a report the protocol refuses (e.g. out of the domain).
        """
        tid, ids, rows = unpack_upload_array(body, record_size=self.record_size, max_records=self.max_records)
        if tid != self.tid:
            raise WireError("the upload names another task")
        cols = self.layout.unpack(rows)
        try:
            state = self.oracle.aggregate(cols)
        except (ValueError, TypeError) as exc:
            raise WireError(f"invalid report: {exc}") from None
        return ids, rows, state

    def ingest(self, body: bytes) -> dict[str, int]:
        """Store and aggregate an upload (in a group commit); returns the counts acknowledged."""
        ids, rows, full = self.parse(body)
        if not ids:
            return {"acknowledged": 0, "new": 0, "duplicates": 0}
        item = _Upload(ids, rows, full)
        with self._waiting_lock:
            self._waiting.append(item)
        while not item.done.is_set():
            # leader/follower: the thread that gets the lock commits everything waiting, itself included
            if self._commit_lock.acquire(timeout=0.05):
                try:
                    with self._waiting_lock:
                        group, self._waiting = self._waiting, []
                    if group:
                        self._commit(group)
                finally:
                    self._commit_lock.release()
        if item.error is not None:
            raise item.error
        assert item.result is not None
        return item.result

    def _commit(self, group: list[_Upload]) -> None:
        """One transaction for every upload in ``group``; each is answered only after its commit."""
        try:
            results = []
            with self.storage.transaction() as conn:
                delta = None
                for item in group:
                    payloads = (
                        [r.tobytes() for r in item.rows] if item.rows.shape[1] else [b""] * len(item.ids)
                    )
                    new = self.storage.insert_reports(conn, self.tid, item.ids, payloads)
                    results.append(
                        {
                            "acknowledged": len(item.ids),
                            "new": len(new),
                            "duplicates": len(item.ids) - len(new),
                        }
                    )
                    if not new:
                        continue
                    part = item.full if len(new) == len(item.ids) else self._state_of(item, new)
                    delta = part if delta is None else delta.merge(part)
                if delta is not None:
                    _, state = load_state(self.storage, conn, self.tid, self.oracle, for_update=True)
                    merged = state.merge(delta)
                    self.storage.put_aggregate(conn, self.tid, STATE_NAME, merged.n, merged.to_bytes())
        except BaseException as exc:  # nothing of the group was committed: every upload fails
            for item in group:
                item.error = exc
                item.done.set()
            raise
        for item, res in zip(group, results, strict=True):
            item.result = res
            item.done.set()

    def _state_of(self, item: _Upload, new: set[bytes]) -> CountState:
        """The state of the reports of ``item`` actually inserted (first occurrence of each new id)."""
        seen: set[bytes] = set()
        keep = np.zeros(len(item.ids), dtype=bool)
        for i, r in enumerate(item.ids):
            if r in new and r not in seen:
                keep[i] = True
                seen.add(r)
        return self.oracle.aggregate(self.layout.unpack(item.rows[keep]))

    # ---- state -------------------------------------------------------------------------------------------
    def state(self) -> CountState:
        """The committed aggregator state (all reports stored so far)."""
        with self.storage.read() as conn:
            return load_state(self.storage, conn, self.tid, self.oracle)[1]

    def _report_batches(self):
        for bodies in self.storage.iter_report_bodies(self.tid):
            rows = np.frombuffer(b"".join(bodies), dtype=np.uint8).reshape(len(bodies), self.layout.size)
            yield self.layout.unpack(rows)

    def rebuild_state(self, *, store: bool = False) -> CountState:
        """Re-aggregate every stored report through :func:`privstats.engine.aggregate` (``engine`` of
        the collector: ``"local"`` chunks, or ``"dask"``); ``store`` replaces the incremental state."""
        from privstats.engine import aggregate

        state = aggregate(self.oracle, self._report_batches(), engine=self.engine, scheduler=self.scheduler)
        if store:
            with self.storage.transaction() as conn:
                self.storage.put_aggregate(conn, self.tid, STATE_NAME, state.n, state.to_bytes())
        return state

    # ---- collection ---------------------------------------------------------------------------------------
    def collect(self, collection_id: Any, min_reports: Any = None) -> dict:
        """Spend the task's per-collection guarantee and release the Estimate of all stored reports.

        Idempotent per ``collection_id`` (a retry returns the stored result and spends nothing).
        Raises :class:`CollectError` (nothing spent) below ``min_batch`` or over the budget.
        """

        def release(conn: Any) -> tuple[int, Any]:
            _, state = load_state(self.storage, conn, self.tid, self.oracle, for_update=True)
            return state.n, (lambda: self.oracle.estimate(state))

        return run_collection(self.storage, self.task, collection_id, release, min_reports)

    def status(self) -> dict:
        """Budget and collections: no report count (see the module's note)."""
        return budget_status(self.storage, self.task, "collector")


# ------------------------------------------------------------------------------------------------- HTTP
def create_app(task: Task, secrets: RoleSecrets, storage: Storage, **options: Any):
    """FastAPI app of the collector role."""
    from privstats.services.app import TaskRoutes, role_app

    collector = Collector(task, storage, **options)
    app, check_task = role_app("collector", task.task_id, collector)
    routes = TaskRoutes(app, check_task, secrets)
    routes.binary("reports", "upload", task.max_request_bytes, collector.ingest, "bad_report")
    routes.collect(collector.collect)
    routes.status("collect", collector.status)
    return app
