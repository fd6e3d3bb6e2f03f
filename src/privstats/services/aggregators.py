"""The leader and the helper of a secure task: their logic (the FastAPI apps are in
:mod:`privstats.services.secure_apps`).  No status and no refusal carries a report count; an
add-remove task's collection carries none either (:meth:`Leader._finish_collection`).

``privstats serve leader|helper --task task.json [--secret FILE] [--db URL] [--host H] [--port N]``

Leader (clients talk only to it):

* ``POST /tasks/{task}/reports`` (upload token): a batch of reports, each a report id,
  the leader's HPKE-encrypted share and the helper's HPKE-encrypted seed.  The leader
  decrypts its own share (a malformed request is refused whole, nothing stored), stores
  it with the helper's ciphertext (which it cannot read), and acknowledges after the
  commit.  A report id already stored is acknowledged and not stored again.
* a background driver turns pending reports into verification jobs with the helper:
  ``init`` (the leader's d shares and the helper's ciphertexts → the helper's d and W
  shares and its replay flags), then ``finish`` (the leader's W shares → the helper's
  accept mask, which must equal the leader's).  Each job is stored before it is sent,
  so after a crash it is resumed under the same id, and the helper answers a repeated
  step from its stored state: nothing is added twice.  Valid reports are added to the
  batch total and scrubbed; invalid ones are counted.
* ``POST /tasks/{task}/collect`` (collect token): stops new jobs, drains the pending
  reports, refuses a batch under the minimum size, charges the ledger once (a row per
  batch), closes the batch, obtains the helper's partial and its own (each drawn once and
  stored), each HPKE-encrypted to the collector, and opens the next batch.
  ``GET /tasks/{task}/collections/{batch}`` returns a stored collection again.

Helper (only the leader talks to it, with the server-to-server token):
``PUT /tasks/{task}/batches/{b}`` (announce), ``POST /tasks/{task}/jobs/{job}/init``,
``POST /tasks/{task}/jobs/{job}/finish``, ``POST /tasks/{task}/batches/{b}/collect``.
It refuses jobs and collections for batches the leader did not announce, a second
collection of a closed batch (another collection id), a batch under the minimum size,
and reports it has already seen (replays).

Both: ``GET /healthz``; SIGTERM lets uvicorn finish in-flight requests, then the driver
stops and the process exits 0.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
from typing import Any

import numpy as np
import sqlalchemy as sa

from privstats.secure.leader_helper import BatchTotal, SecureAggregator, SecureSpec, decode_shares
from privstats.services.secure_storage import (
    SecureStore,
    batches_table,
    jobs_table,
    ledger_table,
    reports_table,
)
from privstats.services.secure_tasks import spec_of, verify_key
from privstats.services.security import HPKE_OVERHEAD, hpke_info, hpke_open

__all__ = ["BELOW_MIN_BATCH", "JOB_SIZE", "Helper", "Leader", "operator_progress", "payload_sizes"]

log = logging.getLogger("privstats.secure")
#: the one refusal below the minimum batch (never the count; the collector's text)
BELOW_MIN_BATCH = "the batch is below the minimum batch; nothing was released"
JOB_SIZE = 1000
HELPER_CT_LEN = HPKE_OVERHEAD + 16  # the helper's sealed 16-byte seed


def payload_sizes(spec: SecureSpec) -> tuple[int, int]:
    """(leader ciphertext, helper ciphertext) sizes of one report's upload payload."""
    return HPKE_OVERHEAD + 8 * spec.layout.share_length, HELPER_CT_LEN


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _unb64(s: Any, what: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except Exception:
        raise ValueError(f"{what}: not base64") from None


class _Server:
    """State shared by both roles."""

    def __init__(self, role: str, task, secrets, storage):
        self.role = role
        self.task = task
        self.secrets = secrets
        if secrets.task_id != task.task_id or secrets.role != role:
            raise ValueError(f"the secrets are not the {role}'s secrets of task {task.task_id}")
        self.task_id: str = task.task_id
        self.tid: bytes = task.id_bytes
        self.spec: SecureSpec = spec_of(task)
        self.min_batch = int(task.min_batch)
        self.store = SecureStore(storage)
        party = 0 if role == "leader" else 1
        self.agg = SecureAggregator(self.spec, party, verify_key(secrets), self.tid)
        self.zero_total = np.zeros(self.spec.layout.length, dtype=np.uint64).astype("<u8").tobytes()
        self.sk = secrets.private_key_bytes

    def ensure_batch(self, conn, batch_id: int) -> None:
        self.store.insert_ignore(
            conn,
            batches_table,
            [
                {
                    "task_id": self.task_id,
                    "batch_id": batch_id,
                    "state": 0,
                    "total": self.zero_total,
                    "n_valid": 0,
                    "n_invalid": 0,
                }
            ],
        )

    def batch_row(self, conn, batch_id: int):
        return conn.execute(
            sa.select(batches_table).where(
                batches_table.c.task_id == self.task_id, batches_table.c.batch_id == batch_id
            )
        ).first()

    def add_to_batch(self, conn, batch_id: int, shares: np.ndarray, accept: np.ndarray) -> None:
        row = self.batch_row(conn, batch_id)
        if row is None or row.state != 0:
            raise RuntimeError(f"batch {batch_id} is not open")
        total = BatchTotal(
            np.frombuffer(row.total, dtype="<u8").astype(np.uint64), int(row.n_valid), int(row.n_invalid)
        )
        total.add(shares, accept)
        conn.execute(
            batches_table.update()
            .where(batches_table.c.task_id == self.task_id, batches_table.c.batch_id == batch_id)
            .values(total=total.to_bytes(), n_valid=total.n_valid, n_invalid=total.n_invalid)
        )

    def partial_bytes(self, row) -> bytes:
        """This server's partial for a batch (noise drawn here; the caller stores it: drawn once)."""
        total = BatchTotal(
            np.frombuffer(row.total, dtype="<u8").astype(np.uint64), int(row.n_valid), int(row.n_invalid)
        )
        return self.agg.partial(total).astype("<u8").tobytes()


# ------------------------------------------------------------------------------ helper


class Helper(_Server):
    def __init__(self, task, secrets, storage):
        super().__init__("helper", task, secrets, storage)

    def announce(self, batch_id: int) -> None:
        with self.store.lock, self.store.transaction() as conn:
            self.ensure_batch(conn, batch_id)

    def init_job(self, job_id: str, body: dict) -> dict:
        batch_id = int(body["batch_id"])
        rids = _unb64(body["report_ids"], "report_ids")
        cts = [_unb64(c, "helper_cts") for c in body["helper_cts"]]
        d_leader = np.frombuffer(_unb64(body["d"], "d"), dtype="<u8").astype(np.uint64)
        B = len(cts)
        if (
            len(rids) != 16 * B
            or d_leader.size != B * self.spec.layout.n_blocks
            or B == 0
            or B > 10 * JOB_SIZE
        ):
            raise ValueError("job: report ids, ciphertexts and d shares do not match")
        ids = [rids[16 * i : 16 * i + 16] for i in range(B)]
        with self.store.lock, self.store.transaction() as conn:
            job = conn.execute(
                sa.select(jobs_table).where(
                    jobs_table.c.task_id == self.task_id, jobs_table.c.job_id == job_id
                )
            ).first()
            if job is not None:
                if job.report_ids != rids or job.batch_id != batch_id:
                    raise _Conflict("job id reused for other reports")
                return {"d": _b64(job.d_share), "w": _b64(job.w_share), "replay": _b64(job.replay)}
            brow = self.batch_row(conn, batch_id)
            if brow is None:
                raise _Conflict(f"batch {batch_id} was not announced by the leader")
            if brow.state != 0:
                raise _Conflict(f"batch {batch_id} is closed")
            seen = set()
            for start in range(0, B, 500):
                chunk = ids[start : start + 500]
                seen |= {
                    bytes(r[0])
                    for r in conn.execute(
                        sa.select(reports_table.c.report_id).where(
                            reports_table.c.task_id == self.task_id, reports_table.c.report_id.in_(chunk)
                        )
                    )
                }
            bad, seeds, first = self._open_seeds(ids, cts, seen)
            shares = decode_shares(self.spec, seeds, 1)
            st = self.agg.prepare(ids, shares, job_id.encode())
            w = self.agg.check(st, d_leader.reshape(st.d_share.shape))
            d_b, w_b = st.d_share.astype("<u8").tobytes(), w.astype("<u8").tobytes()
            replay = bad.astype(np.uint8).tobytes()
            self.store.insert_ignore(
                conn,
                reports_table,
                [
                    {"task_id": self.task_id, "report_id": rid, "state": 1, "job_id": job_id, "seq": 0}
                    for rid in first
                    if rid not in seen
                ],
            )
            conn.execute(
                jobs_table.insert().values(
                    task_id=self.task_id,
                    job_id=job_id,
                    batch_id=batch_id,
                    state=1,
                    report_ids=rids,
                    seeds=b"".join(seeds),
                    replay=replay,
                    d_share=d_b,
                    w_share=w_b,
                )
            )
        return {"d": _b64(d_b), "w": _b64(w_b), "replay": _b64(replay)}

    def _open_seeds(
        self, ids: list[bytes], cts: list[bytes], seen: set[bytes]
    ) -> tuple[np.ndarray, list[bytes], dict[bytes, int]]:
        """``(bad, seeds, first index per id)``: a report is bad if seen before, repeated in the job
        (the later copies are replays) or its seed does not open."""
        bad = np.zeros(len(ids), dtype=bool)
        seeds = []
        for i, (rid, ct) in enumerate(zip(ids, cts, strict=True)):
            if rid in seen:
                bad[i] = True
            try:
                seed = hpke_open(self.sk, ct, hpke_info("secure-helper", self.tid, rid))
                if len(seed) != 16:
                    raise ValueError("seed length")
            except ValueError:
                bad[i], seed = True, bytes(16)
            seeds.append(seed)
        first: dict[bytes, int] = {}
        for i, rid in enumerate(ids):
            if rid in first:
                bad[i] = True
            first.setdefault(rid, i)
        return bad, seeds, first

    def finish_job(self, job_id: str, body: dict) -> dict:
        w_leader = np.frombuffer(_unb64(body["w"], "w"), dtype="<u8").astype(np.uint64)
        with self.store.lock, self.store.transaction() as conn:
            job = conn.execute(
                sa.select(jobs_table).where(
                    jobs_table.c.task_id == self.task_id, jobs_table.c.job_id == job_id
                )
            ).first()
            if job is None:
                raise _NotFound("unknown job")
            if job.state == 2:
                return {"accept": _b64(job.accept)}
            w_h = np.frombuffer(job.w_share, dtype="<u8").astype(np.uint64)
            if w_leader.shape != w_h.shape:
                raise ValueError("w shares do not match the job")
            replay = np.frombuffer(job.replay, dtype=np.uint8).astype(bool)
            accept = SecureAggregator.decide(w_leader, w_h) & ~replay
            seeds = [job.seeds[16 * i : 16 * i + 16] for i in range(len(replay))]
            shares = decode_shares(self.spec, seeds, 1)
            brow = self.batch_row(conn, job.batch_id)
            if brow is None or brow.state != 0:
                raise _Conflict(f"batch {job.batch_id} is closed")
            self.add_to_batch(conn, job.batch_id, shares, accept)
            acc_b = accept.astype(np.uint8).tobytes()
            conn.execute(
                jobs_table.update()
                .where(jobs_table.c.task_id == self.task_id, jobs_table.c.job_id == job_id)
                .values(state=2, accept=acc_b, seeds=None)
            )
        return {"accept": _b64(acc_b)}

    def collect(self, batch_id: int, body: dict) -> dict:
        collection_id = str(body["collection_id"])
        n_leader = int(body["n_valid"])
        with self.store.lock, self.store.transaction() as conn:
            row = self.batch_row(conn, batch_id)
            if row is None:
                raise _Conflict(f"batch {batch_id} was not announced by the leader")
            if row.state == 1:
                if row.collection_id != collection_id:
                    raise _Conflict(f"batch {batch_id} was already collected")
                return {"partial": _b64(row.partial), "n_valid": int(row.n_valid)}
            if row.n_valid < self.min_batch:
                raise _TooSmall(BELOW_MIN_BATCH)
            if row.n_valid != n_leader:
                raise _Conflict(
                    f"the leader's and the helper's valid-report counts of batch {batch_id} differ"
                )
            ct = self.partial_bytes(row)
            conn.execute(
                batches_table.update()
                .where(batches_table.c.task_id == self.task_id, batches_table.c.batch_id == batch_id)
                .values(state=1, collection_id=collection_id, partial=ct)
            )
        return {"partial": _b64(ct), "n_valid": int(row.n_valid)}


class _Conflict(Exception):
    status = 409


class _NotFound(Exception):
    status = 404


class _TooSmall(Exception):
    status = 400


class _Unavailable(Exception):
    status = 503


class _BudgetExceeded(Exception):
    status = 403


# ------------------------------------------------------------------------------ leader


class Leader(_Server):
    def __init__(self, task, secrets, storage, *, helper_url: str | None = None, job_size: int = JOB_SIZE):
        super().__init__("leader", task, secrets, storage)
        import httpx

        self.helper_url = (helper_url or task.url("helper")).rstrip("/")
        self.http = httpx.Client(
            timeout=120.0, headers={"authorization": f"Bearer {secrets.token('forward')}"}
        )
        self.job_size = job_size
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.paused = threading.Event()  # set while a collection drains and closes a batch
        self.idle = threading.Event()
        self.collect_lock = threading.Lock()
        self.run_lock = threading.Lock()  # one job runs at a time in this process
        self.announced: set[int] = set()
        self.seq = time.time_ns()
        self.timing = {"hpke": 0.0, "verify": 0.0, "storage": 0.0, "helper": 0.0}
        with self.store.lock, self.store.transaction() as conn:
            if self.current_batch(conn) is None:
                self.ensure_batch(conn, 0)
        self.thread = threading.Thread(target=self._drive, name="privstats-leader-driver", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout=60)
        self.http.close()

    def current_batch(self, conn) -> int | None:
        return conn.execute(
            sa.select(sa.func.max(batches_table.c.batch_id)).where(
                batches_table.c.task_id == self.task_id, batches_table.c.state == 0
            )
        ).scalar()

    # ---- upload
    def upload(self, body: bytes) -> dict:
        """Decrypt and store a batch of reports; refuses the whole request if any record is bad."""
        from privstats.services.wire import unpack_upload

        ll, hl = payload_sizes(self.spec)
        tid, ids, payloads = unpack_upload(body, record_size=16 + ll + hl)
        if tid != self.tid:
            raise ValueError("the upload is for another task")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate report ids in one upload")
        t0 = time.perf_counter()
        shares = [
            hpke_open(self.sk, p[:ll], hpke_info("secure-leader", self.tid, rid))
            for rid, p in zip(ids, payloads, strict=True)
        ]
        decode_shares(self.spec, shares, 0)  # validates lengths and field range
        t1 = time.perf_counter()
        with self.store.lock:
            self.seq += 1
            rows = [
                {
                    "task_id": self.task_id,
                    "report_id": rid,
                    "state": 0,
                    "job_id": None,
                    "seq": self.seq,
                    "share": sh,
                    "helper_ct": p[ll:],
                }
                for rid, p, sh in zip(ids, payloads, shares, strict=True)
            ]
            with self.store.transaction() as conn:
                new = self.store.insert_ignore(conn, reports_table, rows)
        self.timing["hpke"] += t1 - t0
        self.timing["storage"] += time.perf_counter() - t1
        self.idle.clear()
        self.wake.set()
        return {"acknowledged": len(ids), "new": new}

    # ---- driver
    def _helper(self, method: str, path: str, body: dict | None = None) -> dict:
        import httpx

        url = f"{self.helper_url}/tasks/{self.task_id}{path}"
        try:
            r = self.http.request(method, url, json=body)
        except httpx.HTTPError as exc:
            raise _Unavailable(f"helper unreachable: {exc}") from exc
        if r.status_code >= 500:
            raise _Unavailable(f"helper error {r.status_code}: {r.text[:200]}")
        if r.status_code >= 400:
            detail = r.json().get("detail", {}) if "json" in r.headers.get("content-type", "") else {}
            if isinstance(detail, dict) and detail.get("error") == "batch_too_small":
                raise _TooSmall(BELOW_MIN_BATCH)
            raise _Conflict(f"helper refused {path}: {r.status_code} {r.text[:300]}")
        return r.json()

    def _announce(self, batch_id: int) -> None:
        if batch_id not in self.announced:
            self._helper("PUT", f"/batches/{batch_id}")
            self.announced.add(batch_id)

    def _new_job(self) -> str | None:
        with self.store.lock, self.store.transaction() as conn:
            rids = [
                bytes(r[0])
                for r in conn.execute(
                    sa.select(reports_table.c.report_id)
                    .where(reports_table.c.task_id == self.task_id, reports_table.c.state == 0)
                    .order_by(reports_table.c.seq)
                    .limit(self.job_size)
                )
            ]
            if not rids:
                return None
            batch_id = self.current_batch(conn)
            job_id = os.urandom(16).hex()
            conn.execute(
                jobs_table.insert().values(
                    task_id=self.task_id, job_id=job_id, batch_id=batch_id, state=0, report_ids=b"".join(rids)
                )
            )
            conn.execute(
                reports_table.update()
                .where(reports_table.c.task_id == self.task_id, reports_table.c.report_id.in_(rids))
                .values(state=1, job_id=job_id)
            )
        return job_id

    def _open_jobs(self) -> list[str]:
        with self.store.read() as conn:
            return [
                r[0]
                for r in conn.execute(
                    sa.select(jobs_table.c.job_id).where(
                        jobs_table.c.task_id == self.task_id, jobs_table.c.state < 2
                    )
                )
            ]

    def _run_job(self, job_id: str) -> None:
        with self.run_lock:
            self._run_job_locked(job_id)

    def _run_job_locked(self, job_id: str) -> None:
        t0 = time.perf_counter()
        with self.store.read() as conn:
            job = conn.execute(
                sa.select(jobs_table).where(
                    jobs_table.c.task_id == self.task_id, jobs_table.c.job_id == job_id
                )
            ).first()
            if job is None or job.state == 2:
                return
            ids = [job.report_ids[16 * i : 16 * i + 16] for i in range(len(job.report_ids) // 16)]
            rows = {
                bytes(r.report_id): r
                for r in conn.execute(
                    sa.select(
                        reports_table.c.report_id, reports_table.c.share, reports_table.c.helper_ct
                    ).where(reports_table.c.task_id == self.task_id, reports_table.c.job_id == job_id)
                )
            }
        shares = decode_shares(self.spec, [rows[r].share for r in ids], 0)
        t1 = time.perf_counter()
        st = self.agg.prepare(ids, shares, job_id.encode())
        t2 = time.perf_counter()
        self._announce(job.batch_id)
        resp = self._helper(
            "POST",
            f"/jobs/{job_id}/init",
            {
                "batch_id": job.batch_id,
                "report_ids": _b64(job.report_ids),
                "helper_cts": [_b64(rows[r].helper_ct) for r in ids],
                "d": _b64(st.d_share.astype("<u8").tobytes()),
            },
        )
        t3 = time.perf_counter()
        d_h = np.frombuffer(_unb64(resp["d"], "d"), dtype="<u8").astype(np.uint64).reshape(st.d_share.shape)
        w_h = np.frombuffer(_unb64(resp["w"], "w"), dtype="<u8").astype(np.uint64)
        replay = np.frombuffer(_unb64(resp["replay"], "replay"), dtype=np.uint8).astype(bool)
        w_l = self.agg.check(st, d_h)
        accept = SecureAggregator.decide(w_l, w_h) & ~replay
        t4 = time.perf_counter()
        fin = self._helper("POST", f"/jobs/{job_id}/finish", {"w": _b64(w_l.astype("<u8").tobytes())})
        t5 = time.perf_counter()
        acc_h = np.frombuffer(_unb64(fin["accept"], "accept"), dtype=np.uint8).astype(bool)
        if not np.array_equal(acc_h, accept):
            raise RuntimeError(f"job {job_id}: the helper's accept mask differs from the leader's")
        with self.store.lock, self.store.transaction() as conn:
            self.add_to_batch(conn, job.batch_id, shares, accept)
            ok_ids = [r for r, a in zip(ids, accept, strict=True) if a]
            bad_ids = [r for r, a in zip(ids, accept, strict=True) if not a]
            for sel, state in ((ok_ids, 2), (bad_ids, 3)):
                for start in range(0, len(sel), 500):
                    conn.execute(
                        reports_table.update()
                        .where(
                            reports_table.c.task_id == self.task_id,
                            reports_table.c.report_id.in_(sel[start : start + 500]),
                        )
                        .values(state=state, share=None, helper_ct=None)
                    )
            conn.execute(
                jobs_table.update()
                .where(jobs_table.c.task_id == self.task_id, jobs_table.c.job_id == job_id)
                .values(state=2, accept=accept.astype(np.uint8).tobytes())
            )
        t6 = time.perf_counter()
        self.timing["storage"] += (t1 - t0) + (t6 - t5)
        self.timing["verify"] += (t2 - t1) + (t4 - t3)
        self.timing["helper"] += (t3 - t2) + (t5 - t4)

    def _drive(self) -> None:
        backoff = 0.05
        while not self.stopping.is_set():
            try:
                worked = False
                for job_id in self._open_jobs():
                    self._run_job(job_id)
                    worked = True
                if not self.paused.is_set() and not self.stopping.is_set():
                    with self.run_lock:
                        new_job = None if self.paused.is_set() else self._new_job()
                        if new_job is not None:
                            self._run_job_locked(new_job)
                            worked = True
                backoff = 0.05
                if not worked:
                    self.idle.set()
                    self.wake.wait(0.5)
                    self.wake.clear()
            except Exception as exc:  # helper down, database busy: retry the same job
                log.warning("leader driver: %s", exc)
                self.idle.clear()
                self.stopping.wait(backoff)
                backoff = min(2 * backoff, 2.0)

    def _pending(self) -> int:
        with self.store.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(reports_table)
                    .where(reports_table.c.task_id == self.task_id, reports_table.c.state < 2)
                ).scalar()
                or 0
            )

    # ---- collection
    def collect(self, collection_id: str, timeout: float = 600.0) -> dict:
        """Close the current batch and release it (or return the collection ``collection_id`` again)."""
        if not isinstance(collection_id, str) or not 0 < len(collection_id) <= 64:
            raise ValueError("collection_id must be a string of 1 to 64 characters")
        with self.store.read() as conn:
            done = conn.execute(
                sa.select(batches_table.c.batch_id).where(
                    batches_table.c.task_id == self.task_id, batches_table.c.collection_id == collection_id
                )
            ).scalar()
        if done is not None:  # a retried collection: the same release, nothing charged
            return self._finish_collection(int(done))
        with self.collect_lock:
            self.paused.set()
            try:
                return self._collect(collection_id, timeout)
            finally:
                self.paused.clear()
                self.wake.set()

    def _collect(self, collection_id: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        with self.store.read() as conn:
            current = self.current_batch(conn)
        if current is None:
            raise RuntimeError("the leader has no open batch")
        batch_id = int(current)
        # drain: every acknowledged report is verified and aggregated before the batch closes
        while True:
            with self.store.read() as conn:
                pending = int(
                    conn.execute(
                        sa.select(sa.func.count())
                        .select_from(reports_table)
                        .where(reports_table.c.task_id == self.task_id, reports_table.c.state == 0)
                    ).scalar()
                    or 0
                )
            open_jobs = self._open_jobs()
            if not open_jobs and not pending:
                break
            if time.monotonic() > deadline:
                raise _Unavailable("could not aggregate the pending reports in time (is the helper up?)")
            try:
                for job_id in open_jobs:
                    self._run_job(job_id)
                while self._new_job_for_collect():
                    pass
            except _Unavailable:
                time.sleep(0.2)
        eps = float(self.spec.epsilon)
        with self.store.lock, self.store.transaction() as conn:
            row = self.batch_row(conn, batch_id)
            if row.n_valid < self.min_batch:
                raise _TooSmall(BELOW_MIN_BATCH)  # the same text whatever the count
            spent = float(
                conn.execute(
                    sa.select(sa.func.coalesce(sa.func.sum(ledger_table.c.epsilon), 0.0)).where(
                        ledger_table.c.task_id == self.task_id
                    )
                ).scalar()
                or 0.0
            )
            budget = float(self.task.budget_value.epsilon)
            if spent + eps > budget * (1 + 1e-12):
                raise _BudgetExceeded(
                    f"the task's budget epsilon = {budget:g} is spent ({spent:g} used; a "
                    f"collection costs {eps:g})"
                )
            self.store.insert_ignore(
                conn, ledger_table, [{"task_id": self.task_id, "batch_id": batch_id, "epsilon": eps}]
            )
            conn.execute(
                batches_table.update()
                .where(batches_table.c.task_id == self.task_id, batches_table.c.batch_id == batch_id)
                .values(state=1, collection_id=collection_id)
            )
            self.ensure_batch(conn, batch_id + 1)
        return self._finish_collection(batch_id)

    def _new_job_for_collect(self) -> bool:
        with self.run_lock:
            job_id = self._new_job()
            if job_id is None:
                return False
            self._run_job_locked(job_id)
        return True

    def _finish_collection(self, batch_id: int) -> dict:
        with self.store.read() as conn:
            row = self.batch_row(conn, batch_id)
        if row is None or row.state != 1:
            raise _NotFound(f"batch {batch_id} has not been collected")
        self._announce(batch_id)
        helper_part = row.other_partial
        if helper_part is None:
            resp = self._helper(
                "POST",
                f"/batches/{batch_id}/collect",
                {"collection_id": row.collection_id, "n_valid": int(row.n_valid)},
            )
            helper_part = _unb64(resp["partial"], "partial")
        with self.store.lock, self.store.transaction() as conn:
            row = self.batch_row(conn, batch_id)
            leader_part = row.partial or self.partial_bytes(row)
            conn.execute(
                batches_table.update()
                .where(batches_table.c.task_id == self.task_id, batches_table.c.batch_id == batch_id)
                .values(partial=leader_part, other_partial=helper_part)
            )
        out = {
            "task_id": self.task_id,
            "batch_id": batch_id,
            "collection_id": row.collection_id,
            "epsilon": float(self.spec.epsilon),
            "leader": _b64(leader_part),
            "helper": _b64(helper_part),
        }
        if self.spec.neighbours == "replace":
            # n is public under replace neighbours (equal for neighbouring datasets; the release is
            # normalised by it); an add-remove task publishes no count (its noisy total is the only size)
            out.update(n_valid=int(row.n_valid), n_invalid=int(row.n_invalid))
        return out

    def get_collection(self, batch_id: int) -> dict:
        with self.store.read() as conn:
            row = self.batch_row(conn, batch_id)
        if row is None or row.state != 1:
            raise _NotFound(f"batch {batch_id} has not been collected")
        return self._finish_collection(batch_id)

    def stats(self) -> dict:
        """The status served over HTTP: no report counts and no timings (which grow with the count)."""
        return {
            "task_id": self.task_id,
            "role": "leader",
            "budget_epsilon": float(self.task.budget_value.epsilon),
        }


def operator_progress(db: str, task) -> dict[str, int]:
    """Reports per state in a leader's database (0 stored, 1 in a job, 2 valid, 3 invalid), for the
    operator who holds it; never served over HTTP (exact counts)."""
    from privstats.services.storage import Storage

    store = SecureStore(Storage(db))
    with store.read() as conn:
        rows = conn.execute(
            sa.select(reports_table.c.state, sa.func.count())
            .where(reports_table.c.task_id == task.task_id)
            .group_by(reports_table.c.state)
        ).all()
    return {str(k): int(v) for k, v in rows}
