"""The DAP-09 leader: uploads, aggregation jobs it drives against the helper, collection jobs.

Routes: ``GET /hpke_config``, ``PUT /tasks/{task-id}/reports`` (201 after commit; served by
:mod:`privstats.services.dap.upload` ahead of FastAPI's stack),
``PUT|POST|DELETE /tasks/{task-id}/collection_jobs/{job-id}`` (collector token), ``/healthz``.

A driver thread (started with the app, stopped on shutdown) loops: group unassigned reports into
aggregation jobs of ``job_size`` (a smaller job only every ``max_delay`` seconds or while a
collection is open), run each leased job against the helper (one round: Prio3 is a one-round VDAF,
so the helper answers ``finish`` and the leader completes preparation on its side; one keep-alive
connection to the helper), commit the outcome (report states + bucket sums + job state in one
transaction), then advance collection jobs.  A job whose leader died mid-flight is retried after its
lease expires; the helper answers a retried job from its database, so nothing is counted twice.  See
:mod:`privstats.services.dap.collect_jobs` for the collection side.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from privstats.services.dap.codec import (
    AGG_JOB_INIT_REQ,
    AggregationJobResp,
    PingPong,
    PrepareResp,
    encode_job_init_req,
    opaque32,
    u64,
)
from privstats.services.dap.common import RoleContext, build_context, dap_app
from privstats.services.dap.store import report_checksum
from privstats.services.dap.task import b64
from privstats.services.dap.upload import GroupCommitter, UploadRoute, handle_upload

__all__ = ["Driver", "create_leader_app", "handle_upload"]

log = logging.getLogger("privstats.dap.leader")


class Driver:
    """The leader's background work: aggregation jobs, then collection jobs.  ``step()`` runs one pass."""

    def __init__(
        self,
        ctx: RoleContext,
        *,
        job_size: int = 1024,
        lease_seconds: int = 30,
        interval: float = 0.2,
        max_delay: float = 1.0,
        workers: int = 1,
    ):
        import httpx

        self.ctx, self.job_size, self.lease, self.interval = ctx, job_size, lease_seconds, interval
        self.max_delay, self.workers = float(max_delay), max(1, int(workers))
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="dap-leader-job")
        self.client = httpx.Client(timeout=60.0)  # keep-alive: one connection reused for every job
        self.stop_event, self.wake = threading.Event(), threading.Event()
        self.thread: threading.Thread | None = None
        self.pending, self.last_flush = 0, float("-inf")  # uploads since the last partial-job pass

    def uploaded(self, n: int) -> None:
        """The upload path stored ``n`` new reports; wake the driver once a full job is waiting."""
        self.pending += n
        if self.pending >= self.job_size:
            self.wake.set()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="dap-leader-driver", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=120)
        self.pool.shutdown(wait=True)
        self.client.close()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            try:
                busy = self.step(flush=time.monotonic() - self.last_flush >= self.max_delay)
            except Exception as exc:  # keep driving: the failed work is retried after its lease
                if isinstance(exc, RuntimeError) or type(exc).__module__.startswith("httpx"):
                    log.warning("driver step: %s (retried after the job's lease)", exc)
                else:
                    log.exception("driver step failed")
                busy = False
            if not busy:
                # a wake means a full job's worth was stored (or a collection, or stop, came): the
                # driver process's count of uploads is in the server process, so it is not checked
                if self.wake.wait(self.interval):
                    self.pending = max(self.pending, self.job_size)
                self.wake.clear()

    def step(self, flush: bool = True) -> bool:
        """One pass; True if it did any work.

        Reports are grouped into jobs of ``job_size``; a smaller job only with ``flush`` (the
        background loop flushes every ``max_delay`` seconds) or while a collection job is open.
        """
        from privstats.services.dap.collect_jobs import advance_collection

        collections = self.ctx.store.open_collections()
        flush = flush or bool(collections)
        busy = False
        if flush or self.pending >= self.job_size:
            if flush:
                self.last_flush = time.monotonic()
            self.pending = 0
            busy = self.ctx.store.create_jobs(self.job_size, min_size=1 if flush else self.job_size) > 0
        busy = self._run_jobs() or busy
        for cj in collections:
            busy = advance_collection(self.ctx, self.client, cj) or busy
        return busy

    def _run_jobs(self) -> bool:
        """Run every job whose lease is free, ``workers`` at a time: the leader prepares one job
        while the helper answers another.  While jobs run, a full job's worth of new uploads (a
        wake) becomes the next job at once, so the pipeline stays full while uploads arrive.
        Re-raises the first failure once all have ended."""
        running: list[Future] = []
        ran = False
        try:
            while not self.stop_event.is_set():
                for f in [f for f in running if f.done()]:
                    running.remove(f)
                    f.result()
                if len(running) < self.workers:
                    job = self.ctx.store.acquire_job(self.lease)
                    if job is not None:
                        running.append(self.pool.submit(self.run_job, job))
                        ran = True
                        continue
                    if running and self._more_jobs():
                        continue
                    if not running:
                        break
                wait(running, timeout=0.05, return_when=FIRST_COMPLETED)
        finally:
            wait(running)
        for f in running:
            f.result()
        return ran

    def _more_jobs(self) -> bool:
        """Jobs from the reports stored while jobs ran, if a full job's worth was signalled."""
        if not (self.wake.is_set() or self.pending >= self.job_size):
            return False
        self.wake.clear()
        self.pending = 0
        return self.ctx.store.create_jobs(self.job_size, min_size=self.job_size) > 0

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
            body = encode_job_init_req(inits)
            url = f"{ctx.dap.url('helper')}/tasks/{ctx.dap.task_id_b64}/aggregation_jobs/{b64(job_id)}"
            r = self.client.put(url, content=body, headers=self.helper_headers(AGG_JOB_INIT_REQ))
            if r.status_code >= 500:
                raise RuntimeError(
                    f"helper answered {r.status_code} to job {b64(job_id)}; retried after the lease"
                )
            if r.status_code not in (200, 201):
                log.warning("helper refused job %s: %s %s", b64(job_id), r.status_code, r.text[:300])
                ctx.store.finish_job(job_id, [], [row[0] for row in rows], {})
                return
            resp = AggregationJobResp.decode(r.content)
            expected = [init[:16] for init in inits]
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


def _leader_inits(ctx: RoleContext, rows: list) -> tuple[list[bytes], dict, list[bytes]]:
    """The leader's prep_init of each report (batched): the encoded ``PrepareInit`` of each report
    for the helper (built from the stored bytes: the helper's ciphertext is already encoded), the
    prep states by report id, and the ids that failed."""
    from privstats.secure.vdaf.batch import prep_init_batch

    rids = [bytes(r[0]) for r in rows]
    publics = [bytes(r[2]) for r in rows]
    results = prep_init_batch(ctx.vdaf, ctx.verify_key, 0, None, rids, publics, [bytes(r[3]) for r in rows])
    inits, states, failed = [], {}, []
    for rid, public, (_, t, _, _, helper_ct), res in zip(rids, publics, rows, results, strict=True):
        if isinstance(res, Exception):  # a malformed leader share fails this report only
            failed.append(rid)
            continue
        state, prep_share = res
        # PrepareInit = ReportShare(metadata, public share, helper's HpkeCiphertext) || PingPong init
        inits.append(
            b"".join(
                (
                    rid,
                    u64(int(t)),
                    opaque32(public),
                    bytes(helper_ct),
                    opaque32(b"\x00" + opaque32(prep_share)),
                )
            )
        )
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


def create_leader_app(
    task, secrets, storage, *, drive: bool = True, driver_process: bool = False, **options: Any
):
    """The leader's FastAPI app (``drive=False``: no background driver, for tests that step it;
    ``driver_process``: the driver runs in a child process, see
    :mod:`privstats.services.dap.driver_process`, and ``app.state.driver`` is its handle)."""
    ctx = build_context("leader", task, secrets, storage)
    keys = ("job_size", "lease_seconds", "max_delay", "workers")
    kwargs = {k: v for k, v in options.items() if k in keys}
    driver: Any
    if drive and driver_process:
        from privstats.services.dap.driver_process import DriverProcess

        driver = DriverProcess(Driver, task, secrets, storage, kwargs)
    else:
        driver = Driver(ctx, **kwargs)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if drive:
            driver.start()
        try:
            yield
        finally:
            driver.stop()
            committer.close()

    committer = GroupCommitter(ctx.store, on_commit=driver.uploaded)
    app = dap_app(ctx, lifespan)
    app.state.driver = driver
    limit = int(task.max_request_bytes)

    from privstats.services.dap.collect_jobs import register_collection_routes

    register_collection_routes(app, ctx, driver, limit)
    # uploads (the hot path) are answered before FastAPI's routing and middleware layers
    app.middleware_stack = UploadRoute(app.build_middleware_stack(), ctx, committer, limit)
    return app
