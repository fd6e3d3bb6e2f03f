"""A leader database made by an older privstats: migrated (shares in ``reports``) or refused clearly."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import BigInteger, Column, LargeBinary, MetaData, String, Table, insert

from privstats.services.dap.store import DapStore
from privstats.services.storage import Storage

TID = bytes(range(32))


def _old_reports(meta: MetaData) -> Table:
    """``reports`` as privstats made it before the shares moved to ``report_shares``."""
    return Table(
        "privstats_dap_reports",
        meta,
        Column("task_id", LargeBinary(32), primary_key=True),
        Column("report_id", LargeBinary(16), primary_key=True),
        Column("time", BigInteger, nullable=False),
        *(Column(c, LargeBinary, nullable=False) for c in ("public_share", "leader_share", "helper_ct")),
        Column("state", String(8), nullable=False, index=True),
        Column("job_id", LargeBinary(16), nullable=True, index=True),
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(tmp_path, request):
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_server")[1]()
    return f"sqlite:///{tmp_path}/old.db"


def test_old_leader_schema_is_migrated(db_url):
    from sqlalchemy import inspect

    st = Storage(db_url)
    meta = MetaData()
    old = _old_reports(meta)
    rows = [(os.urandom(16), state) for state in ("start", "job", "done")]
    with st.transaction() as conn:
        meta.create_all(conn)
        for rid, state in rows:
            shares = {c: rid + c.encode() for c in ("public_share", "leader_share", "helper_ct")}
            conn.execute(insert(old).values(task_id=TID, report_id=rid, time=7200, state=state, **shares))
    store = DapStore(st, TID, "leader", 2**61 - 1)
    with st.read() as conn:
        have = [c["name"] for c in inspect(conn).get_columns("privstats_dap_reports")]
        moved = conn.exec_driver_sql(
            "SELECT report_id, public_share, leader_share, helper_ct FROM privstats_dap_report_shares"
        ).all()
    assert not {"public_share", "leader_share", "helper_ct"} & set(have)
    # the shares of the reports not yet aggregated (start, job) moved; the done one's are gone
    want = {(rid, rid + b"public_share", rid + b"leader_share", rid + b"helper_ct") for rid, _ in rows[:2]}
    assert {tuple(bytes(x) for x in r) for r in moved} == want
    assert store.report_states() == {"start": 1, "job": 1, "done": 1}
    assert store.put_reports([(os.urandom(16), 7200, b"p", b"l", b"h")]) == ["new"]
    assert DapStore(st, TID, "leader", 2**61 - 1).report_states()["start"] == 2  # reopening: no-op


def test_unknown_schema_is_refused_clearly(tmp_path):
    st = Storage(f"sqlite:///{tmp_path}/odd.db")
    with st.transaction() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE privstats_dap_seen (task_id BLOB, report_id BLOB, seen_at INTEGER, "
            "PRIMARY KEY (task_id, report_id))"
        )
    with pytest.raises(RuntimeError, match="privstats_dap_seen was made by another privstats version"):
        DapStore(st, TID, "helper", 2**61 - 1)
