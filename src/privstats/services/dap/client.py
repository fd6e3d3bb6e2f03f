"""privstats' own DAP-09 client and collector (what ``@divviup/dap`` does, in Python).

* :class:`DapClient` — per value: a fresh report id, Prio3Histogram sharding of the value's grid cell
  (OS CSPRNG), both input shares sealed with HPKE to the aggregators' configs (bound to the task id,
  report metadata and public share), one ``PUT /tasks/{id}/reports`` per report.
* :func:`collect` — ``PUT`` a collection job for an interval, poll it, open both noisy shares with
  the collector's key and return the task's statistic (see :mod:`privstats.services.dap.dp`).

Example (needs running servers)::

    from privstats.services.dap.client import DapClient, collect
    DapClient("task.json").upload(values)
    ecdf = collect("task.json")
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from privstats.services.dap.codec import (
    COLLECT_REQ,
    REPORT,
    AggregateShareAad,
    Collection,
    CollectionReq,
    InputShareAad,
    Interval,
    PlaintextInputShare,
    Report,
    ReportMetadata,
    Role,
    aggregate_share_info,
    input_share_info,
)
from privstats.services.dap.hpke import open_, seal
from privstats.services.dap.task import DapTask, b64
from privstats.services.tasks import RoleSecrets, Task, load_secrets, load_task

__all__ = ["DapClient", "DapError", "collect"]


class DapError(RuntimeError):
    """A DAP server refused a request (its problem document's type and detail in the message)."""


def _problem(r: Any, what: str) -> DapError:
    try:
        doc = r.json()
        return DapError(f"{what}: {r.status_code} {doc.get('type')}: {doc.get('detail')}")
    except ValueError:
        return DapError(f"{what}: {r.status_code} {r.text[:200]}")


class DapClient:
    """Uploads values of a DAP task (``task.json`` path or :class:`Task`)."""

    def __init__(self, task: str | Path | Task, *, http: Any = None, connections: int | None = None):
        """``connections``: uploads in flight at once (default 8 over its own ``httpx.Client``; 1 —
        sequential, in the calling thread — with a given ``http``, which need not be thread-safe)."""
        import httpx

        self.connections = max(1, int(connections if connections is not None else 1 if http else 8))
        self.task = load_task(task)
        self.dap = DapTask.from_task(self.task)
        self.spec = self.dap.spec
        self.vdaf = self.dap.vdaf()
        self.http = http or httpx.Client(timeout=60.0)

    def report(self, cell: int, t: int) -> Report:
        """One sealed report of grid cell ``cell`` at time ``t`` (already rounded)."""
        vdaf, dap = self.vdaf, self.dap
        rid = os.urandom(16)
        public_b, shares = vdaf.shard_encoded(int(cell), rid, os.urandom(vdaf.RAND_SIZE))
        md = ReportMetadata(rid, int(t))
        aad = InputShareAad(dap.task_id, md, public_b).encode()
        cts = [
            seal(
                dap.hpke_configs[role],
                input_share_info(code),
                aad,
                PlaintextInputShare(b"", shares[i]).encode(),
            )
            for i, (role, code) in enumerate((("leader", Role.LEADER), ("helper", Role.HELPER)))
        ]
        return Report(md, public_b, cts[0], cts[1])

    def upload(self, values, labels=None, *, timestamp: float | None = None) -> int:
        """Upload one report per value; returns how many the leader accepted (201).

        Reports are sharded and sealed here and sent ``connections`` at a time (keep-alive
        connections of one HTTP client): the leader acknowledges a report only once it is on disk,
        and concurrent uploads share its commits.  The first refusal raises :class:`DapError`.
        """
        from concurrent.futures import ThreadPoolExecutor

        cells = np.asarray(self.spec.cells(values, labels)[:, 0]).tolist()
        tp = self.dap.time_precision
        now = time.time() if timestamp is None else float(timestamp)
        t = int(now // tp) * tp
        url = f"{self.dap.url('leader')}/tasks/{self.dap.task_id_b64}/reports"

        def put(body: bytes) -> int:
            r = self.http.put(url, content=body, headers={"Content-Type": REPORT})
            if r.status_code != 201:
                raise _problem(r, "upload")
            return 1

        if self.connections == 1:
            return sum(put(self.report(c, t).encode()) for c in cells)
        sent, step = 0, 32 * self.connections
        pending: list[Any] = []
        with ThreadPoolExecutor(self.connections, thread_name_prefix="dap-upload") as pool:
            for k in range(0, len(cells), step):  # at most two chunks of sealed reports in memory
                bodies = [self.report(c, t).encode() for c in cells[k : k + step]]
                sent += sum(f.result() for f in pending)  # the previous chunk went out meanwhile
                pending = [pool.submit(put, body) for body in bodies]
            return sent + sum(f.result() for f in pending)


def collect(
    task: str | Path | Task,
    secrets: str | Path | RoleSecrets | None = None,
    *,
    interval: Interval | None = None,
    job_id: bytes | None = None,
    timeout: float = 600.0,
    http: Any = None,
    **open_kwargs: Any,
):
    """Collect a batch: the task's statistic (e.g. a PrivateECDF), computed from the noisy shares.

    ``interval`` defaults to everything up to the end of the current time bucket (which cuts the
    batch: later uploads into it are refused).  ``secrets``: the analyst's secrets (its path, or
    ``task.analyst.json`` beside a task path).
    """
    import httpx

    t = load_task(task)
    if secrets is None:
        if isinstance(task, Task):
            raise ValueError("secrets: pass the analyst's secrets when task is a Task object")
        secrets = load_secrets(task, "analyst")
    elif not isinstance(secrets, RoleSecrets):
        secrets = load_secrets(task if not isinstance(task, Task) else ".", "analyst", secrets)
    dap = DapTask.from_task(t)
    tp = dap.time_precision
    if interval is None:
        interval = Interval(0, (int(time.time()) // tp + 1) * tp)
    job_id = job_id or os.urandom(16)
    client = http or httpx.Client(timeout=60.0)
    url = f"{dap.url('leader')}/tasks/{dap.task_id_b64}/collection_jobs/{b64(job_id)}"
    headers = {"Authorization": f"Bearer {secrets.token('collect')}", "Content-Type": COLLECT_REQ}
    r = client.put(url, content=CollectionReq(interval).encode(), headers=headers)
    if r.status_code not in (200, 201):
        raise _problem(r, "collect")
    deadline = time.monotonic() + timeout
    while True:
        r = client.post(url, headers=headers)
        if r.status_code == 200:
            break
        if r.status_code != 202:
            raise _problem(r, "collect")
        if time.monotonic() > deadline:
            raise DapError(f"collect: the collection job did not finish within {timeout} s")
        time.sleep(0.2)
    return open_collection(dap, secrets, Collection.decode(r.content), interval, **open_kwargs)


def open_collection(dap: DapTask, secrets: RoleSecrets, col: Collection, interval: Interval, **kwargs: Any):
    """Decrypt both noisy shares of a ``Collection`` and post-process them into the statistic."""
    from privstats.services.dap.dp import open_noisy
    from privstats.services.dap.store import decode_vec

    vdaf = dap.vdaf()
    modulus = int(vdaf.field.MODULUS)
    cfg = dap.hpke_configs["collector"]
    aad = AggregateShareAad(dap.task_id, b"", interval).encode()
    shares = [
        decode_vec(open_(secrets.private_key_bytes, cfg, ct, aggregate_share_info(role), aad), modulus)
        for ct, role in ((col.leader_share, Role.LEADER), (col.helper_share, Role.HELPER))
    ]
    return open_noisy(dap.spec, shares[0], shares[1], modulus, col.report_count, **kwargs)


def collect_for_client(task: Task, task_path: Path | None, collection_id: str | None, http: Any, **kw: Any):
    """What ``privstats.client.Client.collect()`` does for a DAP task: the statistic itself.

    A ``collection_id`` names the collection job (its SHA-256 prefix), so a retry is idempotent.
    """
    import hashlib

    if task_path is None:
        raise ValueError("task: give Client the task.json path (the analyst's key file sits beside it)")
    job = None if collection_id is None else hashlib.sha256(str(collection_id).encode()).digest()[:16]
    return collect(task_path, job_id=job, http=http, **kw)
