"""Hostile input against real server processes: every bad request class is refused and stores nothing.

Also: 16 concurrent collections racing for a budget of 3 (SQLite and PostgreSQL) never overspend.
"""

from __future__ import annotations

import struct
import threading

import httpx
import numpy as np
import pytest
from conftest import free_port, make_task, role_storage

from privstats.client import Client, ServiceError
from privstats.privacy.ledger import BudgetExceededError
from privstats.services.tasks import load_secrets, load_task
from privstats.services.wire import pack_upload


@pytest.fixture
def collector(tmp_path, servers):
    port = free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "local",
        "--protocol",
        "grr",
        "--domain-size",
        "8",
        "--epsilon",
        "1",
        "--min-batch",
        "50",
        "--max-collections",
        "3",
        "--max-request-bytes",
        "100000",
        "--collector",
        f"http://127.0.0.1:{port}",
    )
    srv = servers("collector", task, f"sqlite:///{tmp_path / 'c.sqlite'}", port)
    return srv, task


def _stored(srv, task) -> int:
    """Reports stored, read where the operator reads it: the database (no count is served)."""
    from privstats.services.storage import Storage

    return Storage(srv.db).count_reports(load_task(task).id_bytes)


def test_collector_refuses_every_bad_request_class(collector):
    srv, task_path = collector
    t = load_task(task_path)
    up = load_secrets(task_path, "client").token("upload")
    col = load_secrets(task_path, "analyst").token("collect")
    client = Client(srv.url, task_path)
    good = client.encode(np.arange(40) % 8, rng=0)
    body = client.upload_body(good)
    url = f"{srv.url}/tasks/{t.task_id}/reports"

    def post(content: bytes, token: str | None = up, path: str = url) -> httpx.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return httpx.post(path, content=content, headers=headers, timeout=30)

    cases = {
        "missing token": (post(body, None), 401),
        "not a bearer token": (httpx.post(url, content=body, headers={"Authorization": f"Basic {up}"}), 401),
        "wrong token": (post(body, "x" * 43), 403),
        "collect token used to upload": (post(body, col), 403),
        "another task in the URL": (post(body, up, f"{srv.url}/tasks/{'ab' * 16}/reports"), 404),
        "another task in the body": (
            post(pack_upload(bytes(16), [r.report_id for r in good], [r.payload for r in good])),
            400,
        ),
        "bad magic": (post(b"XXXX" + body[4:]), 400),
        "empty body": (post(b""), 400),
        "truncated": (post(body[:-3]), 400),
        "trailing bytes": (post(body + b"\0"), 400),
        "wrong record size": (post(body[:20] + struct.pack("<II", 20, 40) + body[28:]), 400),
        "count larger than the body": (post(body[:20] + struct.pack("<II", 24, 41) + body[28:]), 400),
        "value out of the domain": (
            post(
                pack_upload(
                    t.id_bytes,
                    [bytes([i]) * 16 for i in range(3)],
                    [struct.pack("<q", v) for v in (1, 2, 99)],
                )
            ),
            400,
        ),
        "negative value": (post(pack_upload(t.id_bytes, [bytes([9]) * 16], [struct.pack("<q", -1)])), 400),
        "body over the size limit": (post(b"\0" * 200_000), 413),
    }
    for name, (resp, status) in cases.items():
        assert resp.status_code == status, f"{name}: {resp.status_code} {resp.text}"
        assert "error" in resp.json()["detail"], name
    assert _stored(srv, task_path) == 0  # nothing stored from any rejected request
    # the valid reports of the out-of-domain batch were not stored either: uploading them now counts them
    assert client.upload(good) == 40
    assert _stored(srv, task_path) == 40
    # a replay (same report ids, even with other payloads) is counted once
    replay = [type(r)(r.report_id, struct.pack("<q", 0)) for r in good]
    assert client.upload(replay) == 40
    assert _stored(srv, task_path) == 40
    # a collection below min_batch is refused and spends nothing
    with pytest.raises(ServiceError, match="batch_too_small"):
        client.collect()
    assert client.status()["collections"] == 0
    # collection endpoint: missing/wrong token, malformed JSON, bad collection id
    curl = f"{srv.url}/tasks/{t.task_id}/collect"
    assert httpx.post(curl, json={}).status_code == 401
    assert httpx.post(curl, json={}, headers={"Authorization": f"Bearer {up}"}).status_code == 403
    auth = {"Authorization": f"Bearer {col}"}
    assert httpx.post(curl, content=b"{not json", headers=auth).status_code == 400
    assert httpx.post(curl, json={"collection_id": "../../etc"}, headers=auth).status_code == 400
    assert httpx.post(curl, json=[1, 2], headers=auth).status_code == 400
    assert client.status()["collections"] == 0
    client.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sixteen_concurrent_collections_never_overspend(tmp_path, servers, backend, request):
    db = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path / 'c.sqlite'}"
    )
    port = free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "local",
        "--protocol",
        "oue",
        "--domain-size",
        "8",
        "--epsilon",
        "0.5",
        "--min-batch",
        "100",
        "--max-collections",
        "3",
        "--collector",
        f"http://127.0.0.1:{port}",
    )
    srv = servers("collector", task, db, port)
    with Client(srv.url, task) as c:
        c.submit(np.arange(500) % 8, rng=1)
    barrier = threading.Barrier(16)
    results: list[object] = [None] * 16

    def one(i: int) -> None:
        with Client(srv.url, task) as c:
            barrier.wait()
            try:
                results[i] = c.collect(f"race-{i}")
            except BudgetExceededError as exc:
                results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    released = [r for r in results if not isinstance(r, BudgetExceededError)]
    refused = [r for r in results if isinstance(r, BudgetExceededError)]
    assert len(released) == 3 and len(refused) == 13, results
    with Client(srv.url, task) as c:
        st = c.status()
        assert st["collections"] == 3
        assert st["budget_spent"]["epsilon"] == pytest.approx(1.5)
        # a retry of a released collection returns the same result and spends nothing
        idx = next(i for i, r in enumerate(results) if not isinstance(r, BudgetExceededError))
        again = c.collect(f"race-{idx}")
        np.testing.assert_array_equal(again.value, results[idx].value)
        assert c.status()["collections"] == 3


def test_analyzer_refuses_uploads_and_drops_garbage(tmp_path, servers):
    from privstats.services.wire import pack_batch

    sp, ap = free_port(), free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "shuffle",
        "--protocol",
        "single-rr",
        "--domain-size",
        "16",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--min-batch",
        "1000",
        "--shuffler",
        f"http://127.0.0.1:{sp}",
        "--analyzer",
        f"http://127.0.0.1:{ap}",
    )
    an = servers("analyzer", task, f"sqlite:///{tmp_path / 'a.sqlite'}", ap)
    sh = servers("shuffler", task, f"sqlite:///{tmp_path / 's.sqlite'}", sp)
    t = load_task(task)
    up = load_secrets(task, "client").token("upload")
    fwd = load_secrets(task, "shuffler").token("forward")
    client = Client(None, task)
    good = client.encode(np.zeros(10, dtype=int), rng=0)
    # the shuffler: a payload that is not the task's fixed size is refused, nothing stored
    bad = pack_upload(t.id_bytes, [b"z" * 16], [good[0].payload[:-1]])
    r = httpx.post(
        f"{sh.url}/tasks/{t.task_id}/reports", content=bad, headers={"Authorization": f"Bearer {up}"}
    )
    assert r.status_code == 400
    from privstats.services.shuffler import operator_counts
    from privstats.services.storage import Storage

    assert Storage(sh.db).count_reports(t.id_bytes) == 0
    assert set(client.status("shuffler")) == {"task_id", "role", "worker_running"}
    # the analyzer accepts batches only with the shuffler's forward token
    ct_size = len(good[0].payload)
    junk = [bytes([i]) * ct_size for i in range(3)]
    batch = pack_batch(t.id_bytes, b"b" * 16, 3, junk)
    burl = f"{an.url}/tasks/{t.task_id}/batches"
    assert httpx.post(burl, content=batch).status_code == 401
    assert httpx.post(burl, content=batch, headers={"Authorization": f"Bearer {up}"}).status_code == 403
    # a client's messages straight to the analyzer, bypassing the shuffler, are refused too
    assert httpx.post(
        f"{an.url}/tasks/{t.task_id}/reports",
        content=client.upload_body(good),
        headers={"Authorization": f"Bearer {up}"},
    ).status_code in (403, 404, 405)
    # undecryptable messages (forged by a client the shuffler cannot check) are dropped: the analyzer
    # counts 0 reports itself (not the 3 the header claims), below min_batch, so nothing is applied
    ok = httpx.post(burl, content=batch, headers={"Authorization": f"Bearer {fwd}"})
    assert ok.status_code == 200 and ok.json()["applied"] is False and "dropped" not in ok.json()
    st = operator_counts(role_storage(an.db, task, "analyzer"), t)
    assert st["n_reports"] == 0 and st["n_messages"] == 0
    assert not {"n_reports", "n_messages", "dropped_messages"} & set(client.status("analyzer"))
    # the same batch id again changes nothing
    assert (
        httpx.post(burl, content=batch, headers={"Authorization": f"Bearer {fwd}"}).json()["applied"] is False
    )
    # messages encrypted for another task do not open here
    from privstats.services.security import hpke_info, hpke_seal

    other = hpke_seal(t.hpke_public_key("analyzer"), b"\0" * 8, hpke_info("shuffle", bytes(16)))
    r = httpx.post(
        burl,
        content=pack_batch(t.id_bytes, b"c" * 16, 1, [other]),
        headers={"Authorization": f"Bearer {fwd}"},
    )
    assert r.json()["applied"] is False
    assert operator_counts(role_storage(an.db, task, "analyzer"), t)["n_reports"] == 0
    client.close()
