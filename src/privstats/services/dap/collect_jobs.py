"""Collection jobs on the leader: the collector's routes and the driver's step that completes them.

``PUT /tasks/{task-id}/collection_jobs/{job-id}`` (``CollectionReq``, collector token) creates the
job and, in the same transaction, *cuts* its batch: the interval is marked collected, so from then
on uploads into it are refused and the job never waits on reports that keep arriving — it waits
only for reports already accepted to finish aggregating.  The same request again is idempotent; an
interval collected before (by another job) is ``batchQueriedTooManyTimes``, one overlapping another
collected interval ``batchOverlap``; start and duration must be multiples of ``time_precision``
(``batchInvalid``).  An interval overlapping collections refused below the minimum batch
``max_refused_collections`` times (the task's ``dap`` object, default 3; counted from the
``collections`` table, so across restarts and deletions) is ``batchQueriedTooManyTimes`` too: each
refusal tells the analyst whether the batch has reached the minimum yet, a bit the cap bounds; counting
overlaps keeps a wider or shifted interval from asking about the same reports again.
``POST`` polls (202 while running, 200 with the ``Collection``, or the job's problem document),
``DELETE`` abandons it (204).

Completing a job (:func:`advance_collection`): once no report of the interval is pending, one
transaction checks the minimum batch size, spends the leader's privacy budget, draws the leader's
noise and stores its sealed noisy share with the noisy report count (a batch below the minimum fails
the job with ``invalidBatchSize`` and undoes its cut: nothing was released, so the interval stays
open to uploads and to a later collection); then the leader asks the helper
for its share (``AggregateShareReq`` with the exact count and checksum — the helper refuses on a
mismatch, spends its own budget and draws its own noise) and stores the final ``Collection``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request

from privstats.services.dap.codec import (
    AGGREGATE_SHARE_REQ,
    COLLECTION,
    AggregateShareAad,
    AggregateShareReq,
    Collection,
    CollectionReq,
    HpkeCiphertext,
    Interval,
    Role,
    aggregate_share_info,
)
from privstats.services.dap.common import DapProblem, RoleContext, decode_body, job_id_from_path
from privstats.services.dap.hpke import seal
from privstats.services.dap.store import encode_vec

__all__ = ["advance_collection", "check_interval", "register_collection_routes", "release_share"]

log = logging.getLogger("privstats.dap.collect")


def check_interval(ctx: RoleContext, interval: Interval) -> None:
    tp = ctx.dap.time_precision
    if (
        interval.duration <= 0
        or interval.start % tp
        or interval.duration % tp
        or interval.start + interval.duration >= 1 << 63
    ):
        raise DapProblem(
            400, "batchInvalid", f"batch interval must be a positive multiple of {tp} s, aligned"
        )


def create_collection(ctx: RoleContext, job_id: bytes, req: CollectionReq) -> None:
    """Create (idempotently) the collection job and cut its batch, in one transaction."""
    if req.agg_param:
        raise DapProblem(400, "invalidMessage", "Prio3 takes an empty aggregation parameter")
    iv = req.interval
    check_interval(ctx, iv)
    store = ctx.store
    with store.st.transaction() as conn:
        store.lock(conn, exclusive=True)
        existing = store.get_collection(conn, job_id)
        if existing is not None:
            if (existing["start"], existing["duration"]) != (iv.start, iv.duration):
                raise DapProblem(409, "invalidMessage", "this collection job id names another query")
            return
        same, other = store.overlaps_collected(conn, iv.start, iv.duration)
        if same:
            raise DapProblem(400, "batchQueriedTooManyTimes", "this batch interval has been collected")
        cap = ctx.dap.max_refused_collections
        if store.refused_collections(conn, iv.start, iv.duration) >= cap:
            raise DapProblem(
                400,
                "batchQueriedTooManyTimes",
                f"collections overlapping this batch interval were refused below the minimum batch {cap} times",
            )
        if other:
            raise DapProblem(400, "batchOverlap", "the interval overlaps a collected batch")
        store.mark_collected(conn, iv.start, iv.duration)
        store.insert_collection(conn, job_id, iv.start, iv.duration)


def release_share(
    ctx: RoleContext, conn: Any, iv: Interval, label: str
) -> tuple[HpkeCiphertext, int, bytes, int]:
    """Inside ``conn``: min batch, budget spend, noise, seal.  ``(sealed share, n, checksum, noisy n)``."""
    from privstats.services.dap.dp import noisy_count, noisy_share
    from privstats.services.storage import BudgetExceededError

    spec = ctx.dap.spec
    share, n, checksum = ctx.store.batch(conn, iv.start, iv.duration, spec.n_parts * spec.n_cells)
    if n < ctx.dap.task.min_batch:
        raise DapProblem(
            400, "invalidBatchSize", f"the batch has fewer than {ctx.dap.task.min_batch} reports"
        )
    try:
        ctx.storage.spend(conn, ctx.dap.task.id_bytes, ctx.dap.task.guarantee_value, label)
    except BudgetExceededError as exc:
        raise DapProblem(400, "budgetExceeded", str(exc)) from None
    party = 0 if ctx.role == "leader" else 1
    noisy = noisy_share(spec, share, ctx.modulus, party)
    aad = AggregateShareAad(ctx.dap.task_id, b"", iv).encode()
    info = aggregate_share_info(Role.LEADER if party == 0 else Role.HELPER)
    ct = seal(ctx.dap.hpke_configs["collector"], info, aad, encode_vec(noisy, ctx.modulus))
    # replace-one: n is public by the guarantee's definition (sent noisy all the same); add/remove: the
    # batch size is private and no budget pays for a count, so the collection carries none (0)
    count = noisy_count(n, spec.curve_epsilon) if spec.neighbours == "replace" else 0
    return ct, n, checksum, count


def advance_collection(ctx: RoleContext, client: Any, job_id: bytes) -> bool:
    """Move one collection job forward; True if it changed state."""
    store = ctx.store
    row = store.get_collection(None, job_id)
    if row is None or row["state"] not in ("start", "released"):
        return False
    iv = Interval(int(row["start"]), int(row["duration"]))
    if store.pending_in(iv.start, iv.duration):
        return False
    try:
        if row["state"] == "start":
            with store.st.transaction() as conn:
                ct, _, _, noisy_n = release_share(ctx, conn, iv, f"dap collection {iv.start}+{iv.duration}")
                store.update_collection(
                    conn, job_id, state="released", leader_ct=ct.encode(), report_count=noisy_n
                )
            row = store.get_collection(None, job_id)
            assert row is not None
        with store.st.read() as conn:
            spec = ctx.dap.spec
            _, n, checksum = store.batch(conn, iv.start, iv.duration, spec.n_parts * spec.n_cells)
        helper_ct = _helper_share(ctx, client, iv, n, checksum)
    except DapProblem as p:
        with store.st.transaction() as conn:
            store.lock(conn, exclusive=True)
            if row["state"] == "start" and p.name == "invalidBatchSize":
                # refused before anything was released or spent: the cut is undone, so the interval
                # keeps taking uploads and a later collection of it is not "queried too many times"
                store.unmark_collected(conn, iv.start, iv.duration)
            store.update_collection(conn, job_id, state="failed", error=p.name)
        return True
    result = Collection(int(row["report_count"]), iv, HpkeCiphertext.decode(row["leader_ct"]), helper_ct)
    store.update_collection(None, job_id, state="finished", result=result.encode())
    return True


def _helper_share(ctx: RoleContext, client: Any, iv: Interval, n: int, checksum: bytes) -> HpkeCiphertext:
    """POST the AggregateShareReq; DapProblem (the helper's type) if it refuses, RuntimeError if down."""
    from privstats.services.dap.codec import Reader

    req = AggregateShareReq(iv, b"", n, checksum)
    url = f"{ctx.dap.url('helper')}/tasks/{ctx.dap.task_id_b64}/aggregate_shares"
    headers = {"Authorization": f"Bearer {ctx.secrets.token('forward')}", "Content-Type": AGGREGATE_SHARE_REQ}
    r = client.post(url, content=req.encode(), headers=headers)
    if r.status_code >= 500:
        raise RuntimeError(f"helper answered {r.status_code} to the aggregate share request; retrying")
    if r.status_code != 200:
        try:
            name = str(r.json().get("type", "")).rsplit(":", 1)[-1].rsplit("/", 1)[-1] or "helperRefused"
        except ValueError:
            name = "helperRefused"
        raise DapProblem(400, name, f"the helper refused the aggregate share request ({r.status_code})")
    rd = Reader(r.content)
    ct = HpkeCiphertext.read(rd)
    rd.end()
    return ct


def register_collection_routes(app: Any, ctx: RoleContext, driver: Any, limit: int) -> None:
    from fastapi.responses import Response
    from starlette.concurrency import run_in_threadpool

    from privstats.services.app import read_body

    @app.put("/tasks/{task_id}/collection_jobs/{job}")
    async def put_collection(task_id: str, job: str, request: Request):
        ctx.admit(task_id, request.headers, "collect")
        job_id = job_id_from_path(job, "collection job id")
        body = await read_body(request, limit)
        req = decode_body(CollectionReq, body, "collection request")
        await run_in_threadpool(create_collection, ctx, job_id, req)
        driver.wake.set()
        return Response(status_code=201)

    @app.post("/tasks/{task_id}/collection_jobs/{job}")
    def poll_collection(task_id: str, job: str, request: Request):
        ctx.admit(task_id, request.headers, "collect")
        row = ctx.store.get_collection(None, job_id_from_path(job, "collection job id"))
        if row is None or row["state"] == "deleted":
            raise DapProblem(404, "unrecognizedCollectionJob", "no such collection job")
        if row["state"] == "finished":
            return Response(bytes(row["result"]), media_type=COLLECTION)
        if row["state"] == "failed":
            raise DapProblem(400, str(row["error"]), "the collection job failed")
        driver.wake.set()
        return Response(status_code=202, headers={"Retry-After": "1"})

    @app.delete("/tasks/{task_id}/collection_jobs/{job}")
    def delete_collection(task_id: str, job: str, request: Request):
        ctx.admit(task_id, request.headers, "collect")
        job_id = job_id_from_path(job, "collection job id")
        if ctx.store.get_collection(None, job_id) is None:
            raise DapProblem(404, "unrecognizedCollectionJob", "no such collection job")
        ctx.store.update_collection(None, job_id, state="deleted")
        return Response(status_code=204)
