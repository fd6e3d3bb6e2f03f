"""Malicious clients against the DAP leader and helper (ported from the retired leader/helper
protocol's tests): reports that are not one-hot, and a report whose two input shares belong to
different values, are dropped by the Prio3 check and counted as failed; the honest reports' curve
is exact (ε = 10^6); a collection refused below the minimum batch says nothing about the count."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")

from inproc import collect, drain, make_pair

from privstats.services.dap.codec import (
    REPORT,
    Collection,
    InputShareAad,
    Interval,
    PlaintextInputShare,
    Report,
    ReportMetadata,
    Role,
    input_share_info,
)
from privstats.services.dap.hpke import seal


def _cheat(pair, encoded: list[int], t: int) -> Report:
    """A report of an arbitrary encoded measurement (valid FLP proof of it), as a cheating client sends."""
    vdaf, dap = pair.lctx.vdaf, pair.lctx.dap
    rid = os.urandom(16)
    original = vdaf.flp.valid.encode
    vdaf.flp.valid.encode = lambda _m: list(encoded)
    try:
        public, shares = vdaf.shard(None, rid, os.urandom(vdaf.RAND_SIZE))
    finally:
        vdaf.flp.valid.encode = original
    md = ReportMetadata(rid, t)
    public_b = vdaf.encode_public_share(public)
    aad = InputShareAad(dap.task_id, md, public_b).encode()
    cts = [
        seal(
            dap.hpke_configs[role],
            input_share_info(code),
            aad,
            PlaintextInputShare(b"", vdaf.encode_input_share(shares[i])).encode(),
        )
        for i, (role, code) in enumerate((("leader", Role.LEADER), ("helper", Role.HELPER)))
    ]
    return Report(md, public_b, cts[0], cts[1])


def test_malicious_reports_are_dropped_and_counted(tmp_path):
    from privstats.services.dap.client import DapClient, open_collection

    pair = make_pair(tmp_path, epsilon=1e6, grid=15)
    try:
        x = np.random.default_rng(2).beta(2, 5, 300)
        client = DapClient(pair.task, http=pair.leader)
        assert client.upload(x[:150]) == 150
        L, p = pair.lctx.dap.spec.length, pair.lctx.modulus
        tp = pair.lctx.dap.time_precision
        t = int(time.time()) // tp * tp
        bad = [[0] * L for _ in range(5)]
        bad[0][3] = 1000  # 1000 x a one-hot
        bad[1][2] = bad[1][7] = 1  # two ones
        bad[2][4] = p - 1  # a negative entry
        bad[3][1], bad[3][5] = 2, p - 1  # sums to one
        bad[4] = [1] * L  # everything
        reports = [_cheat(pair, b, t) for b in bad]
        a, b = client.report(1, t), client.report(9, t)  # the two shares of different values
        reports.append(Report(a.metadata, a.public_share, a.leader_share, b.helper_share))
        url = f"/tasks/{pair.lctx.dap.task_id_b64}/reports"
        for r in reports:
            assert (
                pair.leader.put(url, content=r.encode(), headers={"Content-Type": REPORT}).status_code == 201
            )
        assert client.upload(x[150:]) == 150
        drain(pair)
        states = pair.lctx.store.report_states()
        assert states == {"done": 300, "failed": 6}, states
        iv = Interval(0, (int(time.time()) // tp + 1) * tp)
        status, body = collect(pair, iv)
        assert status == 200
        res = open_collection(pair.lctx.dap, pair.secrets["analyst"], Collection.decode(body), iv)
        exact = np.array([np.mean(x <= s) for s in pair.lctx.dap.spec.thresholds])
        assert np.allclose(res.raw, exact, atol=1e-9)
    finally:
        pair.close()


def test_refusal_below_min_batch_carries_no_count(tmp_path):
    """1 and 9 reports under a minimum batch of 10: the same status and problem document."""
    from privstats.services.dap.client import DapClient

    pair = make_pair(tmp_path, min_batch=10)
    try:
        client = DapClient(pair.task, http=pair.leader)
        tp = pair.lctx.dap.time_precision
        t = int(time.time()) // tp * tp
        answers = []
        for k, n in ((3, 1), (2, 9)):
            client.upload(np.full(n, 0.5), timestamp=t - k * tp)
            status, doc = collect(pair, Interval(t - k * tp, tp))
            answers.append((status, doc))
        assert answers[0] == answers[1] and answers[0][0] == 400
        doc = {k: v for k, v in answers[0][1].items() if k != "taskid"}  # a random id may contain a 9
        assert answers[0][1]["type"].endswith("invalidBatchSize") and "9" not in str(doc)
    finally:
        pair.close()
