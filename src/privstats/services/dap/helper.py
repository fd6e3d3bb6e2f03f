"""The DAP-09 helper: ``GET /hpke_config``, ``PUT /tasks/{task-id}/aggregation_jobs/{job-id}`` and
``POST /tasks/{task-id}/aggregate_shares`` (both with the leader's ``forward`` token).

What it refuses, as DAP-09 says (each report on its own, ``PrepareResp`` reject with the code):
a report id it has prepared in any earlier job (``report_replayed`` — a leader cannot get a report
prepared twice by renaming the job), a time in a collected interval (``batch_collected``), too far
in the future (``report_too_early``) or past the expiry age (``report_dropped``), an unknown HPKE
config (``hpke_unknown_config_id``), a share that does not open under its report's metadata and
public share (``hpke_decrypt_error``), a malformed share or leader message (``invalid_message``), and
a failed Prio3 check — crafted prep shares, tampered joint-randomness parts (``vdaf_prep_error``).
A job id reused with a different request is a 409; the same request again gets the stored answer.

The job's outcome (reports seen, bucket sums, the response) commits in one transaction before the
201, so a helper killed at any point either never counted the job or answers its retry from the
database.  Aggregate shares: the exact count and checksum must match the helper's own
(``batchMismatch``), the batch must hold at least ``min_batch`` reports, an interval is released
once (``batchQueriedTooManyTimes`` / ``batchOverlap``), the helper spends its own budget and adds its
own noise, and a retried request gets the stored sealed share.
"""

from __future__ import annotations

import struct
import time
from typing import Any, TypeVar

from fastapi import Request

from privstats.services.dap.codec import (
    AGG_JOB_RESP,
    AGGREGATE_SHARE,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    DecodeError,
    PingPong,
    PlaintextInputShare,
    PrepareError,
    PrepareInit,
    PrepareResp,
    Role,
    input_share_info,
)
from privstats.services.dap.common import (
    DapProblem,
    RoleContext,
    build_context,
    dap_app,
    decode_body,
    job_id_from_path,
    request_hash,
)
from privstats.services.dap.hpke import HPKEOpenError, open_
from privstats.services.dap.store import report_checksum

__all__ = ["create_helper_app", "handle_aggregate_share", "handle_job"]


_HELPER_INFO = input_share_info(Role.HELPER)
_U64, _U32 = struct.Struct(">Q"), struct.Struct(">I")


def _reject(rid: bytes, code: int) -> PrepareResp:
    return PrepareResp(rid, PrepareResp.REJECT, error=code)


def _open_one(ctx: RoleContext, init: PrepareInit, now: int) -> PrepareResp | tuple[bytes, bytes, bytes]:
    """Checks and HPKE opening of one report: a rejection, or ``(public share, input share, leader
    prep share)`` (all encoded) for preparation."""
    dap = ctx.dap
    rs = init.report_share
    rid, t = rs.metadata.report_id, rs.metadata.time
    if t > now + dap.tolerable_clock_skew:
        return _reject(rid, PrepareError.REPORT_TOO_EARLY)
    if t < now - dap.report_expiry_age:
        return _reject(rid, PrepareError.REPORT_DROPPED)
    if rs.encrypted_input_share.config_id != ctx.config.id:
        return _reject(rid, PrepareError.HPKE_UNKNOWN_CONFIG_ID)
    # InputShareAad = task id || ReportMetadata (id, u64 time) || opaque32 public share
    aad = b"".join((dap.task_id, rid, _U64.pack(t), _U32.pack(len(rs.public_share)), rs.public_share))
    try:
        plain = open_(ctx.private_key_obj, ctx.config, rs.encrypted_input_share, _HELPER_INFO, aad)
    except HPKEOpenError:
        return _reject(rid, PrepareError.HPKE_DECRYPT_ERROR)
    try:
        pis = PlaintextInputShare.decode(plain)
        msg = PingPong.decode(init.payload)
    except DecodeError:
        return _reject(rid, PrepareError.INVALID_MESSAGE)
    if pis.extensions or msg.kind != PingPong.INITIALIZE:
        return _reject(rid, PrepareError.INVALID_MESSAGE)
    return rs.public_share, pis.payload, msg.prep_share


def _prepare(ctx: RoleContext, inits: list[PrepareInit], now: int) -> tuple[list[PrepareResp], list]:
    """The helper's answers for ``inits`` (in order) and the accepted ``(rid, time, out share)``.

    Preparation runs batched (``prep_init_batch``, ``prep_shares_to_prep_batch``): same bytes as the
    per-report algorithm.  Any VDAF error — a malformed share, a crafted verifier share, a tampered
    joint-randomness part — rejects that report with ``vdaf_prep_error``.
    """
    from privstats.secure.vdaf.batch import prep_init_batch, prep_shares_to_prep_batch

    vdaf = ctx.vdaf
    resps: list[PrepareResp | None] = [None] * len(inits)
    todo: list[tuple[int, bytes, bytes, bytes]] = []
    for k, init in enumerate(inits):
        opened = _open_one(ctx, init, now)
        if isinstance(opened, PrepareResp):
            resps[k] = opened
        else:
            todo.append((k, *opened))
    rids = [init.report_share.metadata.report_id for init in inits]
    inited = prep_init_batch(
        vdaf, ctx.verify_key, 1, None, [rids[k] for k, *_ in todo], [ps for _, ps, _, _ in todo],
        [ins for _, _, ins, _ in todo],
    )  # fmt: skip
    ok = [
        (k, res, lps)
        for (k, _, _, lps), res in zip(todo, inited, strict=True)
        if not isinstance(res, Exception)
    ]
    for (k, *_), res in zip(todo, inited, strict=True):
        if isinstance(res, Exception):
            resps[k] = _reject(rids[k], PrepareError.VDAF_PREP_ERROR)
    msgs = prep_shares_to_prep_batch(vdaf, None, [[lps, res[1]] for _, res, lps in ok])
    accepted = []
    for (k, (state, _), _), msg in zip(ok, msgs, strict=True):
        try:
            if isinstance(msg, Exception):
                raise msg
            out = vdaf.prep_next(state, msg)
        except Exception:
            resps[k] = _reject(rids[k], PrepareError.VDAF_PREP_ERROR)
            continue
        payload = PingPong(PingPong.FINISH, prep_msg=vdaf.encode_prep_msg(msg)).encode()
        resps[k] = PrepareResp(rids[k], PrepareResp.CONTINUE, payload=payload)
        accepted.append((rids[k], inits[k].report_share.metadata.time, out))
    assert all(r is not None for r in resps)
    return [r for r in resps if r is not None], accepted


def _additions(ctx: RoleContext, accepted: list[tuple[bytes, int, Any]]) -> dict[int, tuple]:
    tp, out = ctx.dap.time_precision, {}
    groups: dict[int, list] = {}
    for rid, t, share in accepted:
        groups.setdefault(t - t % tp, []).append((rid, share))
    for bucket, items in groups.items():
        agg = list(ctx.vdaf.aggregate(None, [s for _, s in items]))
        out[bucket] = (agg, len(items), report_checksum([rid for rid, _ in items]))

    return out


_Req = TypeVar("_Req", AggregationJobInitReq, AggregateShareReq)


def _decode_prio3(message: type[_Req], body: bytes, what: str) -> _Req:
    """Parse a leader's request; Prio3 takes no aggregation parameter."""
    req = decode_body(message, body, what)
    if req.agg_param:
        raise DapProblem(400, "invalidMessage", "Prio3 takes an empty aggregation parameter")
    return req


def handle_job(ctx: RoleContext, job_id: bytes, body: bytes, now: int | None = None) -> bytes:
    """Answer an ``AggregationJobInitReq`` (encoded ``AggregationJobResp``), committing first."""
    store = ctx.store
    digest = request_hash(body)
    with store.st.read() as conn:
        prior = store.helper_job(conn, job_id)
    if prior is not None:
        if prior[0] != digest:
            raise DapProblem(409, "invalidMessage", "this aggregation job id names another request")
        return prior[1]
    req = _decode_prio3(AggregationJobInitReq, body, "aggregation job")
    rids = [p.report_share.metadata.report_id for p in req.prepare_inits]
    if len(set(rids)) != len(rids):
        raise DapProblem(400, "invalidMessage", "a report id appears twice in the job")
    now = int(time.time()) if now is None else now
    for _attempt in range(3):
        with store.st.read() as conn:
            replayed = set(store.seen_jobs(conn, rids))
            cut = store.collected_intervals(conn)
            collected = {
                p.report_share.metadata.time
                for p in req.prepare_inits
                if any(a <= p.report_share.metadata.time < a + b for a, b in cut)
            }
        skip = {
            p.report_share.metadata.report_id: PrepareError.REPORT_REPLAYED
            if p.report_share.metadata.report_id in replayed
            else PrepareError.BATCH_COLLECTED
            for p in req.prepare_inits
            if p.report_share.metadata.report_id in replayed or p.report_share.metadata.time in collected
        }
        fresh = [p for p in req.prepare_inits if p.report_share.metadata.report_id not in skip]
        done, accepted = _prepare(ctx, fresh, now)
        by_id = {r.report_id: r for r in done}
        resps = [by_id.get(rid) or _reject(rid, skip[rid]) for rid in rids]
        response = AggregationJobResp(tuple(resps)).encode()
        with store.st.transaction() as conn:
            store.lock(conn, exclusive=True)
            prior = store.helper_job(conn, job_id)
            if prior is not None:  # a concurrent retry of the same job committed first
                if prior[0] != digest:
                    raise DapProblem(409, "invalidMessage", "this aggregation job id names another request")
                return prior[1]
            ids = [rid for rid, _, _ in accepted]
            cut = store.collected_intervals(conn)
            if store.seen_jobs(conn, ids) or any(a <= t < a + b for _, t, _ in accepted for a, b in cut):
                continue  # another job or a collection got there meanwhile: decide again
            store.commit_helper_job(conn, job_id, digest, response, ids, _additions(ctx, accepted))
            return response
    raise DapProblem(503, "busy", "concurrent jobs kept changing the reports' status; retry")


def handle_aggregate_share(ctx: RoleContext, body: bytes) -> bytes:
    """Answer an ``AggregateShareReq`` (encoded ``AggregateShare``), idempotently."""
    from privstats.services.dap.collect_jobs import check_interval, release_share

    req = _decode_prio3(AggregateShareReq, body, "aggregate share request")
    iv = req.interval
    check_interval(ctx, iv)
    store, digest = ctx.store, request_hash(body)
    with store.st.transaction() as conn:
        store.lock(conn, exclusive=True)
        prior = store.get_agg_share(conn, iv.start)
        if prior is not None and prior[0] == iv.duration:
            if prior[1] == digest:
                return prior[2]
            raise DapProblem(400, "batchQueriedTooManyTimes", "this batch has been released")
        same, other = store.overlaps_collected(conn, iv.start, iv.duration)
        if same or other:
            raise DapProblem(400, "batchOverlap", "the interval overlaps a released batch")
        spec = ctx.dap.spec
        _, n, checksum = store.batch(conn, iv.start, iv.duration, spec.n_parts * spec.n_cells)
        if n != req.report_count or checksum != req.checksum:
            raise DapProblem(
                400, "batchMismatch", "the leader's report count or checksum differs from the helper's"
            )
        ct, _, _, _ = release_share(ctx, conn, iv, f"dap aggregate share {iv.start}+{iv.duration}")
        store.mark_collected(conn, iv.start, iv.duration)
        response = ct.encode()
        store.put_agg_share(conn, iv.start, iv.duration, digest, response)
        return response


def create_helper_app(task, secrets, storage, **_options: Any):
    """The helper's FastAPI app."""
    from fastapi.responses import Response
    from starlette.concurrency import run_in_threadpool

    from privstats.services.app import read_body

    ctx = build_context("helper", task, secrets, storage)
    app = dap_app(ctx)
    limit = int(task.max_request_bytes) * 4

    @app.put("/tasks/{task_id}/aggregation_jobs/{job}")
    async def aggregation_job(task_id: str, job: str, request: Request):
        ctx.admit(task_id, request.headers, "forward")
        job_id = job_id_from_path(job, "aggregation job id")
        body = await read_body(request, limit)
        out = await run_in_threadpool(handle_job, ctx, job_id, body)
        return Response(out, status_code=201, media_type=AGG_JOB_RESP)

    @app.post("/tasks/{task_id}/aggregate_shares")
    async def aggregate_share(task_id: str, request: Request):
        ctx.admit(task_id, request.headers, "forward")
        body = await read_body(request, limit)
        out = await run_in_threadpool(handle_aggregate_share, ctx, body)
        return Response(out, status_code=200, media_type=AGGREGATE_SHARE)

    return app
