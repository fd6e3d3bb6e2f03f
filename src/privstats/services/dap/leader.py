"""The DAP-09 leader: uploads, aggregation jobs it drives against the helper, collection jobs.

Routes: ``GET /hpke_config``, ``PUT /tasks/{task-id}/reports`` (201 after commit),
``PUT|POST|DELETE /tasks/{task-id}/collection_jobs/{job-id}`` (collector token), ``/healthz``.

A driver thread (started with the app, stopped on shutdown) loops: group unassigned reports into
aggregation jobs, run each leased job against the helper (one round: Prio3 is a one-round VDAF, so
the helper answers ``finish`` and the leader completes preparation on its side), commit the outcome
(report states + bucket sums + job state in one transaction), then advance collection jobs.  A job
whose leader died mid-flight is retried after its lease expires; the helper answers a retried job
from its database, so nothing is counted twice.  See :mod:`privstats.services.dap.collect_jobs` for
the collection side.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import Any

from fastapi import Request

from privstats.services.dap.codec import (
    AGG_JOB_INIT_REQ,
    REPORT,
    AggregationJobInitReq,
    AggregationJobResp,
    DecodeError,
    HpkeCiphertext,
    InputShareAad,
    PingPong,
    PlaintextInputShare,
    PrepareInit,
    PrepareResp,
    Report,
    ReportMetadata,
    ReportShare,
    Role,
    input_share_info,
)
from privstats.services.dap.common import DapProblem, RoleContext, build_context, dap_app
from privstats.services.dap.hpke import HPKEOpenError, open_
from privstats.services.dap.store import report_checksum
from privstats.services.dap.task import b64

__all__ = ["Driver", "create_leader_app", "handle_upload"]

log = logging.getLogger("privstats.dap.leader")


def handle_upload(ctx: RoleContext, body: bytes, now: int | None = None, committer: Any = None) -> Any:
    """Validate, open the leader's share and store one report; ``"new"`` or ``"replay"`` (with a
    ``committer``: a future of that, resolved once the group commit holding the report is done).

    Raises :class:`DapProblem`: ``invalidMessage`` (does not parse, extensions),
    ``outdatedConfig`` (unknown HPKE config id), ``reportTooEarly`` (time beyond now + skew),
    ``reportRejected`` (too old, batch already collected, share does not open).
    """
    try:
        rep = Report.decode(body)
    except DecodeError as exc:
        raise DapProblem(400, "invalidMessage", f"report: {exc}") from None
    now = int(time.time()) if now is None else now
    dap, t = ctx.dap, rep.metadata.time
    if t > now + dap.tolerable_clock_skew:
        raise DapProblem(400, "reportTooEarly", "report time is in the future")
    if t < now - dap.report_expiry_age:
        raise DapProblem(400, "reportRejected", "report time is older than the report expiry age")
    if (
        rep.leader_share.config_id != ctx.config.id
        or rep.helper_share.config_id != dap.hpke_configs["helper"].id
    ):
        raise DapProblem(400, "outdatedConfig", "unknown HPKE config id; fetch /hpke_config again")
    aad = InputShareAad(dap.task_id, rep.metadata, rep.public_share).encode()
    try:
        plain = open_(ctx.private_key_obj, ctx.config, rep.leader_share, input_share_info(Role.LEADER), aad)
        share = PlaintextInputShare.decode(plain)
    except (HPKEOpenError, DecodeError):
        raise DapProblem(400, "reportRejected", "the leader's input share does not open") from None
    if share.extensions:
        raise DapProblem(400, "invalidMessage", "report extensions are not supported")
    item = (rep.metadata.report_id, t, rep.public_share, share.payload, rep.helper_share.encode())
    if committer is not None:
        return committer.enqueue(item)
    return _checked(ctx.store.put_report(*item))


def _checked(outcome: str) -> str:
    if outcome == "collected":
        raise DapProblem(400, "reportRejected", "the report's batch has already been collected")
    return outcome


class GroupCommitter:
    """Stores concurrent uploads in one transaction each round (one fsync for many reports).

    Request threads call :meth:`submit` and block until the transaction holding their report has
    committed, so an upload is still acknowledged only after its commit.
    """

    def __init__(self, store: Any, max_batch: int = 256):
        import queue

        self.store, self.max_batch = store, max_batch
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="dap-group-commit", daemon=True)
        self.thread.start()

    def enqueue(self, item: tuple) -> Any:
        """A ``concurrent.futures.Future`` of the report's outcome, set after its transaction commits."""
        from concurrent.futures import Future

        fut: Future = Future()
        self.queue.put((item, fut))
        return fut

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=120)

    def _run(self) -> None:
        import queue

        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self.queue.put(None)
                    break
                batch.append(nxt)
            try:
                outcomes = self.store.put_reports([item for item, _ in batch])
            except Exception as exc:
                for _, fut in batch:
                    fut.set_exception(exc)
                continue
            for (_, fut), outcome in zip(batch, outcomes, strict=True):
                fut.set_result(outcome)


class Driver:
    """The leader's background work: aggregation jobs, then collection jobs.  ``step()`` runs one pass."""

    def __init__(
        self, ctx: RoleContext, *, job_size: int = 256, lease_seconds: int = 30, interval: float = 0.2
    ):
        import httpx

        self.ctx, self.job_size, self.lease, self.interval = ctx, job_size, lease_seconds, interval
        self.client = httpx.Client(timeout=60.0)
        self.stop_event, self.wake = threading.Event(), threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="dap-leader-driver", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=120)
        self.client.close()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            try:
                busy = self.step()
            except Exception as exc:  # keep driving: the failed work is retried after its lease
                if isinstance(exc, RuntimeError) or type(exc).__module__.startswith("httpx"):
                    log.warning("driver step: %s (retried after the job's lease)", exc)
                else:
                    log.exception("driver step failed")
                busy = False
            if not busy:
                self.wake.wait(self.interval)
                self.wake.clear()

    def step(self) -> bool:
        """One pass; True if it did any work."""
        from privstats.services.dap.collect_jobs import advance_collection

        busy = self.ctx.store.create_jobs(self.job_size) > 0
        while not self.stop_event.is_set():
            job = self.ctx.store.acquire_job(self.lease)
            if job is None:
                break
            self.run_job(job)
            busy = True
        for cj in self.ctx.store.open_collections():
            busy = advance_collection(self.ctx, self.client, cj) or busy
        return busy

    def helper_headers(self, content_type: str) -> dict:
        return {"Authorization": f"Bearer {self.ctx.secrets.token('forward')}", "Content-Type": content_type}

    def run_job(self, job_id: bytes) -> None:
        """Prepare a job's reports with the helper and commit the outcome (idempotent on retry)."""
        ctx, vdaf = self.ctx, self.ctx.vdaf
        rows = ctx.store.job_reports(job_id)
        inits, states, failed = _leader_inits(ctx, rows)
        done: list[bytes] = []
        outs: dict[int, list] = {}
        if inits:
            req = AggregationJobInitReq(b"", tuple(inits))
            url = f"{ctx.dap.url('helper')}/tasks/{ctx.dap.task_id_b64}/aggregation_jobs/{b64(job_id)}"
            r = self.client.put(url, content=req.encode(), headers=self.helper_headers(AGG_JOB_INIT_REQ))
            if r.status_code >= 500:
                raise RuntimeError(
                    f"helper answered {r.status_code} to job {b64(job_id)}; retried after the lease"
                )
            if r.status_code not in (200, 201):
                log.warning("helper refused job %s: %s %s", b64(job_id), r.status_code, r.text[:300])
                ctx.store.finish_job(job_id, [], [row[0] for row in rows], {})
                return
            resp = AggregationJobResp.decode(r.content)
            expected = [p.report_share.metadata.report_id for p in inits]
            if [p.report_id for p in resp.prepare_resps] != expected:
                raise RuntimeError(f"helper's answer to job {b64(job_id)} does not match its reports")
            for pr in resp.prepare_resps:
                out = _leader_finish(vdaf, states[pr.report_id][0], pr)
                if out is None:
                    failed.append(pr.report_id)
                else:
                    done.append(pr.report_id)
                    outs.setdefault(states[pr.report_id][1], []).append((pr.report_id, out))
        tp = ctx.dap.time_precision
        additions: dict[int, tuple] = {}
        for t, items in outs.items():
            bucket = t - t % tp
            agg = vdaf.aggregate(None, [o for _, o in items])
            prev = additions.get(bucket)
            ids = [rid for rid, _ in items]
            if prev is not None:  # several report times in one bucket
                from privstats.services.dap.store import _xor, add_vec

                agg = add_vec(prev[0], list(agg), ctx.modulus)
                additions[bucket] = (agg, prev[1] + len(ids), _xor(prev[2], report_checksum(ids)))
            else:
                additions[bucket] = (list(agg), len(ids), report_checksum(ids))
        ctx.store.finish_job(job_id, done, failed, additions)


def _leader_inits(ctx: RoleContext, rows: list) -> tuple[list[PrepareInit], dict, list[bytes]]:
    """The leader's prep_init of each report (batched): PrepareInits for the helper, states, failures."""
    from privstats.secure.vdaf.batch import prep_init_batch

    rids = [bytes(r[0]) for r in rows]
    results = prep_init_batch(
        ctx.vdaf, ctx.verify_key, 0, None, rids, [bytes(r[2]) for r in rows], [bytes(r[3]) for r in rows]
    )
    inits, states, failed = [], {}, []
    for rid, (_, t, public_share, _, helper_ct), res in zip(rids, rows, results, strict=True):
        if isinstance(res, Exception):  # a malformed leader share fails this report only
            failed.append(rid)
            continue
        state, prep_share = res
        payload = PingPong(PingPong.INITIALIZE, prep_share=prep_share).encode()
        md = ReportMetadata(rid, int(t))
        rs = ReportShare(md, bytes(public_share), HpkeCiphertext.decode(bytes(helper_ct)))
        inits.append(PrepareInit(rs, payload))
        states[rid] = (state, int(t))
    return inits, states, failed


def _leader_finish(vdaf: Any, state: Any, pr: PrepareResp) -> Any:
    """The leader's output share from the helper's answer, or None (rejected / malformed)."""
    if pr.state != PrepareResp.CONTINUE:
        return None
    try:
        msg = PingPong.decode(pr.payload)
        if msg.kind != PingPong.FINISH:
            return None
        return vdaf.prep_next(state, vdaf.decode_prep_msg(state, msg.prep_msg))
    except Exception:
        return None


def create_leader_app(task, secrets, storage, *, drive: bool = True, **options: Any):
    """The leader's FastAPI app (``drive=False``: no background driver, for tests that step it)."""
    from fastapi.responses import Response

    from privstats.services.app import read_body

    ctx = build_context("leader", task, secrets, storage)
    driver = Driver(ctx, **{k: v for k, v in options.items() if k in ("job_size", "lease_seconds")})

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if drive:
            driver.start()
        try:
            yield
        finally:
            driver.stop()
            committer.close()

    committer = GroupCommitter(ctx.store)
    app = dap_app(ctx, lifespan)
    app.state.driver = driver
    limit = int(task.max_request_bytes)

    @app.put("/tasks/{task_id}/reports")
    async def upload(task_id: str, request: Request):
        ctx.check_task(task_id)
        ct = request.headers.get("content-type")
        if ct is not None and ct.split(";")[0].strip() != REPORT:
            raise DapProblem(415, "invalidMessage", f"Content-Type must be {REPORT}")
        body = await read_body(request, limit)
        # parsing and the HPKE open (~0.1 ms) run on the loop; the commit is awaited, not blocked on
        fut = handle_upload(ctx, body, None, committer)
        _checked(await asyncio.wait_for(asyncio.wrap_future(fut), 120))
        driver.wake.set()
        return Response(status_code=201)

    from privstats.services.dap.collect_jobs import register_collection_routes

    register_collection_routes(app, ctx, driver, limit)
    return app
