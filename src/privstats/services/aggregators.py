"""The leader and the helper of a secure task, as HTTP services (FastAPI over SQLAlchemy).

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
import json
import logging
import os
import struct
import threading
import time
from typing import Any

import numpy as np
import sqlalchemy as sa

from privstats.secure.leader_helper import BatchTotal, SecureAggregator, SecureSpec, decode_shares
from privstats.secure.validity import FIELD
from privstats.services.secure_storage import SecureStore, batches_table, default_db_url, jobs_table, \
    ledger_table, reports_table
from privstats.services.secure_tasks import hpke_info, load_secret, load_secure_task, open_sealed, seal, spec_of, \
    tokens_equal

__all__ = ["create_leader_app", "create_helper_app", "serve", "pack_reports", "unpack_reports", "JOB_SIZE"]

log = logging.getLogger("privstats.secure")
JOB_SIZE = 1000
MAX_BODY = 64 << 20
_MAGIC = b"PSU1"
HELPER_CT_LEN = 32 + 16 + 16          # X25519 enc + 16-byte seed + GCM tag


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _unb64(s: Any, what: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except Exception:
        raise ValueError(f"{what}: not base64") from None


def pack_reports(reports: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """Binary upload body: magic, count, then (report id, leader ct, helper ct) records."""
    parts = [_MAGIC, struct.pack("<I", len(reports))]
    for rid, lct, hct in reports:
        parts += [rid, struct.pack("<I", len(lct)), lct, struct.pack("<I", len(hct)), hct]
    return b"".join(parts)


def unpack_reports(body: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """Inverse of :func:`pack_reports`; ValueError for anything malformed or truncated."""
    if len(body) < 8 or body[:4] != _MAGIC:
        raise ValueError("not a privstats secure upload")
    (count,) = struct.unpack_from("<I", body, 4)
    pos, out = 8, []
    for _ in range(count):
        if pos + 20 > len(body):
            raise ValueError("truncated upload")
        rid = body[pos:pos + 16]
        (ll,) = struct.unpack_from("<I", body, pos + 16)
        pos += 20
        lct = body[pos:pos + ll]
        pos += ll
        if pos + 4 > len(body) or len(lct) != ll:
            raise ValueError("truncated upload")
        (hl,) = struct.unpack_from("<I", body, pos)
        pos += 4
        hct = body[pos:pos + hl]
        pos += hl
        if len(hct) != hl:
            raise ValueError("truncated upload")
        out.append((rid, lct, hct))
    if pos != len(body):
        raise ValueError("trailing bytes after the reports")
    if len({r[0] for r in out}) != len(out):
        raise ValueError("duplicate report ids in one upload")
    return out


def _bearer(request) -> str | None:
    h = request.headers.get("authorization", "")
    return h[7:] if h.lower().startswith("bearer ") else None


class _Server:
    """State shared by both roles."""

    def __init__(self, role: str, task: dict, secret: dict, db_url: str | None):
        self.role = role
        self.task = load_secure_task(task)
        self.secret = secret
        if secret.get("task_id") != self.task["task_id"]:
            raise ValueError("the secret file belongs to another task")
        self.task_id: str = self.task["task_id"]
        self.spec: SecureSpec = spec_of(self.task)
        self.min_batch = int(self.task["min_batch"])
        self.store = SecureStore(db_url or default_db_url(role))
        party = 0 if role == "leader" else 1
        self.agg = SecureAggregator(self.spec, party, bytes.fromhex(secret["verify_key"]), self.task_id.encode())
        self.zero_total = np.zeros(self.spec.layout.length, dtype=np.uint64).astype("<u8").tobytes()

    def ensure_batch(self, conn, batch_id: int) -> None:
        self.store.insert_ignore(conn, batches_table, [{"task_id": self.task_id, "batch_id": batch_id, "state": 0,
                                                        "total": self.zero_total, "n_valid": 0, "n_invalid": 0}])

    def batch_row(self, conn, batch_id: int):
        return conn.execute(sa.select(batches_table).where(batches_table.c.task_id == self.task_id,
                                                           batches_table.c.batch_id == batch_id)).first()

    def add_to_batch(self, conn, batch_id: int, shares: np.ndarray, accept: np.ndarray) -> None:
        row = self.batch_row(conn, batch_id)
        if row is None or row.state != 0:
            raise RuntimeError(f"batch {batch_id} is not open")
        total = BatchTotal(np.frombuffer(row.total, dtype="<u8").astype(np.uint64), int(row.n_valid),
                           int(row.n_invalid))
        total.add(shares, accept)
        conn.execute(batches_table.update().where(batches_table.c.task_id == self.task_id,
                                                  batches_table.c.batch_id == batch_id)
                     .values(total=total.to_bytes(), n_valid=total.n_valid, n_invalid=total.n_invalid))

    def partial_ct(self, row, batch_id: int) -> bytes:
        """This server's partial for a batch, HPKE-encrypted to the collector (noise drawn here, once)."""
        total = BatchTotal(np.frombuffer(row.total, dtype="<u8").astype(np.uint64), int(row.n_valid),
                           int(row.n_invalid))
        part = self.agg.partial(total).astype("<u8").tobytes()
        return seal(self.task["hpke"]["collector"], part,
                    hpke_info(f"collector-from-{self.role}", self.task_id, struct.pack("<q", batch_id)))


# ------------------------------------------------------------------------------ helper

class Helper(_Server):
    def __init__(self, task: dict, secret: dict, db_url: str | None):
        super().__init__("helper", task, secret, db_url)

    def announce(self, batch_id: int) -> None:
        with self.store.lock, self.store.engine.begin() as conn:
            self.ensure_batch(conn, batch_id)

    def init_job(self, job_id: str, body: dict) -> dict:
        batch_id = int(body["batch_id"])
        rids = _unb64(body["report_ids"], "report_ids")
        cts = [_unb64(c, "helper_cts") for c in body["helper_cts"]]
        d_leader = np.frombuffer(_unb64(body["d"], "d"), dtype="<u8").astype(np.uint64)
        B = len(cts)
        if len(rids) != 16 * B or d_leader.size != B * self.spec.layout.n_blocks or B == 0 or B > 10 * JOB_SIZE:
            raise ValueError("job: report ids, ciphertexts and d shares do not match")
        ids = [rids[16 * i:16 * i + 16] for i in range(B)]
        with self.store.lock, self.store.engine.begin() as conn:
            job = conn.execute(sa.select(jobs_table).where(jobs_table.c.task_id == self.task_id,
                                                           jobs_table.c.job_id == job_id)).first()
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
                chunk = ids[start:start + 500]
                seen |= {bytes(r[0]) for r in conn.execute(
                    sa.select(reports_table.c.report_id).where(reports_table.c.task_id == self.task_id,
                                                               reports_table.c.report_id.in_(chunk)))}
            bad = np.zeros(B, dtype=bool)
            seeds = []
            for i, (rid, ct) in enumerate(zip(ids, cts, strict=True)):
                if rid in seen:
                    bad[i] = True
                try:
                    seed = open_sealed(self.secret["hpke_private"], ct, hpke_info("helper", self.task_id, rid))
                    if len(seed) != 16:
                        raise ValueError("seed length")
                except ValueError:
                    bad[i], seed = True, bytes(16)
                seeds.append(seed)
            # a report id twice in one job: the later copies are replays
            first: dict[bytes, int] = {}
            for i, rid in enumerate(ids):
                if rid in first:
                    bad[i] = True
                first.setdefault(rid, i)
            shares = decode_shares(self.spec, seeds, 1)
            st = self.agg.prepare(ids, shares, job_id.encode())
            w = self.agg.check(st, d_leader.reshape(st.d_share.shape))
            d_b, w_b = st.d_share.astype("<u8").tobytes(), w.astype("<u8").tobytes()
            replay = bad.astype(np.uint8).tobytes()
            self.store.insert_ignore(conn, reports_table, [{"task_id": self.task_id, "report_id": rid, "state": 1,
                                                            "job_id": job_id, "seq": 0}
                                                           for rid in first if rid not in seen])
            conn.execute(jobs_table.insert().values(task_id=self.task_id, job_id=job_id, batch_id=batch_id, state=1,
                                                    report_ids=rids, seeds=b"".join(seeds), replay=replay,
                                                    d_share=d_b, w_share=w_b))
        return {"d": _b64(d_b), "w": _b64(w_b), "replay": _b64(replay)}

    def finish_job(self, job_id: str, body: dict) -> dict:
        w_leader = np.frombuffer(_unb64(body["w"], "w"), dtype="<u8").astype(np.uint64)
        with self.store.lock, self.store.engine.begin() as conn:
            job = conn.execute(sa.select(jobs_table).where(jobs_table.c.task_id == self.task_id,
                                                           jobs_table.c.job_id == job_id)).first()
            if job is None:
                raise _NotFound("unknown job")
            if job.state == 2:
                return {"accept": _b64(job.accept)}
            w_h = np.frombuffer(job.w_share, dtype="<u8").astype(np.uint64)
            if w_leader.shape != w_h.shape:
                raise ValueError("w shares do not match the job")
            replay = np.frombuffer(job.replay, dtype=np.uint8).astype(bool)
            accept = SecureAggregator.decide(w_leader, w_h) & ~replay
            seeds = [job.seeds[16 * i:16 * i + 16] for i in range(len(replay))]
            shares = decode_shares(self.spec, seeds, 1)
            brow = self.batch_row(conn, job.batch_id)
            if brow is None or brow.state != 0:
                raise _Conflict(f"batch {job.batch_id} is closed")
            self.add_to_batch(conn, job.batch_id, shares, accept)
            acc_b = accept.astype(np.uint8).tobytes()
            conn.execute(jobs_table.update().where(jobs_table.c.task_id == self.task_id,
                                                   jobs_table.c.job_id == job_id)
                         .values(state=2, accept=acc_b, seeds=None))
        return {"accept": _b64(acc_b)}

    def collect(self, batch_id: int, body: dict) -> dict:
        collection_id = str(body["collection_id"])
        n_leader = int(body["n_valid"])
        with self.store.lock, self.store.engine.begin() as conn:
            row = self.batch_row(conn, batch_id)
            if row is None:
                raise _Conflict(f"batch {batch_id} was not announced by the leader")
            if row.state == 1:
                if row.collection_id != collection_id:
                    raise _Conflict(f"batch {batch_id} was already collected")
                return {"partial": _b64(row.partial), "n_valid": int(row.n_valid)}
            if row.n_valid < self.min_batch:
                raise _TooSmall(f"batch {batch_id} has {row.n_valid} valid reports, fewer than the minimum "
                                f"{self.min_batch}")
            if row.n_valid != n_leader:
                raise _Conflict(f"the leader counts {n_leader} valid reports in batch {batch_id}, "
                                f"the helper {row.n_valid}")
            ct = self.partial_ct(row, batch_id)
            conn.execute(batches_table.update().where(batches_table.c.task_id == self.task_id,
                                                      batches_table.c.batch_id == batch_id)
                         .values(state=1, collection_id=collection_id, partial=ct))
        return {"partial": _b64(ct), "n_valid": int(row.n_valid)}


class _Conflict(Exception):
    status = 409


class _NotFound(Exception):
    status = 404


class _TooSmall(Exception):
    status = 400


class _Unavailable(Exception):
    status = 503


# ------------------------------------------------------------------------------ leader

class Leader(_Server):
    def __init__(self, task: dict, secret: dict, db_url: str | None, *, helper_url: str | None = None,
                 job_size: int = JOB_SIZE):
        super().__init__("leader", task, secret, db_url)
        import httpx

        self.helper_url = (helper_url or self.task["helper_url"]).rstrip("/")
        self.http = httpx.Client(timeout=120.0, headers={"authorization": f"Bearer {secret['aggregator_token']}"})
        self.job_size = job_size
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.paused = threading.Event()          # set while a collection drains and closes a batch
        self.idle = threading.Event()
        self.collect_lock = threading.Lock()
        self.run_lock = threading.Lock()         # one job runs at a time in this process
        self.announced: set[int] = set()
        self.seq = time.time_ns()
        self.timing = {"hpke": 0.0, "verify": 0.0, "storage": 0.0, "helper": 0.0}
        with self.store.lock, self.store.engine.begin() as conn:
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
        return conn.execute(sa.select(sa.func.max(batches_table.c.batch_id))
                            .where(batches_table.c.task_id == self.task_id, batches_table.c.state == 0)).scalar()

    # ---- upload
    def upload(self, body: bytes) -> dict:
        recs = unpack_reports(body)
        t0 = time.perf_counter()
        payloads = []
        for rid, lct, hct in recs:
            if len(rid) != 16:
                raise ValueError("report ids are 16 bytes")
            if len(hct) != HELPER_CT_LEN:
                raise ValueError("the helper's ciphertext has the wrong length")
            payloads.append(open_sealed(self.secret["hpke_private"], lct, hpke_info("leader", self.task_id, rid)))
        decode_shares(self.spec, payloads, 0)            # validates lengths and field range
        t1 = time.perf_counter()
        with self.store.lock:
            self.seq += 1
            rows = [{"task_id": self.task_id, "report_id": rid, "state": 0, "job_id": None, "seq": self.seq,
                     "share": p, "helper_ct": hct} for (rid, _, hct), p in zip(recs, payloads, strict=True)]
            with self.store.engine.begin() as conn:
                new = self.store.insert_ignore(conn, reports_table, rows)
        self.timing["hpke"] += t1 - t0
        self.timing["storage"] += time.perf_counter() - t1
        self.idle.clear()
        self.wake.set()
        return {"acknowledged": len(recs), "new": new}

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
            raise _Conflict(f"helper refused {path}: {r.status_code} {r.text[:300]}")
        return r.json()

    def _announce(self, batch_id: int) -> None:
        if batch_id not in self.announced:
            self._helper("PUT", f"/batches/{batch_id}")
            self.announced.add(batch_id)

    def _new_job(self) -> str | None:
        with self.store.lock, self.store.engine.begin() as conn:
            rids = [bytes(r[0]) for r in conn.execute(
                sa.select(reports_table.c.report_id).where(reports_table.c.task_id == self.task_id,
                                                           reports_table.c.state == 0)
                .order_by(reports_table.c.seq).limit(self.job_size))]
            if not rids:
                return None
            batch_id = self.current_batch(conn)
            job_id = os.urandom(16).hex()
            conn.execute(jobs_table.insert().values(task_id=self.task_id, job_id=job_id, batch_id=batch_id, state=0,
                                                    report_ids=b"".join(rids)))
            conn.execute(reports_table.update().where(reports_table.c.task_id == self.task_id,
                                                      reports_table.c.report_id.in_(rids))
                         .values(state=1, job_id=job_id))
        return job_id

    def _open_jobs(self) -> list[str]:
        with self.store.engine.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(jobs_table.c.job_id).where(
                jobs_table.c.task_id == self.task_id, jobs_table.c.state < 2))]

    def _run_job(self, job_id: str) -> None:
        with self.run_lock:
            self._run_job_locked(job_id)

    def _run_job_locked(self, job_id: str) -> None:
        t0 = time.perf_counter()
        with self.store.engine.connect() as conn:
            job = conn.execute(sa.select(jobs_table).where(jobs_table.c.task_id == self.task_id,
                                                           jobs_table.c.job_id == job_id)).first()
        if job is None or job.state == 2:
            return
            ids = [job.report_ids[16 * i:16 * i + 16] for i in range(len(job.report_ids) // 16)]
            rows = {bytes(r.report_id): r for r in conn.execute(
                sa.select(reports_table.c.report_id, reports_table.c.share, reports_table.c.helper_ct)
                .where(reports_table.c.task_id == self.task_id, reports_table.c.job_id == job_id))}
        shares = decode_shares(self.spec, [rows[r].share for r in ids], 0)
        t1 = time.perf_counter()
        st = self.agg.prepare(ids, shares, job_id.encode())
        t2 = time.perf_counter()
        self._announce(job.batch_id)
        resp = self._helper("POST", f"/jobs/{job_id}/init",
                            {"batch_id": job.batch_id, "report_ids": _b64(job.report_ids),
                             "helper_cts": [_b64(rows[r].helper_ct) for r in ids],
                             "d": _b64(st.d_share.astype("<u8").tobytes())})
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
        with self.store.lock, self.store.engine.begin() as conn:
            self.add_to_batch(conn, job.batch_id, shares, accept)
            ok_ids = [r for r, a in zip(ids, accept, strict=True) if a]
            bad_ids = [r for r, a in zip(ids, accept, strict=True) if not a]
            for sel, state in ((ok_ids, 2), (bad_ids, 3)):
                for start in range(0, len(sel), 500):
                    conn.execute(reports_table.update().where(reports_table.c.task_id == self.task_id,
                                                              reports_table.c.report_id.in_(sel[start:start + 500]))
                                 .values(state=state, share=None, helper_ct=None))
            conn.execute(jobs_table.update().where(jobs_table.c.task_id == self.task_id,
                                                   jobs_table.c.job_id == job_id)
                         .values(state=2, accept=accept.astype(np.uint8).tobytes()))
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
                        job_id = None if self.paused.is_set() else self._new_job()
                        if job_id is not None:
                            self._run_job_locked(job_id)
                            worked = True
                backoff = 0.05
                if not worked:
                    self.idle.set()
                    self.wake.wait(0.5)
                    self.wake.clear()
            except Exception as exc:                       # helper down, database busy: retry the same job
                log.warning("leader driver: %s", exc)
                self.idle.clear()
                self.stopping.wait(backoff)
                backoff = min(2 * backoff, 2.0)

    def _pending(self) -> int:
        with self.store.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(reports_table).where(
                reports_table.c.task_id == self.task_id, reports_table.c.state < 2)).scalar() or 0)

    # ---- collection
    def collect(self, timeout: float = 600.0) -> dict:
        with self.collect_lock:
            self.paused.set()
            try:
                return self._collect(timeout)
            finally:
                self.paused.clear()
                self.wake.set()

    def _collect(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        with self.store.engine.connect() as conn:
            unfinished = conn.execute(sa.select(batches_table.c.batch_id).where(
                batches_table.c.task_id == self.task_id, batches_table.c.state == 1,
                sa.or_(batches_table.c.partial.is_(None), batches_table.c.other_partial.is_(None)))).scalar()
            batch_id = self.current_batch(conn)
        if unfinished is not None:                 # a collection interrupted by a crash: finish it, charge nothing
            return self._finish_collection(int(unfinished))
        # drain: every acknowledged report is verified and aggregated before the batch closes
        while True:
            with self.store.engine.connect() as conn:
                pending = int(conn.execute(sa.select(sa.func.count()).select_from(reports_table).where(
                    reports_table.c.task_id == self.task_id, reports_table.c.state == 0)).scalar() or 0)
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
        with self.store.lock, self.store.engine.begin() as conn:
            row = self.batch_row(conn, batch_id)
            if row.n_valid < self.min_batch:
                raise _TooSmall(f"batch {batch_id} has {row.n_valid} valid reports, fewer than the minimum "
                                f"{self.min_batch}")
            self.store.insert_ignore(conn, ledger_table, [{"task_id": self.task_id, "batch_id": batch_id,
                                                           "epsilon": float(self.spec.epsilon)}])
            collection_id = row.collection_id or os.urandom(16).hex()
            conn.execute(batches_table.update().where(batches_table.c.task_id == self.task_id,
                                                      batches_table.c.batch_id == batch_id)
                         .values(state=1, collection_id=collection_id))
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
        with self.store.engine.connect() as conn:
            row = self.batch_row(conn, batch_id)
        if row is None or row.state != 1:
            raise _NotFound(f"batch {batch_id} has not been collected")
        self._announce(batch_id)
        helper_ct = row.other_partial
        if helper_ct is None:
            resp = self._helper("POST", f"/batches/{batch_id}/collect",
                                {"collection_id": row.collection_id, "n_valid": int(row.n_valid)})
            helper_ct = _unb64(resp["partial"], "partial")
        with self.store.lock, self.store.engine.begin() as conn:
            row = self.batch_row(conn, batch_id)
            leader_ct = row.partial or self.partial_ct(row, batch_id)
            conn.execute(batches_table.update().where(batches_table.c.task_id == self.task_id,
                                                      batches_table.c.batch_id == batch_id)
                         .values(partial=leader_ct, other_partial=helper_ct))
        return {"task_id": self.task_id, "batch_id": batch_id, "n_valid": int(row.n_valid),
                "n_invalid": int(row.n_invalid), "epsilon": float(self.spec.epsilon),
                "leader": _b64(leader_ct), "helper": _b64(helper_ct), "spec": self.spec.to_dict()}

    def get_collection(self, batch_id: int) -> dict:
        with self.store.engine.connect() as conn:
            row = self.batch_row(conn, batch_id)
        if row is None or row.state != 1:
            raise _NotFound(f"batch {batch_id} has not been collected")
        return self._finish_collection(batch_id)

    def stats(self) -> dict:
        with self.store.engine.connect() as conn:
            counts = dict(conn.execute(sa.select(reports_table.c.state, sa.func.count()).where(
                reports_table.c.task_id == self.task_id).group_by(reports_table.c.state)).all())
        return {"reports_by_state": {str(k): int(v) for k, v in counts.items()}, "timing": dict(self.timing)}


# ------------------------------------------------------------------------------ apps

def _error_response(exc: Exception):
    from fastapi.responses import JSONResponse

    status = getattr(exc, "status", 400 if isinstance(exc, (ValueError, KeyError, TypeError)) else 500)
    return JSONResponse({"error": str(exc)}, status_code=status)


def create_helper_app(task, secret, db_url: str | None = None):
    """FastAPI app of the helper."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    helper = Helper(load_secure_task(task), secret, db_url)
    app = FastAPI(title="privstats helper", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = helper

    def _auth(request: Request, task_id: str):
        if not tokens_equal(_bearer(request), helper.secret["aggregator_token"]):
            return JSONResponse({"error": "missing or wrong server-to-server token"}, status_code=401)
        if task_id != helper.task_id:
            return JSONResponse({"error": "unknown task"}, status_code=404)
        return None

    async def _json(request: Request) -> dict:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise ValueError("request body too large")
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        return data

    @app.get("/healthz")
    def healthz():
        return {"status": "ok", "role": "helper", "task_id": helper.task_id}

    @app.put("/tasks/{task_id}/batches/{batch_id}")
    def announce(task_id: str, batch_id: int, request: Request):
        if (denied := _auth(request, task_id)) is not None:
            return denied
        helper.announce(batch_id)
        return {"batch_id": batch_id}

    @app.post("/tasks/{task_id}/jobs/{job_id}/init")
    async def init(task_id: str, job_id: str, request: Request):
        if (denied := _auth(request, task_id)) is not None:
            return denied
        try:
            body = await _json(request)
            import anyio

            return await anyio.to_thread.run_sync(helper.init_job, job_id, body)
        except Exception as exc:
            return _error_response(exc)

    @app.post("/tasks/{task_id}/jobs/{job_id}/finish")
    async def finish(task_id: str, job_id: str, request: Request):
        if (denied := _auth(request, task_id)) is not None:
            return denied
        try:
            body = await _json(request)
            import anyio

            return await anyio.to_thread.run_sync(helper.finish_job, job_id, body)
        except Exception as exc:
            return _error_response(exc)

    @app.post("/tasks/{task_id}/batches/{batch_id}/collect")
    async def collect(task_id: str, batch_id: int, request: Request):
        if (denied := _auth(request, task_id)) is not None:
            return denied
        try:
            body = await _json(request)
            import anyio

            return await anyio.to_thread.run_sync(helper.collect, batch_id, body)
        except Exception as exc:
            return _error_response(exc)

    return app


def create_leader_app(task, secret, db_url: str | None = None, *, helper_url: str | None = None,
                      start_driver: bool = True):
    """FastAPI app of the leader (its driver thread starts with the app)."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    leader = Leader(load_secure_task(task), secret, db_url, helper_url=helper_url)

    @asynccontextmanager
    async def lifespan(_app):
        if start_driver:
            leader.start()
        yield
        leader.stop()

    app = FastAPI(title="privstats leader", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.server = leader

    @app.get("/healthz")
    def healthz():
        return {"status": "ok", "role": "leader", "task_id": leader.task_id}

    @app.post("/tasks/{task_id}/reports")
    async def upload(task_id: str, request: Request):
        if not tokens_equal(_bearer(request), leader.task["upload_token"]):
            return JSONResponse({"error": "missing or wrong upload token"}, status_code=401)
        if task_id != leader.task_id:
            return JSONResponse({"error": "unknown task"}, status_code=404)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
            return JSONResponse({"error": "request body too large"}, status_code=413)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": "request body too large"}, status_code=413)
        try:
            import anyio

            return await anyio.to_thread.run_sync(leader.upload, body)
        except Exception as exc:
            return _error_response(exc)

    def _collector_auth(request: Request, task_id: str):
        if not tokens_equal(_bearer(request), leader.secret["collect_token"]):
            return JSONResponse({"error": "missing or wrong collect token"}, status_code=401)
        if task_id != leader.task_id:
            return JSONResponse({"error": "unknown task"}, status_code=404)
        return None

    @app.post("/tasks/{task_id}/collect")
    async def collect(task_id: str, request: Request):
        if (denied := _collector_auth(request, task_id)) is not None:
            return denied
        try:
            import anyio

            return await anyio.to_thread.run_sync(leader.collect)
        except Exception as exc:
            return _error_response(exc)

    @app.get("/tasks/{task_id}/collections/{batch_id}")
    async def collection(task_id: str, batch_id: int, request: Request):
        if (denied := _collector_auth(request, task_id)) is not None:
            return denied
        try:
            import anyio

            return await anyio.to_thread.run_sync(leader.get_collection, batch_id)
        except Exception as exc:
            return _error_response(exc)

    @app.get("/tasks/{task_id}/stats")
    def stats(task_id: str, request: Request):
        if (denied := _collector_auth(request, task_id)) is not None:
            return denied
        return leader.stats()

    return app


def serve(role: str, task_path, *, secret=None, db: str | None = None, host: str | None = None,
          port: int | None = None, log_level: str = "warning") -> int:
    """Run the leader or the helper until SIGTERM/SIGINT; returns the exit status (0)."""
    from urllib.parse import urlparse

    import uvicorn

    if role not in ("leader", "helper"):
        raise ValueError(f"role must be 'leader' or 'helper', got {role!r}")
    task = load_secure_task(task_path)
    sec = load_secret(task_path, role, secret)
    url = urlparse(task[f"{role}_url"])
    host = host or url.hostname or "127.0.0.1"
    port = int(port or url.port or (8701 if role == "leader" else 8702))
    app = create_leader_app(task, sec, db) if role == "leader" else create_helper_app(task, sec, db)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            timeout_graceful_shutdown=30)
    uvicorn.Server(config).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m privstats.services.aggregators leader|helper --task T [--secret S] [--db URL] [--port N]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="privstats serve")
    ap.add_argument("role", choices=["leader", "helper"])
    ap.add_argument("--task", required=True)
    ap.add_argument("--secret", default=None)
    ap.add_argument("--db", default=None)
    ap.add_argument("--host", default=None)
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--log-level", default="warning")
    a = ap.parse_args(argv)
    return serve(a.role, a.task, secret=a.secret, db=a.db, host=a.host, port=a.port, log_level=a.log_level)


if __name__ == "__main__":                                  # pragma: no cover
    raise SystemExit(main())
