"""Durable state of the leader and the helper (SQLAlchemy 2 Core; SQLite by default, PostgreSQL by URL).

Tables (one database per server process; ``party`` is implicit in which server owns it):

* ``secure_reports`` — one row per (task, report id): the unique key is the replay
  protection of both servers.  The leader keeps its decrypted share and the helper's
  still-encrypted share until the report is aggregated, then scrubs them; the helper
  keeps only the id and the job that verified it.
* ``secure_jobs`` — verification/aggregation jobs, keyed by a job id the leader picks:
  the stored messages make every server-to-server step idempotent (a retried step returns
  the stored answer and adds nothing twice).
* ``secure_batches`` — each server's running share of a batch's histogram, the counts of
  valid and invalid reports, its state (open / closed), the collection id and the
  released partial (noise drawn once, stored, never redrawn).
* ``secure_ledger`` — the budget charged by each batch's collection (unique per batch:
  charged once).
* ``secure_schema`` — schema version.

The tables live in the role's :class:`~privstats.services.storage.Storage` database (SQLite in
WAL mode with ``synchronous=FULL``, or PostgreSQL): a commit is durable before the server
acknowledges it.
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa

__all__ = ["SCHEMA_VERSION", "SecureStore"]

SCHEMA_VERSION = 1

metadata = sa.MetaData()

reports = sa.Table(
    "privstats_secure_reports",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("report_id", sa.LargeBinary(16), primary_key=True),
    sa.Column("state", sa.SmallInteger, nullable=False, default=0),  # 0 pending, 1 in job, 2 valid, 3 invalid
    sa.Column("job_id", sa.String(64), nullable=True),
    sa.Column("seq", sa.BigInteger, nullable=False, default=0),
    sa.Column("share", sa.LargeBinary, nullable=True),
    sa.Column("helper_ct", sa.LargeBinary, nullable=True),
)
sa.Index("ix_privstats_secure_reports_state", reports.c.task_id, reports.c.state, reports.c.seq)

jobs = sa.Table(
    "privstats_secure_jobs",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("job_id", sa.String(64), primary_key=True),
    sa.Column("batch_id", sa.Integer, nullable=False),
    sa.Column("state", sa.SmallInteger, nullable=False, default=0),  # 0 created, 1 initialised, 2 finished
    sa.Column("report_ids", sa.LargeBinary, nullable=False),
    sa.Column("seeds", sa.LargeBinary, nullable=True),  # helper: decrypted seeds
    sa.Column("replay", sa.LargeBinary, nullable=True),  # helper: 1 byte per report
    sa.Column("d_share", sa.LargeBinary, nullable=True),
    sa.Column("w_share", sa.LargeBinary, nullable=True),
    sa.Column("accept", sa.LargeBinary, nullable=True),
)

batches = sa.Table(
    "privstats_secure_batches",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("batch_id", sa.Integer, primary_key=True),
    sa.Column("state", sa.SmallInteger, nullable=False, default=0),  # 0 open, 1 closed (collected)
    sa.Column("total", sa.LargeBinary, nullable=False),
    sa.Column("n_valid", sa.BigInteger, nullable=False, default=0),
    sa.Column("n_invalid", sa.BigInteger, nullable=False, default=0),
    sa.Column("collection_id", sa.String(64), nullable=True),
    sa.Column("partial", sa.LargeBinary, nullable=True),
    sa.Column("other_partial", sa.LargeBinary, nullable=True),
)

ledger = sa.Table(
    "privstats_secure_ledger",
    metadata,
    sa.Column("task_id", sa.String(64), primary_key=True),
    sa.Column("batch_id", sa.Integer, primary_key=True),
    sa.Column("epsilon", sa.Float, nullable=False),
)

schema = sa.Table(
    "privstats_secure_schema",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
)


class SecureStore:
    """The secure roles' tables on a :class:`privstats.services.storage.Storage` (same database and
    engine: SQLite WAL + ``synchronous=FULL`` + ``BEGIN IMMEDIATE`` writers, or PostgreSQL).

    ``lock`` serialises this process's write transactions.
    """

    def __init__(self, storage):
        self.storage = storage
        self.engine = storage.engine
        self.lock = threading.RLock()
        self.migrate()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def transaction(self):
        return self.storage.transaction()

    def read(self):
        return self.storage.read()

    def migrate(self) -> None:
        with self.transaction() as conn:
            if self.dialect == "postgresql":
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(827364502)")
            metadata.create_all(conn)
            row = conn.execute(sa.select(schema.c.version).where(schema.c.id == 1)).first()
            if row is None:
                conn.execute(schema.insert().values(id=1, version=SCHEMA_VERSION))
            elif row[0] > SCHEMA_VERSION:
                raise RuntimeError(
                    f"secure schema version {row[0]} is newer than this privstats ({SCHEMA_VERSION})"
                )

    def insert_ignore(self, conn, table: sa.Table, rows: list[dict]) -> int:
        """Insert rows, skipping those whose primary key exists; returns the number inserted."""
        if not rows:
            return 0
        stmt: Any
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            stmt = pg_insert(table).on_conflict_do_nothing()
        else:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            stmt = sqlite_insert(table).on_conflict_do_nothing()
        res = conn.execute(stmt, rows)
        return int(res.rowcount) if res.rowcount is not None and res.rowcount >= 0 else 0


reports_table, jobs_table, batches_table, ledger_table = reports, jobs, batches, ledger
