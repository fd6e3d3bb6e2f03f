"""Deliverable 6: a leader that deviates in every message it sends the helper.

The test plays the leader itself (it holds the leader's keys and the shared verify key) against the
real helper app and shows that the helper refuses what DAP-09 / VDAF-08 say to refuse — crafted
verifier shares, tampered joint-randomness parts, report ids replayed under new job ids, moved
metadata, a reused job id, wrong report counts, checksums and batch intervals — and that
everything the helper sends back is a function of the leader's own data: for honest reports of two
very different populations the leader sees the same accept/reject pattern under every deviation,
and on acceptance the prep message equals the joint-randomness seed the leader already holds.
"""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("fastapi")

from inproc import make_pair

from privstats.services.dap.codec import (
    AGG_JOB_INIT_REQ,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    InputShareAad,
    Interval,
    PingPong,
    PlaintextInputShare,
    PrepareError,
    PrepareInit,
    PrepareResp,
    ReportMetadata,
    ReportShare,
    Role,
    input_share_info,
)
from privstats.services.dap.hpke import open_
from privstats.services.dap.store import report_checksum
from privstats.services.dap.task import b64


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(tmp_path, request):
    pg = request.getfixturevalue("postgres_server")[1] if request.param == "postgresql" else None
    p = make_pair(tmp_path, pg=pg, min_batch=3)
    yield p
    p.close()


def _honest(pair, cell: int, t: int):
    """A client's report and the leader's honest (state, prep share) for it."""
    from privstats.services.dap.client import DapClient

    ctx, vdaf = pair.lctx, pair.lctx.vdaf
    rep = DapClient(pair.task, http=pair.leader).report(cell, t)
    aad = InputShareAad(ctx.dap.task_id, rep.metadata, rep.public_share).encode()
    plain = open_(ctx.private_key, ctx.config, rep.leader_share, input_share_info(Role.LEADER), aad)
    share = vdaf.decode_input_share(0, PlaintextInputShare.decode(plain).payload)
    public = vdaf.decode_public_share(rep.public_share)
    state, prep_share = vdaf.prep_init(ctx.verify_key, 0, None, rep.metadata.report_id, public, share)
    return rep, state, prep_share


def _init(pair, rep, prep_share, metadata=None) -> PrepareInit:
    payload = PingPong(PingPong.INITIALIZE, prep_share=pair.lctx.vdaf.encode_prep_share(prep_share)).encode()
    return PrepareInit(ReportShare(metadata or rep.metadata, rep.public_share, rep.helper_share), payload)


def _job(pair, inits, job_id=None):
    url = f"/tasks/{pair.lctx.dap.task_id_b64}/aggregation_jobs/{b64(job_id or os.urandom(16))}"
    headers = {
        "Authorization": f"Bearer {pair.secrets['leader'].token('forward')}",
        "Content-Type": AGG_JOB_INIT_REQ,
    }
    r = pair.helper.put(url, content=AggregationJobInitReq(b"", tuple(inits)).encode(), headers=headers)
    return r, (AggregationJobResp.decode(r.content).prepare_resps if r.status_code == 201 else None)


def _helper_count(pair) -> int:
    with pair.hctx.store.st.read() as conn:
        return pair.hctx.store.batch(conn, 0, 2**62, 16)[1]


def _now(pair) -> int:
    tp = pair.lctx.dap.time_precision
    return int(time.time()) // tp * tp


def _deviations(pair, prep_share):
    """The leader's crafted prep shares: each verifier element shifted, a random verifier, a
    tampered joint-randomness part."""
    verifier, part = prep_share
    p = pair.lctx.modulus
    out = []
    for j in range(len(verifier)):
        v = list(verifier)
        v[j] = (v[j] + 1) % p
        out.append((v, part))
    out.append(([int.from_bytes(os.urandom(15), "big") for _ in verifier], part))
    out.append((list(verifier), bytes(b ^ 1 for b in part)))
    return out


def test_replayed_report_ids_under_new_job_ids_are_refused(pair):
    t = _now(pair)
    reports = [_honest(pair, c, t) for c in (1, 2, 3)]
    inits = [_init(pair, rep, ps) for rep, _, ps in reports]
    r, resps = _job(pair, inits)
    assert r.status_code == 201 and all(x.state == PrepareResp.CONTINUE for x in resps)
    r2, resps2 = _job(pair, inits)  # same reports, new job id
    assert r2.status_code == 201
    assert [(x.state, x.error) for x in resps2] == [(PrepareResp.REJECT, PrepareError.REPORT_REPLAYED)] * 3
    fresh = _honest(pair, 4, t)
    _, resps3 = _job(pair, [inits[0], _init(pair, fresh[0], fresh[2])])
    assert [x.state for x in resps3] == [PrepareResp.REJECT, PrepareResp.CONTINUE]
    assert _helper_count(pair) == 4
    # a job id reused with another request is refused; the same request gets the stored answer
    job = os.urandom(16)
    more = [_honest(pair, 5, t) for _ in range(2)]
    first, _ = _job(pair, [_init(pair, more[0][0], more[0][2])], job)
    again, _ = _job(pair, [_init(pair, more[0][0], more[0][2])], job)
    other, _ = _job(pair, [_init(pair, more[1][0], more[1][2])], job)
    assert first.status_code == 201 and again.content == first.content and other.status_code == 409
    assert _helper_count(pair) == 5


def test_moved_metadata_and_duplicate_ids_are_refused(pair):
    t = _now(pair)
    rep, _, ps = _honest(pair, 2, t)
    moved = ReportMetadata(rep.metadata.report_id, t - pair.lctx.dap.time_precision)
    _, resps = _job(pair, [_init(pair, rep, ps, metadata=moved)])
    assert (resps[0].state, resps[0].error) == (PrepareResp.REJECT, PrepareError.HPKE_DECRYPT_ERROR)
    r, _ = _job(pair, [_init(pair, rep, ps), _init(pair, rep, ps)])
    assert r.status_code == 400
    assert _helper_count(pair) == 0


def test_leader_view_is_a_function_of_its_own_data(pair):
    """Two populations (all in cell 0 vs all in cell 15): identical views under every deviation."""
    t = _now(pair)
    views = {}
    for cell in (0, 15):
        view = []
        for _ in range(2):
            rep, state, ps = _honest(pair, cell, t)
            _, (honest_resp,) = _job(pair, [_init(pair, rep, ps)])
            assert honest_resp.state == PrepareResp.CONTINUE
            msg = PingPong.decode(honest_resp.payload)
            # the helper's only message on acceptance is the joint-randomness seed the leader holds
            assert msg.kind == PingPong.FINISH and msg.prep_msg == state[1]
            view.append("accept")
            for crafted in _deviations(pair, ps):
                rep2, _, _ = _honest(pair, cell, t)
                _, (resp,) = _job(pair, [_init(pair, rep2, crafted)])
                view.append((resp.state, resp.error, resp.payload))
        views[cell] = view
    assert views[0] == views[15]
    assert all(
        v == (PrepareResp.REJECT, PrepareError.VDAF_PREP_ERROR, b"") for v in views[0] if v != "accept"
    )
    assert _helper_count(pair) == 4  # only the honest runs were aggregated


def test_aggregate_share_requests_are_checked(pair):
    t = _now(pair)
    tp = pair.lctx.dap.time_precision
    reports = [_honest(pair, c, t) for c in (1, 2, 3, 4)]
    _job(pair, [_init(pair, rep, ps) for rep, _, ps in reports])
    ids = [rep.metadata.report_id for rep, _, _ in reports]
    url = f"/tasks/{pair.lctx.dap.task_id_b64}/aggregate_shares"
    headers = {"Authorization": f"Bearer {pair.secrets['leader'].token('forward')}"}

    def ask(iv, n, checksum):
        return pair.helper.post(
            url, content=AggregateShareReq(iv, b"", n, checksum).encode(), headers=headers
        )

    iv = Interval(t, tp)
    assert ask(iv, 5, report_checksum(ids)).json()["type"].endswith("batchMismatch")
    assert ask(iv, 4, report_checksum(ids[:3])).json()["type"].endswith("batchMismatch")
    assert ask(Interval(t - tp, tp), 0, bytes(32)).json()["type"].endswith("invalidBatchSize")
    assert ask(Interval(t + 1, tp), 4, report_checksum(ids)).json()["type"].endswith("batchInvalid")
    ok = ask(iv, 4, report_checksum(ids))
    assert ok.status_code == 200 and ask(iv, 4, report_checksum(ids)).content == ok.content
    assert ask(Interval(t, 2 * tp), 4, report_checksum(ids)).json()["type"].endswith("batchOverlap")
    # reports in the released interval are no longer prepared
    rep, _, ps = _honest(pair, 1, t)
    _, resps = _job(pair, [_init(pair, rep, ps)])
    assert (resps[0].state, resps[0].error) == (PrepareResp.REJECT, PrepareError.BATCH_COLLECTED)
