"""The leader's fast paths: batched report inserts, the bare ASGI upload route, full-size jobs."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("fastapi")

from inproc import drain, make_pair

from privstats.services.dap.codec import REPORT


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(tmp_path, request):
    pg = request.getfixturevalue("postgres_server")[1] if request.param == "postgresql" else None
    p = make_pair(tmp_path, pg=pg, grid=7)
    yield p
    p.close()


def _row(t: int) -> tuple:
    return (os.urandom(16), t, b"p", b"l", b"h")


def test_put_reports_labels_new_replay_and_collected(pair):
    store = pair.lctx.store
    tp = pair.lctx.dap.time_precision
    t = int(time.time()) // tp * tp
    a, b, c = _row(t), _row(t), _row(t)
    assert store.put_reports([a, b]) == ["new", "new"]
    # known ids, a fresh one, and the fresh one twice in the same transaction
    assert store.put_reports([a, c, c, b]) == ["replay", "new", "replay", "replay"]
    assert store.report_states() == {"start": 3}
    with store.st.transaction() as conn:
        store.mark_collected(conn, t, tp)
    assert store.put_reports([_row(t), _row(t + tp)]) == ["collected", "new"]


def test_upload_route_answers_problems_and_passes_other_requests(pair):
    from privstats.services.dap.client import DapClient

    tid = pair.lctx.dap.task_id_b64
    url = f"/tasks/{tid}/reports"
    tp = pair.lctx.dap.time_precision
    body = DapClient(pair.task, http=pair.leader).report(2, int(time.time()) // tp * tp).encode()
    r = pair.leader.put(url, content=body, headers={"Content-Type": REPORT})
    assert r.status_code == 201 and r.content == b""
    big = b"\x00" * (int(pair.task.max_request_bytes) + 1)
    r = pair.leader.put(url, content=big, headers={"Content-Type": REPORT})
    assert r.status_code == 413 and r.json()["type"].endswith(":invalidMessage")
    assert r.headers["content-type"] == "application/problem+json"
    assert pair.leader.get("/healthz").status_code == 200  # not an upload: FastAPI answers
    assert pair.lctx.store.report_states() == {"start": 1}


def test_driver_waits_for_a_full_job_unless_flushed(pair):
    from privstats.services.dap.client import DapClient

    driver = pair.driver
    driver.job_size = 4
    tp = pair.lctx.dap.time_precision
    t = int(time.time()) // tp * tp
    client = DapClient(pair.task, http=pair.leader)
    for cell in range(3):
        r = pair.leader.put(
            f"/tasks/{pair.lctx.dap.task_id_b64}/reports",
            content=client.report(cell, t).encode(),
            headers={"Content-Type": REPORT},
        )
        assert r.status_code == 201
    assert driver.pending == 3
    assert not driver.step(flush=False)  # 3 < job_size: no job yet
    assert pair.lctx.store.report_states() == {"start": 3}
    assert driver.step(flush=True)  # a partial job on flush
    drain(pair)
    assert pair.lctx.store.report_states() == {"done": 3}


def test_servers_limit_openblas_to_one_thread():
    """A DAP server limits numpy's OpenBLAS to one thread when it starts (idle BLAS threads spun and
    cost ~300 us of CPU a report); checked in a fresh process, since the limit is process-wide."""
    import ast
    import subprocess
    import sys

    code = (
        "import numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from privstats.services.dap.common import single_threaded_blas\n"
        "n = single_threaded_blas()\n"
        "print(n, [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    n_limited, threads = out.stdout.split(maxsplit=1)
    if threads.strip() == "[]":
        pytest.skip("numpy is not linked to a BLAS threadpoolctl knows here")
    assert int(n_limited) >= 1 and set(ast.literal_eval(threads)) == {1}, out.stdout


def test_split_report_agrees_with_the_generic_decoder():
    """The offset reader accepts exactly the bodies ``Report.decode`` accepts, with the same fields
    (seeded truncations, extensions and byte flips of length fields)."""
    import random

    from privstats.services.dap.codec import DecodeError, HpkeCiphertext, Report, ReportMetadata
    from privstats.services.dap.upload import _split_report

    rng = random.Random(7)
    rep = Report(
        ReportMetadata(os.urandom(16), 12345),
        os.urandom(64),
        HpkeCiphertext(3, os.urandom(32), os.urandom(300)),
        HpkeCiphertext(9, os.urandom(32), os.urandom(90)),
    )
    good = rep.encode()
    bodies = [good, good[:0], good + b"\x00"] + [good[: rng.randrange(len(good))] for _ in range(50)]
    for _ in range(300):  # flip one byte, mostly in the length fields near the front
        b = bytearray(good)
        b[rng.randrange(min(len(b), 140))] = rng.randrange(256)
        bodies.append(bytes(b))
    accepted = 0
    for body in bodies:
        try:
            ref = Report.decode(body)
        except DecodeError:
            ref = None
        got = _split_report(body)
        assert (got is None) == (ref is None)
        if ref is not None:
            accepted += 1
            rid, t, public, leader, helper_id, helper_ct, end = got
            assert (rid, t, public, leader) == (
                ref.metadata.report_id,
                ref.metadata.time,
                ref.public_share,
                ref.leader_share,
            )
            assert (helper_id, helper_ct) == (ref.helper_share.config_id, ref.helper_share.encode())
            assert body[:end] == ref.metadata.encode() + len(public).to_bytes(4, "big") + public
    assert accepted > 1  # the good body and flips of payload bytes parse
