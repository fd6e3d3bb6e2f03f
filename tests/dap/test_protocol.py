"""DAP-09 leader and helper in process: uploads, aggregation, collection, DP, refusals."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")

from inproc import collect, drain, make_pair

from privstats.services.dap.codec import (
    COLLECT_REQ,
    HPKE_CONFIG_LIST,
    REPORT,
    Collection,
    CollectionReq,
    HpkeCiphertext,
    Interval,
    Report,
    decode_hpke_config_list,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(tmp_path, request):
    pg = request.getfixturevalue("postgres_server")[1] if request.param == "postgresql" else None
    p = make_pair(tmp_path, pg=pg)
    yield p
    p.close()


def _client(pair):
    from privstats.services.dap.client import DapClient

    return DapClient(pair.task, http=pair.leader)


def _put(pair, body: bytes, ct: str = REPORT):
    url = f"/tasks/{pair.lctx.dap.task_id_b64}/reports"
    return pair.leader.put(url, content=body, headers={"Content-Type": ct})


def _problem(r, status: int, name: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    doc = r.json()
    assert doc["type"].endswith(":" + name) or doc["type"].endswith("/" + name), doc
    assert doc["status"] == status


def test_hpke_config_endpoint(pair):
    tid = pair.lctx.dap.task_id_b64
    r = pair.leader.get("/hpke_config", params={"task_id": tid}, headers={"Accept": HPKE_CONFIG_LIST})
    assert r.status_code == 200 and r.headers["content-type"] == HPKE_CONFIG_LIST
    assert decode_hpke_config_list(r.content) == [pair.lctx.config]
    _problem(pair.leader.get("/hpke_config"), 400, "missingTaskID")
    _problem(pair.helper.get("/hpke_config", params={"task_id": "AAAA"}), 404, "unrecognizedTask")


def test_upload_refusals(pair):
    client, now = _client(pair), int(time.time())
    tp = pair.lctx.dap.time_precision
    t = now - now % tp
    good = client.report(3, t)
    assert _put(pair, good.encode()).status_code == 201
    assert _put(pair, good.encode()).status_code == 201  # replay: ignored, stored once
    assert pair.lctx.store.report_states() == {"start": 1}
    _problem(_put(pair, b"\x00" * 10), 400, "invalidMessage")
    _problem(_put(pair, good.encode(), ct="text/plain"), 415, "invalidMessage")
    _problem(_put(pair, client.report(3, now + 3600).encode()), 400, "reportTooEarly")
    _problem(_put(pair, client.report(3, t - 30 * 24 * 3600).encode()), 400, "reportRejected")
    r = client.report(3, t)
    stale = Report(
        r.metadata,
        r.public_share,
        HpkeCiphertext(9, r.leader_share.enc, r.leader_share.payload),
        r.helper_share,
    )
    _problem(_put(pair, stale.encode()), 400, "outdatedConfig")
    # the share is bound to its metadata: moved to another report id it no longer opens
    r = client.report(3, t)
    moved = Report(type(r.metadata)(os.urandom(16), t), r.public_share, r.leader_share, r.helper_share)
    _problem(_put(pair, moved.encode()), 400, "reportRejected")
    other = f"/tasks/{'A' * 43}/reports"
    _problem(
        pair.leader.put(other, content=good.encode(), headers={"Content-Type": REPORT}),
        404,
        "unrecognizedTask",
    )
    assert pair.lctx.store.report_states() == {"start": 1}


def test_collect_end_to_end_and_batch_rules(pair):
    from privstats.services.dap.client import open_collection

    x = np.random.default_rng(7).uniform(size=60)
    assert _client(pair).upload(x) == 60
    drain(pair)
    assert pair.lctx.store.report_states() == {"done": 60}
    tp = pair.lctx.dap.time_precision
    iv = Interval(0, (int(time.time()) // tp + 1) * tp)
    status, body = collect(pair, iv)
    assert status == 200
    col = Collection.decode(body)
    res = open_collection(pair.lctx.dap, pair.secrets["analyst"], col, iv)
    exact = np.array([np.mean(x <= t) for t in pair.lctx.dap.spec.thresholds])
    m = res.stderr > 0  # the upper bound's value is 1 by construction (SE 0)
    assert np.max(np.abs(res.raw - exact)[m] / res.stderr[m]) < 5
    assert np.allclose(res.raw[~m], exact[~m])
    # both aggregators counted exactly the 60 reports
    for ctx in (pair.lctx, pair.hctx):
        with ctx.store.st.read() as conn:
            assert ctx.store.batch(conn, iv.start, iv.duration, 16)[1] == 60
    # the batch is cut: an upload into it is refused, the same interval cannot be collected again,
    # an overlapping one neither
    _problem(_put(pair, _client(pair).report(1, iv.start + iv.duration - tp).encode()), 400, "reportRejected")
    status, doc = collect(pair, iv)
    assert status == 400 and doc["type"].endswith("batchQueriedTooManyTimes")
    status, doc = collect(pair, Interval(iv.start + iv.duration - tp, 2 * tp))
    assert status == 400 and doc["type"].endswith("batchOverlap")


def test_min_batch_budget_and_idempotent_collection(tmp_path):
    pair = make_pair(tmp_path, min_batch=20, max_collections=1)
    try:
        tp = pair.lctx.dap.time_precision
        t = int(time.time()) // tp * tp
        client = _client(pair)
        client.upload(np.full(5, 0.5), timestamp=t - 2 * tp)
        status, doc = collect(pair, Interval(t - 2 * tp, tp))
        assert status == 400 and doc["type"].endswith("invalidBatchSize"), doc
        client.upload(np.full(25, 0.5), timestamp=t)
        job = os.urandom(16)
        status, body = collect(pair, Interval(t, tp), job_id=job)
        assert status == 200
        status2, body2 = collect(pair, Interval(t, tp), job_id=job)  # same job again: same answer
        assert status2 == 200 and body2 == body
        # the budget allows one collection: a third interval fails on the leader's ledger
        client.upload(np.full(25, 0.5), timestamp=t - tp)
        status, doc = collect(pair, Interval(t - tp, tp))
        assert status == 400 and "budgetExceeded" in doc["type"], doc
    finally:
        pair.close()


def test_refused_collection_leaves_its_interval_open(pair):
    """A collection refused below the minimum batch releases nothing, so it does not consume its
    interval: uploads into it are accepted again and a later collection of it succeeds."""
    tp = pair.lctx.dap.time_precision
    t = int(time.time()) // tp * tp
    client = _client(pair)
    client.upload(np.full(2, 0.5), timestamp=t)  # the pair's minimum batch is 5
    status, doc = collect(pair, Interval(t, tp))
    assert status == 400 and doc["type"].endswith("invalidBatchSize"), doc
    assert pair.lctx.store.report_states() == {"done": 2}
    out = client.upload(np.full(4, 0.5), timestamp=t)  # accepted again (refused while the cut stood)
    assert pair.lctx.store.report_states() == {"done": 2, "start": 4}, out
    status, body = collect(pair, Interval(t, tp))
    assert status == 200, body
    assert Collection.decode(body).interval == Interval(t, tp)
    assert pair.lctx.store.report_states() == {"done": 6}
    # now it is consumed: the same interval again is refused
    status, doc = collect(pair, Interval(t, tp))
    assert status == 400 and doc["type"].endswith("batchQueriedTooManyTimes"), doc


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_refused_collections_of_an_interval_are_capped(tmp_path, request, db):
    """Each refusal below the minimum batch tells the analyst one bit (not enough reports yet); after
    ``max_refused_collections`` of them the interval is refused outright, whatever its count, across
    deletions of the refused jobs and a restart of the leader, and so is any interval overlapping it (a
    wider one asks about the same reports); disjoint intervals are unaffected."""
    from privstats.services.dap.task import b64

    pg = request.getfixturevalue("postgres_server")[1] if db == "postgresql" else None
    pair = make_pair(tmp_path, pg=pg, max_refused_collections=2)
    try:
        tp = pair.lctx.dap.time_precision
        t = int(time.time()) // tp * tp
        client = _client(pair)
        client.upload(np.full(2, 0.5), timestamp=t)  # the minimum batch is 5
        jobs = [os.urandom(16), os.urandom(16)]
        for job in jobs:
            status, doc = collect(pair, Interval(t, tp), job_id=job)
            assert status == 400 and doc["type"].endswith("invalidBatchSize"), doc
        auth = {"Authorization": f"Bearer {pair.secrets['analyst'].token('collect')}"}
        url = f"/tasks/{pair.lctx.dap.task_id_b64}/collection_jobs/{b64(jobs[0])}"
        assert pair.leader.delete(url, headers=auth).status_code == 204  # deleting does not reset the count
        client.upload(np.full(4, 0.5), timestamp=t)  # now 6 >= 5: the answer must not depend on it
        status, doc = collect(pair, Interval(t, tp))
        assert status == 400 and doc["type"].endswith("batchQueriedTooManyTimes"), doc
        assert "refused below the minimum batch 2 times" in doc["detail"]
        for wider in (Interval(t, 2 * tp), Interval(t - tp, 3 * tp)):  # the same reports, asked again
            status, doc = collect(pair, wider)
            assert status == 400 and doc["type"].endswith("batchQueriedTooManyTimes"), doc
        client.upload(np.full(5, 0.5), timestamp=t - tp)
        status, _ = collect(pair, Interval(t - tp, tp))
        assert status == 200
        if db == "sqlite":  # the count is durable: a restarted leader on the same file refuses too
            from fastapi.testclient import TestClient

            from privstats.services.dap.leader import create_leader_app
            from privstats.services.storage import Storage

            app = create_leader_app(
                pair.task, pair.secrets["leader"], Storage(f"sqlite:///{tmp_path}/leader.db"), drive=False
            )
            r = TestClient(app).put(
                f"/tasks/{pair.lctx.dap.task_id_b64}/collection_jobs/{b64(os.urandom(16))}",
                content=CollectionReq(Interval(t, tp)).encode(),
                headers={**auth, "Content-Type": COLLECT_REQ},
            )
            _problem(r, 400, "batchQueriedTooManyTimes")
    finally:
        pair.close()


def test_refusal_cap_is_validated():
    from privstats.services.dap.task import new_dap_task

    with pytest.raises(ValueError, match="max_refused_collections"):
        new_dap_task("ecdf", bounds=(0, 1), grid=15, epsilon=1.0, min_batch=5, max_refused_collections=-1)


def test_malformed_ids_and_auth(pair):
    tid = pair.lctx.dap.task_id_b64
    auth = {"Authorization": f"Bearer {pair.secrets['analyst'].token('collect')}"}
    _problem(
        pair.leader.put(f"/tasks/{tid}/collection_jobs/xx", content=b"", headers=auth), 400, "invalidMessage"
    )
    _problem(
        pair.leader.post(f"/tasks/{tid}/collection_jobs/{'A' * 22}", headers=auth),
        404,
        "unrecognizedCollectionJob",
    )
    _problem(pair.leader.post(f"/tasks/{tid}/collection_jobs/{'A' * 22}"), 401, "unauthorizedRequest")
    bad = {"Authorization": "Bearer nope"}
    _problem(
        pair.leader.post(f"/tasks/{tid}/collection_jobs/{'A' * 22}", headers=bad), 403, "unauthorizedRequest"
    )
    fwd = {"Authorization": f"Bearer {pair.secrets['leader'].token('forward')}"}
    _problem(
        pair.helper.put(f"/tasks/{tid}/aggregation_jobs/!!", content=b"", headers=fwd), 400, "invalidMessage"
    )
    # batch intervals out of range or misaligned are 4xx, not 5xx
    from privstats.services.dap.codec import AggregateShareReq

    for iv in (Interval(2**63, 3600), Interval(3601, 3600), Interval(0, 0)):
        body = AggregateShareReq(iv, b"", 0, bytes(32)).encode()
        _problem(
            pair.helper.post(f"/tasks/{tid}/aggregate_shares", content=body, headers=fwd), 400, "batchInvalid"
        )
    status, doc = collect(pair, Interval(2**64 - 3600, 3600))
    assert status == 400 and doc["type"].endswith("batchInvalid")


def test_noisy_report_count_law():
    """The count in Collection is n + DLap(1/ε): mean n, variance 2 e^{-ε} / (1 - e^{-ε})^2."""
    from privstats.services.dap.dp import noisy_count

    rng = np.random.default_rng(11)
    eps, n, k = 1.0, 10_000, 4000
    draws = np.array([noisy_count(n, eps, rng=rng) for _ in range(k)], dtype=float)
    var = 2 * np.exp(-eps) / (1 - np.exp(-eps)) ** 2
    assert abs(draws.mean() - n) < 5 * np.sqrt(var / k)
    assert (
        abs(draws.var() - var) < 5 * var * np.sqrt(2.0 / k) * 2
    )  # kurtosis of DLap ≤ 6: SE ≤ 2 var sqrt(2/k)
    assert np.mean(draws == n) < 0.5


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_collection_count_is_noisy_or_absent(tmp_path, neighbours):
    """Replace-one: the public batch size, noised; add/remove: the size is private and no budget pays
    for a count, so ``report_count`` is 0 whatever was uploaded (the opening uses the noisy total)."""
    pair = make_pair(tmp_path, neighbours=neighbours)
    x = np.random.default_rng(3).uniform(size=40)
    assert _client(pair).upload(x) == 40
    drain(pair)
    tp = pair.lctx.dap.time_precision
    status, body = collect(pair, Interval(0, (int(time.time()) // tp + 1) * tp))
    assert status == 200
    count = Collection.decode(body).report_count
    if neighbours == "add-remove":
        assert count == 0
    else:
        assert count > 0  # n + DLap(1/ε) with n = 40: 0 has probability below e^-40
