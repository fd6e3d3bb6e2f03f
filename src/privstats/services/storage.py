"""Durable storage shared by every service role: SQLAlchemy 2 Core over SQLite or PostgreSQL.

Tables (``privstats_`` prefix; one database may hold many tasks and roles):

* ``schema_version`` — the applied migration number (:data:`MIGRATIONS`, applied in order at open).
* ``reports`` — ``(task_id, report_id)`` primary key, the compact binary ``body`` and the ``batch_id``
  a report was released in (shuffler) — the uniqueness constraint is the replay protection: an
  insert of a known report id does nothing (``INSERT … ON CONFLICT DO NOTHING``), so re-uploads
  count once.  No timestamp, address or order is stored.
* ``aggregates`` — per ``(task_id, name)`` a mergeable aggregator state (bytes, behind an
  HMAC-SHA256 of the task, name, count and state keyed by ``Storage(key=...)``: an edited state or
  count is refused with :class:`~privstats.privacy.integrity.IntegrityError`) and its report
  count, updated in the *same transaction* as the reports it folds (Janus keeps batch aggregations
  beside reports in the same way), so state and reports never disagree after a crash.
* ``budget`` — the task's total guarantee and the ledger of spends; :meth:`Storage.spend` locks the
  task's budget row (``SELECT … FOR UPDATE`` on PostgreSQL; SQLite write transactions start with
  ``BEGIN IMMEDIATE``, one writer at a time) and replays the ledger before recording a spend, so
  concurrent collections can never overspend.
* ``collections`` — the released result per client-chosen ``collection_id`` (an idempotent retry
  of a collection returns the same result and spends nothing).
* ``batches`` — server-to-server batches: their id, status and report count (shuffler → analyzer
  forwarding), so a repeated batch is applied once.  (The secure model's DAP aggregators keep their
  own tables on the same engine: :mod:`privstats.services.dap.store`.)

Durability: SQLite runs in WAL mode with ``synchronous=FULL`` (a commit is on disk when it
returns); PostgreSQL commits are durable by default.  Services acknowledge after the commit.

>>> import os, tempfile
>>> st = Storage(f"sqlite:///{os.path.join(tempfile.mkdtemp(), 'db.sqlite')}")
>>> with st.transaction() as conn:
...     sorted(st.insert_reports(conn, bytes(16), [b"a" * 16, b"b" * 16, b"a" * 16], [b"x", b"y", b"z"]))
[b'aaaaaaaaaaaaaaaa', b'bbbbbbbbbbbbbbbb']
>>> st.count_reports(bytes(16))
2
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    select,
    update,
)

from privstats.privacy.guarantees import Guarantee, guarantee_from_dict
from privstats.privacy.ledger import BudgetExceededError, BudgetLedger

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "BudgetExceededError", "Storage", "default_db_url"]

metadata = MetaData()

schema_version = Table("privstats_schema_version", metadata, Column("version", Integer, primary_key=True))


def _task_table(name: str, *columns: Column, **options: Any) -> Table:
    """``privstats_<name>``, keyed first by the task id (one database may hold many tasks)."""
    task_id = Column("task_id", LargeBinary(16), primary_key=True)
    return Table(f"privstats_{name}", metadata, task_id, *columns, **options)


reports = _task_table(
    "reports",
    Column("report_id", LargeBinary(16), primary_key=True),
    Column("body", LargeBinary, nullable=False),
    Column("batch_id", LargeBinary(16), nullable=True),
    sqlite_with_rowid=False,  # one B-tree clustered on the primary key (1.3x faster inserts)
)
aggregates = _task_table(
    "aggregates",
    Column("name", String(64), primary_key=True),
    Column("n_reports", BigInteger, nullable=False),
    Column("state", LargeBinary, nullable=False),
)
budget = _task_table("budget", Column("ledger", Text, nullable=False))  # BudgetLedger.to_json()
collections = _task_table(
    "collections",
    Column("collection_id", String(64), primary_key=True),
    Column("result", Text, nullable=False),
)
batches = _task_table(
    "batches",
    Column("batch_id", LargeBinary(16), primary_key=True),
    Column("role", String(32), nullable=False),
    Column("status", String(16), nullable=False),  # 'pending' | 'done'
    Column("n_reports", BigInteger, nullable=False),
)


def _m1(conn: Connection) -> None:
    metadata.create_all(conn, tables=[reports, aggregates, budget, collections, batches])


def _m2(conn: Connection) -> None:
    # raw DDL: an Index object would attach itself to the shared metadata and be created by _m1 next time
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS privstats_reports_batch ON privstats_reports (task_id, batch_id)"
    )


#: ordered migrations; migration i (1-based) brings the schema to version i
MIGRATIONS: list[Callable[[Connection], None]] = [_m1, _m2]
SCHEMA_VERSION = len(MIGRATIONS)


def default_db_url(role: str, task_id: str, directory: str | os.PathLike = ".") -> str:
    """SQLite file ``privstats-<role>-<task id prefix>.sqlite`` in ``directory``."""
    path = os.path.abspath(os.path.join(directory, f"privstats-{role}-{task_id[:12]}.sqlite"))
    return f"sqlite:///{path}"


class Storage:
    """One database (SQLite file or PostgreSQL) with the privstats schema, migrated on open.

    ``url``: an SQLAlchemy URL, ``sqlite:///path`` or ``postgresql+psycopg://user@host:port/db``.
    """

    def __init__(self, url: str, *, pool_size: int = 8, key: bytes | None = None):
        if not isinstance(url, str) or "://" not in url:
            raise ValueError(
                f"db url must be an SQLAlchemy URL (sqlite:///FILE or postgresql+psycopg://...), got {url!r}"
            )
        self.url = url
        # the MAC key of the budget ledger and the aggregates: the role's integrity key (privstats serve),
        # else the owner's default key
        self.key = key
        self._key_bytes: bytes | None = None
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            self.engine: Engine = create_engine(
                url,
                connect_args={"timeout": 60, "check_same_thread": False},
                pool_size=pool_size,
                max_overflow=16,
            )
            _sqlite_events(self.engine)
        elif url.startswith("postgresql"):
            self.engine = create_engine(url, pool_size=pool_size, max_overflow=16, pool_pre_ping=True)
        else:
            raise ValueError(f"db url must select sqlite or postgresql, got {url.split('://')[0]!r}")
        self.migrate()

    # ---- schema ---------------------------------------------------------------------------------------
    def migrate(self) -> int:
        """Apply pending migrations (each in one transaction with its version bump); returns the version."""
        with self.transaction() as conn:
            if self.is_sqlite is False:
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(827364501)")  # one migrator at a time
            metadata.create_all(conn, tables=[schema_version])
            current = conn.execute(select(func.max(schema_version.c.version))).scalar() or 0
            if current > SCHEMA_VERSION:
                raise RuntimeError(
                    f"database schema version {current} is newer than this privstats "
                    f"({SCHEMA_VERSION}); upgrade privstats"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version - 1](conn)
                conn.execute(schema_version.insert().values(version=version))
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        with self.read() as conn:
            return int(conn.execute(select(func.max(schema_version.c.version))).scalar() or 0)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); commits on exit, rolls back on error."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only snapshot (plain ``BEGIN`` on SQLite: does not block writers)."""
        with self.engine.connect() as conn:
            conn.execution_options(privstats_read=True)
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    # ---- reports --------------------------------------------------------------------------------------
    def _insert(self) -> Any:
        """The dialect's ``insert`` (both have ``on_conflict_do_nothing`` / ``on_conflict_do_update``)."""
        from sqlalchemy.dialects import postgresql, sqlite

        return sqlite.insert if self.is_sqlite else postgresql.insert

    def insert_reports(
        self, conn: Connection, task_id: bytes, report_ids: Sequence[bytes], bodies: Sequence[bytes]
    ) -> set[bytes]:
        """Insert reports whose id is new; returns the set of ids actually inserted (replays: not).

        A report id repeated inside one call is inserted once (its first body).  SQLite: one
        ``executemany`` of ``INSERT … ON CONFLICT DO NOTHING`` inside a savepoint; when the number of
        rows changed shows replays, the savepoint is rolled back and only the unknown ids are
        inserted (exact, since the immediate transaction holds the write lock).  PostgreSQL:
        ``INSERT … ON CONFLICT DO NOTHING RETURNING report_id`` (exact under concurrent inserts).
        """
        if len(report_ids) != len(bodies):
            raise ValueError("report_ids and bodies must have the same length")
        first: dict[bytes, bytes] = {}
        for r, b in zip(report_ids, bodies, strict=True):
            first.setdefault(bytes(r), b)
        if not first:
            return set()
        if self.is_sqlite:
            return self._insert_sqlite(conn, task_id, first)
        raw = conn.connection.driver_connection
        if raw is not None and type(raw).__module__.startswith("psycopg"):
            # one statement over two arrays: far fewer round trips than executemany
            with raw.cursor() as cur:
                cur.execute(
                    "INSERT INTO privstats_reports (task_id, report_id, body) "
                    "SELECT %s, u.r, u.b FROM unnest(%s::bytea[], %s::bytea[]) AS u(r, b) "
                    "ON CONFLICT DO NOTHING RETURNING report_id",
                    (task_id, list(first), list(first.values())),
                )
                return {bytes(x[0]) for x in cur.fetchall()}
        stmt = (
            self._insert()(reports)
            .on_conflict_do_nothing(index_elements=["task_id", "report_id"])
            .returning(reports.c.report_id)
        )
        rows = [{"task_id": task_id, "report_id": r, "body": b} for r, b in first.items()]
        return {bytes(r[0]) for r in conn.execute(stmt, rows).all()}

    _SQLITE_INSERT = (
        "INSERT INTO privstats_reports (task_id, report_id, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
    )

    def _insert_sqlite(self, conn: Connection, task_id: bytes, first: dict[bytes, bytes]) -> set[bytes]:
        raw = conn.connection.driver_connection
        assert raw is not None
        cur = raw.cursor()
        try:
            cur.execute("SAVEPOINT privstats_insert")
            before = raw.total_changes
            cur.executemany(self._SQLITE_INSERT, [(task_id, r, b) for r, b in first.items()])
            if raw.total_changes - before == len(first):
                cur.execute("RELEASE privstats_insert")
                return set(first)
            cur.execute("ROLLBACK TO privstats_insert")
            ids = list(first)
            known: set[bytes] = set()
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                q = (
                    "SELECT report_id FROM privstats_reports WHERE task_id = ? AND report_id IN ("
                    + ",".join("?" * len(chunk))
                    + ")"
                )
                known.update(bytes(x[0]) for x in cur.execute(q, [task_id, *chunk]))
            new = [r for r in ids if r not in known]
            cur.executemany(self._SQLITE_INSERT, [(task_id, r, first[r]) for r in new])
            cur.execute("RELEASE privstats_insert")
            return set(new)
        finally:
            cur.close()

    def count_reports(self, task_id: bytes, *, pending_only: bool = False) -> int:
        """Stored reports of a task (``pending_only``: not yet released in a batch)."""
        q = select(func.count()).select_from(reports).where(reports.c.task_id == task_id)
        if pending_only:
            q = q.where(reports.c.batch_id.is_(None))
        with self.read() as conn:
            return int(conn.execute(q).scalar() or 0)

    def iter_report_bodies(
        self, task_id: bytes, *, chunk: int = 100_000, batch_id: bytes | None = None
    ) -> Iterator[list[bytes]]:
        """Report bodies of a task (or of one batch) in chunks, ordered by report id (keyset paging)."""
        last = b""
        while True:
            q = (
                select(reports.c.report_id, reports.c.body)
                .where(reports.c.task_id == task_id)
                .where(reports.c.report_id > last)
                .order_by(reports.c.report_id)
                .limit(chunk)
            )
            if batch_id is not None:
                q = q.where(reports.c.batch_id == batch_id)
            with self.read() as conn:
                rows = conn.execute(q).all()
            if not rows:
                return
            last = bytes(rows[-1][0])
            yield [bytes(r[1]) for r in rows]

    def assign_batch(
        self, conn: Connection, task_id: bytes, batch_id: bytes, role: str, limit: int | None = None
    ) -> int:
        """Put the pending reports of a task (at most ``limit``) into a new batch (status 'pending');
        returns its size."""
        stmt = update(reports).where(reports.c.task_id == task_id).where(reports.c.batch_id.is_(None))
        if limit is not None:
            pick = (
                select(reports.c.report_id)
                .where(reports.c.task_id == task_id)
                .where(reports.c.batch_id.is_(None))
                .limit(int(limit))
            )
            stmt = stmt.where(reports.c.report_id.in_(pick.scalar_subquery()))
        n = conn.execute(stmt.values(batch_id=batch_id)).rowcount
        conn.execute(
            batches.insert().values(
                task_id=task_id, batch_id=batch_id, role=role, status="pending", n_reports=n
            )
        )
        return int(n)

    def batch_bodies(self, conn: Connection, task_id: bytes, batch_id: bytes) -> list[bytes]:
        q = select(reports.c.body).where(reports.c.task_id == task_id).where(reports.c.batch_id == batch_id)
        return [bytes(r[0]) for r in conn.execute(q)]

    def finish_batch(self, conn: Connection, task_id: bytes, batch_id: bytes, *, erase_bodies: bool) -> None:
        """Mark a batch done; ``erase_bodies`` empties its reports' bodies (their ids stay: replays)."""
        conn.execute(
            update(batches)
            .where(batches.c.task_id == task_id)
            .where(batches.c.batch_id == batch_id)
            .values(status="done")
        )
        if erase_bodies:
            conn.execute(
                update(reports)
                .where(reports.c.task_id == task_id)
                .where(reports.c.batch_id == batch_id)
                .values(body=b"")
            )

    def pending_batches(self, task_id: bytes, role: str) -> list[tuple[bytes, int]]:
        """``(batch_id, n_reports)`` of batches this role created and has not finished (crash recovery)."""
        q = (
            select(batches.c.batch_id, batches.c.n_reports)
            .where(batches.c.task_id == task_id)
            .where(batches.c.role == role)
            .where(batches.c.status == "pending")
        )
        with self.read() as conn:
            return [(bytes(r[0]), int(r[1])) for r in conn.execute(q)]

    def record_batch(
        self, conn: Connection, task_id: bytes, batch_id: bytes, role: str, n_reports: int
    ) -> bool:
        """Record a received batch as done; False (nothing recorded) if this batch id was seen before."""
        stmt = (
            self._insert()(batches)
            .on_conflict_do_nothing(index_elements=["task_id", "batch_id"])
            .returning(batches.c.batch_id)
        )
        got = conn.execute(
            stmt,
            [
                {
                    "task_id": task_id,
                    "batch_id": batch_id,
                    "role": role,
                    "status": "done",
                    "n_reports": int(n_reports),
                }
            ],
        ).all()
        return bool(got)

    # ---- aggregates -----------------------------------------------------------------------------------
    def get_aggregate(
        self, conn: Connection, task_id: bytes, name: str, *, for_update: bool = False
    ) -> tuple[int, bytes] | None:
        """``(n_reports, state bytes)`` or None; ``for_update`` locks the row (PostgreSQL)."""
        q = (
            select(aggregates.c.n_reports, aggregates.c.state)
            .where(aggregates.c.task_id == task_id)
            .where(aggregates.c.name == name)
        )
        if for_update and not self.is_sqlite:
            q = q.with_for_update()
        row = conn.execute(q).first()
        return None if row is None else (int(row[0]), self._open(task_id, name, int(row[0]), bytes(row[1])))

    def _tag(self, task_id: bytes, name: str, n_reports: int, state: bytes) -> bytes:
        from privstats.privacy.integrity import mac, resolve_key

        if self._key_bytes is None:
            self._key_bytes = resolve_key(self.key)
        data = b"\0".join((task_id, name.encode(), str(int(n_reports)).encode(), state))
        return bytes.fromhex(mac(self._key_bytes, "aggregate", data))

    def _seal(self, task_id: bytes, name: str, n_reports: int, state: bytes) -> bytes:
        """The stored form of an aggregate: its HMAC (over task, name, n and state) then the state."""
        return self._tag(task_id, name, n_reports, state) + state

    def _open(self, task_id: bytes, name: str, n_reports: int, stored: bytes) -> bytes:
        """The state of a stored aggregate; IntegrityError if its MAC is missing or does not verify
        (the row's state, its report count or its name was edited)."""
        import hmac

        from privstats.privacy.integrity import IntegrityError

        tag, state = stored[:32], stored[32:]
        if len(stored) < 32 or not hmac.compare_digest(tag, self._tag(task_id, name, n_reports, state)):
            raise IntegrityError(
                f"aggregate {name!r} of task {task_id.hex()}: its MAC does not verify (the stored state "
                "or its count was edited, or it was written with another key); refusing it"
            )
        return state

    def put_aggregate(
        self, conn: Connection, task_id: bytes, name: str, n_reports: int, state: bytes
    ) -> None:
        """Insert or replace an aggregate (call inside the transaction that changed it)."""
        stmt = self._insert()(aggregates).values(
            task_id=task_id,
            name=name,
            n_reports=int(n_reports),
            state=self._seal(task_id, name, n_reports, state),
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["task_id", "name"],
            set_={"n_reports": stmt.excluded.n_reports, "state": stmt.excluded.state},
        )
        conn.execute(stmt)

    def ensure_aggregate(self, task_id: bytes, name: str, initial: bytes) -> None:
        """Create the aggregate row (n=0, ``initial`` state) if absent, so later updates can lock it."""
        with self.transaction() as conn:
            stmt = self._insert()(aggregates).values(
                task_id=task_id, name=name, n_reports=0, state=self._seal(task_id, name, 0, initial)
            )
            conn.execute(stmt.on_conflict_do_nothing(index_elements=["task_id", "name"]))

    # ---- budget ---------------------------------------------------------------------------------------
    def ensure_budget(self, task_id: bytes, total: Guarantee) -> None:
        """Create the task's ledger with ``total`` if absent (an existing ledger keeps its spends)."""
        with self.transaction() as conn:
            stmt = self._insert()(budget).values(
                task_id=task_id, ledger=BudgetLedger(total).to_json(self.key)
            )
            conn.execute(stmt.on_conflict_do_nothing(index_elements=["task_id"]))

    def ledger(
        self, conn: Connection | None = None, task_id: bytes = b"", *, for_update: bool = False
    ) -> BudgetLedger:
        """The task's ledger (``for_update`` locks its row until the transaction ends, PostgreSQL)."""
        q = select(budget.c.ledger).where(budget.c.task_id == task_id)
        if for_update and not self.is_sqlite:
            q = q.with_for_update()
        if conn is None:
            with self.read() as c:
                row = c.execute(q).first()
        else:
            row = conn.execute(q).first()
        if row is None:
            raise KeyError(f"no budget ledger for task {task_id.hex()}")
        return BudgetLedger.from_json(row[0], key=self.key)

    def spend(self, conn: Connection, task_id: bytes, guarantee: Guarantee, label: str) -> BudgetLedger:
        """Record a spend inside ``conn``'s transaction, or raise BudgetExceededError (nothing recorded).

        The row lock (PostgreSQL) or the immediate write transaction (SQLite) makes read-check-write
        atomic across processes.
        """
        led = self.ledger(conn, task_id, for_update=True)
        led.spend(guarantee, label)
        conn.execute(update(budget).where(budget.c.task_id == task_id).values(ledger=led.to_json(self.key)))
        return led

    # ---- collections ----------------------------------------------------------------------------------
    def get_collection(self, conn: Connection | None, task_id: bytes, collection_id: str) -> dict | None:
        q = (
            select(collections.c.result)
            .where(collections.c.task_id == task_id)
            .where(collections.c.collection_id == collection_id)
        )
        if conn is None:
            with self.read() as c:
                row = c.execute(q).first()
        else:
            row = conn.execute(q).first()
        return None if row is None else json.loads(row[0])

    def put_collection(self, conn: Connection, task_id: bytes, collection_id: str, result: dict) -> None:
        conn.execute(
            collections.insert().values(
                task_id=task_id, collection_id=collection_id, result=json.dumps(result, allow_nan=False)
            )
        )


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        # new files only (an existing database keeps its page size): 16 KiB pages hold a ~19 KB DAP
        # report in 2 pages instead of 5, which cut the leader's CPU for storing one by ~40 us
        cur.execute("PRAGMA page_size=16384")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache per connection
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # readers take a snapshot (WAL); writers take the write lock up front, so a read-check-write
        # (the budget ledger, an aggregate) cannot interleave with another writer's
        conn.exec_driver_sql(
            "BEGIN" if conn.get_execution_options().get("privstats_read") else "BEGIN IMMEDIATE"
        )


def guarantee_of(d: dict) -> Guarantee:
    """``guarantee_from_dict`` re-exported for role modules."""
    return guarantee_from_dict(d)
