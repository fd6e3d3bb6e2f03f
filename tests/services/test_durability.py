"""SIGKILL while clients upload; restart on the same database; re-upload everything.

Every acknowledged report must be in the database, each counted exactly once, and the final n must
equal the number of distinct reports — on SQLite and on a real PostgreSQL server, for the collector
and for the shuffler (whose forwarded batches the analyzer must apply exactly once).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from conftest import SLOW, Server, free_port, make_task, role_storage

from privstats.client import Client, ServiceError
from privstats.services.storage import Storage

N = 100_000


def _upload_until_killed(client: Client, reports, acked: list, batch: int = 1000) -> None:
    """Upload batch by batch; remember the ids of every acknowledged batch; stop at the first failure."""
    for i in range(0, len(reports), batch):
        chunk = reports[i : i + batch]
        try:
            client.upload(chunk)
        except ServiceError:
            return
        acked.extend(r.report_id for r in chunk)


def _crash_and_recover(tmp_path, role: str, task, db: str, port: int, reports, other: Server | None = None):
    srv = Server(role, task, db, port).start()
    acked: list[bytes] = []
    client = Client(srv.url, task, retries=0, timeout=30)
    t = threading.Thread(target=_upload_until_killed, args=(client, reports, acked))
    t.start()
    deadline = time.monotonic() + 120
    while len(acked) < len(reports) // 4 and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.01)
    srv.kill()  # SIGKILL, mid-upload
    t.join(60)
    assert not t.is_alive()
    assert 0 < len(acked) < len(reports), "the kill should land in the middle of the uploads"
    # every acknowledged report is in the database
    st = Storage(db)
    stored = set()
    for body_chunk in _ids(st, client.task.id_bytes):
        stored.update(body_chunk)
    st.close()
    missing = set(acked) - stored
    assert not missing, f"{len(missing)} acknowledged reports lost"
    # restart on the same database and re-upload everything (retries on)
    srv2 = Server(role, task, db, port).start()
    with Client(srv2.url, task) as c2:
        assert c2.upload(reports) == len(reports)
        assert c2.upload(reports[:5000]) == 5000  # and a replay on top
    return srv2, len(acked)


def _ids(st: Storage, tid: bytes):
    from sqlalchemy import select

    from privstats.services.storage import reports as table

    with st.read() as conn:
        yield [bytes(r[0]) for r in conn.execute(select(table.c.report_id).where(table.c.task_id == tid))]


def _collector_crash(tmp_path, db: str):
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
        "16",
        "--epsilon",
        "1",
        "--min-batch",
        "1000",
        "--max-collections",
        "2",
        "--collector",
        f"http://127.0.0.1:{port}",
    )
    values = np.random.default_rng(7).integers(0, 16, N)
    reports = Client(None, task).encode(values, rng=8)
    srv, n_acked = _crash_and_recover(tmp_path, "collector", task, db, port, reports)
    try:
        with Client(srv.url, task) as c:
            assert "n_reports" not in c.status()  # counts are read in the database, not served
            est = c.collect()
        assert est.n == N
        # the incremental state equals a full re-aggregation of the stored reports: each counted once
        from privstats.services.collector import Collector
        from privstats.services.tasks import load_task

        col = Collector(load_task(task), role_storage(db, task, "collector"))
        assert col.rebuild_state() == col.state()
        assert Storage(db).count_reports(load_task(task).id_bytes) == N
        oracle = c.protocol
        assert col.state() == oracle.aggregate(
            {"value": np.array([np.frombuffer(r.payload, "<i8")[0] for r in reports])}
        )
    finally:
        assert srv.stop() == 0
    return n_acked


def test_collector_sigkill_sqlite(tmp_path):
    _collector_crash(tmp_path, f"sqlite:///{tmp_path / 'c.sqlite'}")


def test_collector_sigkill_postgres(tmp_path, postgres_url):
    _collector_crash(tmp_path, postgres_url)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_shuffler_sigkill(tmp_path, servers, backend, request):
    n = N if SLOW else 10_000
    if backend == "postgres":
        createdb = request.getfixturevalue("postgres_server")[1]
        sdb, adb = createdb(), createdb()
    else:
        sdb, adb = f"sqlite:///{tmp_path / 's.sqlite'}", f"sqlite:///{tmp_path / 'a.sqlite'}"
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
    servers("analyzer", task, adb, ap)
    values = np.random.default_rng(9).integers(0, 16, n)
    reports = Client(None, task).encode(values, rng=10)
    srv, _ = _crash_and_recover(tmp_path, "shuffler", task, sdb, sp, reports)
    try:
        from privstats.services.shuffler import operator_counts

        with Client(None, task) as c:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                st = operator_counts(role_storage(adb, task, "analyzer"), c.task)
                if st["n_reports"] >= n:
                    break
                time.sleep(0.5)
            time.sleep(1.0)  # anything re-forwarded would land now
            st = operator_counts(role_storage(adb, task, "analyzer"), c.task)
            assert st["n_reports"] == n and st["n_messages"] == n and st["dropped_messages"] == 0
            sh = operator_counts(role_storage(sdb, task, "shuffler"), c.task)
            assert sh["pending_reports"] == 0 and sh["pending_batches"] == 0 and sh["stored_reports"] == n
            est = c.collect()
        assert est.n == n
        true = np.bincount(values, minlength=16)
        assert np.all(np.abs(est.value - true) < 5 * est.stderr)
    finally:
        assert srv.stop() == 0
