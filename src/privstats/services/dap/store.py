"""Durable state of the DAP aggregators (SQLAlchemy Core on the foundation's SQLite/PostgreSQL engine).

Tables (``privstats_dap_`` prefix, created on open beside the foundation schema):

* ``reports`` (leader) — one row per accepted report, primary key ``(task_id, report_id)``: the
  insert-or-ignore on that key is upload replay protection.  Holds the report time and ``state``
  ``start`` → ``job`` (assigned to an aggregation job) → ``done`` | ``failed``.
* ``report_shares`` (leader) — the public share, the leader's *decrypted* input share and the
  helper's still-sealed ciphertext of each report not yet aggregated, inserted with its ``reports``
  row and deleted in the transaction that finishes its job (kept apart so that state changes do not
  rewrite the ~20 KB of shares).
* ``jobs`` — aggregation jobs.  Leader: ``active`` jobs carry a lease (``lease_until``) so a
  restarted (or second) leader picks up jobs whose holder died; ``done`` once its outcome is
  committed.  Helper: the request's SHA-256 and the response it sent, so a retried job is answered
  from the database and counted once.
* ``seen`` (helper) — every report id the helper has prepared, with its job: a report id seen under
  another job is refused as ``report_replayed``.
* ``buckets`` — per role and time bucket (a multiple of ``time_precision``): the aggregate share
  (field vector), report count and checksum (XOR of SHA-256 of report ids), updated in the same
  transaction as the job whose reports it folds — so state and reports never disagree after a crash.
* ``collected`` — the batch intervals whose aggregate share a role has released; no report whose
  time falls in one is accepted or aggregated afterwards (the cut of a collection).
* ``collections`` (leader) — collection jobs: interval, state, the leader's sealed noisy share, the
  noisy report count and the final encoded ``Collection``.
* ``agg_shares`` (helper) — the sealed answer to each ``AggregateShareReq``, so a retry gets the same
  noise (noise is drawn once per batch).

A database made by an older privstats is migrated on open when its layout is a known one (the
leader's shares kept in ``reports``), and refused with a clear error otherwise (see ``_migrate``).

Every acknowledgement (upload 201, helper job 201, aggregate share 200) is sent after its
transaction committed.  On PostgreSQL an upload holds a shared advisory lock and a collection's
cut the exclusive one, so no upload can commit into an interval after it was cut.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    LargeBinary,
    MetaData,
    String,
    Table,
    and_,
    func,
    select,
    update,
)

from privstats.services.storage import Storage

__all__ = ["DapStore", "decode_vec", "encode_vec", "report_checksum"]

meta = MetaData()
_T = "privstats_dap_"


def _table(name: str, *columns: Column) -> Table:
    """A DAP table: every one is per task, so ``task_id`` leads its primary key."""
    return Table(_T + name, meta, Column("task_id", LargeBinary(32), primary_key=True), *columns)


def _key(name: str, type_: Any) -> Column:
    return Column(name, type_, primary_key=True)


def _required(name: str, type_: Any) -> Column:
    return Column(name, type_, nullable=False)


def _optional(name: str, type_: Any) -> Column:
    return Column(name, type_, nullable=True)


reports = _table(
    "reports",
    _key("report_id", LargeBinary(16)),
    _required("time", BigInteger),
    Column("state", String(8), nullable=False, index=True),
    Column("job_id", LargeBinary(16), nullable=True, index=True),
)
# The shares (~20 KB a report for Prio3Histogram(1024)) live apart from the state that changes: an
# update of a row rewrites all of it, overflow pages included.
report_shares = _table(
    "report_shares",
    _key("report_id", LargeBinary(16)),
    *(_required(c, LargeBinary) for c in ("public_share", "leader_share", "helper_ct")),
)
jobs = _table(
    "jobs",
    _key("role", String(8)),
    _key("job_id", LargeBinary(16)),
    _required("state", String(8)),
    Column("lease_until", BigInteger, nullable=False, default=0),
    _optional("request_hash", LargeBinary(32)),
    _optional("response", LargeBinary),
)
seen = _table("seen", _key("report_id", LargeBinary(16)), _required("job_id", LargeBinary(16)))
buckets = _table(
    "buckets",
    _key("role", String(8)),
    _key("start", BigInteger),
    _required("agg_share", LargeBinary),
    _required("report_count", BigInteger),
    _required("checksum", LargeBinary(32)),
)
collected = _table(
    "collected", _key("role", String(8)), _key("start", BigInteger), _required("duration", BigInteger)
)
collections = _table(
    "collections",
    _key("job_id", LargeBinary(16)),
    *(_required(c, BigInteger) for c in ("start", "duration")),
    _required("state", String(8)),  # start | released | finished | failed | deleted
    _optional("leader_ct", LargeBinary),
    _optional("report_count", BigInteger),  # noisy
    _optional("result", LargeBinary),
    _optional("error", String(64)),
)
agg_shares = _table(
    "agg_shares",
    _key("start", BigInteger),
    _required("duration", BigInteger),
    _required("request_hash", LargeBinary(32)),
    _required("response", LargeBinary),
)

_LOCK_KEY = 827364777


def report_checksum(report_ids: Iterable[bytes]) -> bytes:
    """DAP's batch checksum: XOR of SHA-256 of each report id (32 bytes)."""
    acc = 0
    for rid in report_ids:
        acc ^= int.from_bytes(hashlib.sha256(rid).digest(), "big")
    return acc.to_bytes(32, "big")


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(32, "big")


def _width(modulus: int) -> int:
    return (int(modulus).bit_length() + 7) // 8


def encode_vec(values: Iterable[int], modulus: int) -> bytes:
    """Field elements as fixed-width little-endian integers (VDAF-08's field encoding)."""
    w = _width(modulus)
    return b"".join(int(v).to_bytes(w, "little") for v in values)


def decode_vec(data: bytes, modulus: int) -> list[int]:
    """Inverse of :func:`encode_vec`; ValueError on a bad length or an element ≥ modulus."""
    w = _width(modulus)
    if len(data) % w:
        raise ValueError(f"field vector of {len(data)} bytes is not a multiple of {w}")
    out = [int.from_bytes(data[i : i + w], "little") for i in range(0, len(data), w)]
    if any(v >= modulus for v in out):
        raise ValueError("field vector element out of range")
    return out


_Row = tuple[bytes, int, bytes, bytes, bytes]  # report id, time, public share, leader share, helper ct


def _first_of(items: list[_Row], ids: set[bytes]) -> list[_Row]:
    """The first item of each report id in ``ids`` (an id twice in one batch: the second is a replay)."""
    out: dict[bytes, _Row] = {}
    for it in items:
        if it[0] in ids:
            out.setdefault(it[0], it)
    return list(out.values())


def _outcomes(items: list[_Row], labels: list[str], new: set[bytes]) -> list[str]:
    """Per item: its label if it has one, else ``"new"`` (first of a new id) or ``"replay"``."""
    out, new = [], set(new)
    for (rid, *_), label in zip(items, labels, strict=True):
        if label:
            out.append(label)
        elif rid in new:
            out.append("new")
            new.discard(rid)  # the same id twice in one batch: the second is a replay
        else:
            out.append("replay")
    return out


def _cursor(conn: Connection) -> Any:
    """SQLite: the DB-API cursor of ``conn``'s connection (same transaction)."""
    return conn.connection.driver_connection.cursor()  # type: ignore[union-attr]


def _chunks(ids: list[bytes], size: int = 500) -> list[list[bytes]]:
    return [ids[k : k + size] for k in range(0, len(ids), size)]


def _marks(part: list) -> str:
    return ",".join("?" * len(part))


def add_vec(a: list[int], b: list[int], modulus: int) -> list[int]:
    if len(a) != len(b):
        raise ValueError(f"aggregate shares of different lengths ({len(a)} vs {len(b)})")
    return [(x + y) % modulus for x, y in zip(a, b, strict=True)]


_OLD_SHARE_COLUMNS = ("public_share", "leader_share", "helper_ct")


def _migrate(conn: Connection) -> None:
    """Bring DAP tables made by an older privstats to the current layout, or refuse clearly.

    One older layout is known: the leader's shares in ``reports`` itself (before ``report_shares``).
    Its reports not yet aggregated get their shares copied into ``report_shares`` and the three
    columns are dropped.  Any other difference is a :class:`RuntimeError` naming the table and the
    columns, instead of a constraint error on the first upload.
    """
    from sqlalchemy import inspect

    insp = inspect(conn)
    have = {c["name"] for c in insp.get_columns(reports.name)}
    if set(_OLD_SHARE_COLUMNS) <= have:
        cols = ", ".join(("task_id", "report_id", *_OLD_SHARE_COLUMNS))
        conn.exec_driver_sql(
            f"INSERT INTO {report_shares.name} ({cols}) SELECT {cols} FROM {reports.name} "
            "WHERE state IN ('start', 'job')"
        )
        for col in _OLD_SHARE_COLUMNS:
            conn.exec_driver_sql(f"ALTER TABLE {reports.name} DROP COLUMN {col}")
        insp = inspect(conn)
    for table in meta.sorted_tables:
        have = {c["name"] for c in insp.get_columns(table.name)}
        want = {c.name for c in table.columns}
        if have != want:
            raise RuntimeError(
                f"the DAP table {table.name} was made by another privstats version (columns "
                f"{sorted(have)}, expected {sorted(want)}); use a new database for this version, or "
                "finish the old one's collections with the version that made it"
            )


class DapStore:
    """The DAP tables over a foundation :class:`~privstats.services.storage.Storage`."""

    def __init__(self, storage: Storage, task_id: bytes, role: str, modulus: int):
        self.st, self.task_id, self.role, self.modulus = storage, bytes(task_id), role, int(modulus)
        with storage.transaction() as conn:
            if not storage.is_sqlite:
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(827364502)")
            meta.create_all(conn)
            _migrate(conn)

    # ---- shared -----------------------------------------------------------------------------------
    def lock(self, conn: Connection, exclusive: bool) -> None:
        """Upload (shared) vs cut (exclusive) lock on PostgreSQL; SQLite writers are serial anyway."""
        if not self.st.is_sqlite:
            fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
            conn.exec_driver_sql(f"SELECT {fn}({_LOCK_KEY})")

    def collected_intervals(self, conn: Connection) -> list[tuple[int, int]]:
        """``(start, duration)`` of every interval this role has released (or cut)."""
        c = collected.c
        rows = conn.execute(
            select(c.start, c.duration).where(and_(c.task_id == self.task_id, c.role == self.role))
        ).all()
        return [(int(a), int(b)) for a, b in rows]

    def is_collected(self, conn: Connection, t: int) -> bool:
        """Does time ``t`` fall in an interval this role has released?"""
        c = collected.c
        q = select(func.count()).where(
            and_(c.task_id == self.task_id, c.role == self.role, c.start <= t, c.start + c.duration > t)
        )
        return bool(conn.execute(q).scalar())

    def overlaps_collected(self, conn: Connection, start: int, duration: int) -> tuple[bool, bool]:
        """``(same interval already collected, overlaps another collected interval)``."""
        c = collected.c
        rows = conn.execute(
            select(c.start, c.duration).where(and_(c.task_id == self.task_id, c.role == self.role))
        ).all()
        same = any(s == start and d == duration for s, d in rows)
        other = any(s < start + duration and start < s + d and (s, d) != (start, duration) for s, d in rows)
        return same, other

    def mark_collected(self, conn: Connection, start: int, duration: int) -> None:
        ins = self.st._insert()(collected).values(
            task_id=self.task_id, role=self.role, start=start, duration=duration
        )
        conn.execute(ins.on_conflict_do_nothing(index_elements=["task_id", "role", "start"]))

    def unmark_collected(self, conn: Connection, start: int, duration: int) -> None:
        """Undo :meth:`mark_collected` of exactly ``[start, start + duration)`` (a cut whose collection
        was refused before anything was released)."""
        c = collected.c
        conn.execute(
            collected.delete().where(
                and_(
                    c.task_id == self.task_id,
                    c.role == self.role,
                    c.start == start,
                    c.duration == duration,
                )
            )
        )

    def add_to_buckets(self, conn: Connection, additions: dict[int, tuple[list[int], int, bytes]]) -> None:
        """Fold ``{bucket start: (agg share, count, checksum)}`` into the buckets (inside ``conn``)."""
        b = buckets.c
        for start, (share, count, checksum) in sorted(additions.items()):
            where = and_(b.task_id == self.task_id, b.role == self.role, b.start == start)
            q = select(b.agg_share, b.report_count, b.checksum).where(where)
            if not self.st.is_sqlite:
                q = q.with_for_update()
            row = conn.execute(q).first()
            if row is None:
                conn.execute(
                    buckets.insert().values(
                        task_id=self.task_id,
                        role=self.role,
                        start=start,
                        agg_share=encode_vec(share, self.modulus),
                        report_count=count,
                        checksum=checksum,
                    )
                )
            else:
                merged = add_vec(decode_vec(row[0], self.modulus), list(share), self.modulus)
                conn.execute(
                    update(buckets)
                    .where(where)
                    .values(
                        agg_share=encode_vec(merged, self.modulus),
                        report_count=row[1] + count,
                        checksum=_xor(row[2], checksum),
                    )
                )

    def batch(self, conn: Connection, start: int, duration: int, length: int) -> tuple[list[int], int, bytes]:
        """The merged ``(agg share, report count, checksum)`` of the buckets in ``[start, start+duration)``."""
        b = buckets.c
        rows = conn.execute(
            select(b.agg_share, b.report_count, b.checksum).where(
                and_(
                    b.task_id == self.task_id,
                    b.role == self.role,
                    b.start >= start,
                    b.start < start + duration,
                )
            )
        ).all()
        share, count, checksum = [0] * length, 0, bytes(32)
        for enc, n, cs in rows:
            share = add_vec(share, decode_vec(enc, self.modulus), self.modulus)
            count, checksum = count + int(n), _xor(checksum, cs)
        return share, count, checksum

    # ---- leader: reports and jobs ---------------------------------------------------------------------
    def put_report(
        self, rid: bytes, t: int, public_share: bytes, leader_share: bytes, helper_ct: bytes
    ) -> str:
        """Insert a report; ``"new"``, ``"replay"`` (known id: ignored) or ``"collected"`` (refused)."""
        return self.put_reports([(rid, t, public_share, leader_share, helper_ct)])[0]

    def put_reports(self, items: list[_Row]) -> list[str]:
        """:meth:`put_report` for many reports in *one* transaction (one commit: group commit)."""
        c = collected.c
        with self.st.transaction() as conn:
            if self.st.is_sqlite:
                return self._put_reports_sqlite(conn, items)
            self.lock(conn, exclusive=False)
            cut = conn.execute(
                select(c.start, c.duration).where(and_(c.task_id == self.task_id, c.role == self.role))
            ).all()
            labels = ["collected" if any(s <= it[1] < s + d for s, d in cut) else "" for it in items]
            new = self._insert_reports(conn, [it for it, lab in zip(items, labels, strict=True) if not lab])
            return _outcomes(items, labels, new)

    def _put_reports_sqlite(self, conn: Connection, items: list[_Row]) -> list[str]:
        """SQLite: the same statements on the DB-API cursor of ``conn``'s transaction.

        Uploads commit in small groups, and SQLAlchemy's per-statement work (~0.6 ms a transaction)
        cost more than SQLite's; the writer lock (``BEGIN IMMEDIATE``) makes the check-then-insert
        exact: the ids present before are the replays."""
        cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        tid = self.task_id
        cut = cur.execute(
            f"SELECT start, duration FROM {collected.name} WHERE task_id = ? AND role = ?", (tid, self.role)
        ).fetchall()
        labels = ["collected" if any(s <= it[1] < s + d for s, d in cut) else "" for it in items]
        todo = [it for it, lab in zip(items, labels, strict=True) if not lab]
        rids = list({it[0] for it in todo})
        known: set[bytes] = set()
        for k in range(0, len(rids), 500):
            part = rids[k : k + 500]
            q = f"SELECT report_id FROM {reports.name} WHERE task_id = ? AND report_id IN ({','.join('?' * len(part))})"
            known.update(bytes(r[0]) for r in cur.execute(q, (tid, *part)))
        new = set(rids) - known
        fresh = _first_of(todo, new)
        if fresh:
            cur.executemany(
                f"INSERT INTO {reports.name} (task_id, report_id, time, state) VALUES (?, ?, ?, 'start')",
                [(tid, rid, t) for rid, t, *_ in fresh],
            )
            cur.executemany(
                f"INSERT INTO {report_shares.name} (task_id, report_id, public_share, leader_share, "
                "helper_ct) VALUES (?, ?, ?, ?, ?)",
                [(tid, rid, *shares) for rid, _, *shares in fresh],
            )
        return _outcomes(items, labels, new)

    def _insert_reports(self, conn: Connection, items: list[_Row]) -> set[bytes]:
        """PostgreSQL: insert-or-ignore the reports ``items`` (and their shares); the ids that were new."""
        if not items:
            return set()
        tid = self.task_id
        added: set[bytes] = set()
        ins = self.st._insert()
        for k in range(0, len(items), 200):  # one multi-row INSERT ... RETURNING per 200 reports
            part = items[k : k + 200]
            rows = [dict(task_id=tid, report_id=rid, time=t, state="start") for rid, t, *_ in part]
            stmt = ins(reports).values(rows).on_conflict_do_nothing(index_elements=["task_id", "report_id"])
            ids = {bytes(r[0]) for r in conn.execute(stmt.returning(reports.c.report_id))}
            shares = [
                dict(task_id=tid, report_id=rid, public_share=ps, leader_share=ls, helper_ct=ct)
                for rid, _, ps, ls, ct in _first_of(part, ids)
            ]
            if shares:
                conn.execute(report_shares.insert(), shares)
            added |= ids
        return added

    def known_reports(self, conn: Connection, rids: list[bytes]) -> list[bytes]:
        """The ids among ``rids`` already stored."""
        r = reports.c
        out: list[bytes] = []
        for k in range(0, len(rids), 500):
            q = select(r.report_id).where(and_(r.task_id == self.task_id, r.report_id.in_(rids[k : k + 500])))
            out.extend(bytes(x[0]) for x in conn.execute(q))
        return out

    def create_jobs(self, max_size: int, max_jobs: int = 8, min_size: int = 1) -> int:
        """Group unassigned reports into new aggregation jobs (random 16-byte ids) of at most
        ``max_size`` and at least ``min_size`` reports; returns how many."""
        import os

        r = reports.c
        made = 0
        with self.st.transaction() as conn:
            rows = conn.execute(
                select(r.report_id)
                .where(and_(r.task_id == self.task_id, r.state == "start"))
                .order_by(r.time, r.report_id)
                .limit(max_size * max_jobs)
            ).all()
            ids = [row[0] for row in rows]
            for i in range(0, len(ids), max_size):
                if len(ids) - i < min_size:
                    break
                job_id = os.urandom(16)
                conn.execute(
                    jobs.insert().values(
                        task_id=self.task_id, role=self.role, job_id=job_id, state="active", lease_until=0
                    )
                )
                if self.st.is_sqlite:  # the DB-API cursor: SQLAlchemy compiles each IN list anew
                    part = ids[i : i + max_size]
                    for chunk in _chunks(part):
                        _cursor(conn).execute(
                            f"UPDATE {reports.name} SET state = 'job', job_id = ? WHERE task_id = ? "
                            f"AND report_id IN ({_marks(chunk)})",
                            (job_id, self.task_id, *chunk),
                        )
                    made += 1
                    continue
                conn.execute(
                    update(reports)
                    .where(and_(r.task_id == self.task_id, r.report_id.in_(ids[i : i + max_size])))
                    .values(state="job", job_id=job_id)
                )
                made += 1
        return made

    def acquire_job(self, lease_seconds: int) -> bytes | None:
        """An active job whose lease has expired, now leased to the caller (None if there is none)."""
        j = jobs.c
        now = int(time.time())
        with self.st.transaction() as conn:
            q = (
                select(j.job_id)
                .where(
                    and_(
                        j.task_id == self.task_id,
                        j.role == self.role,
                        j.state == "active",
                        j.lease_until < now,
                    )
                )
                .limit(1)
            )
            if not self.st.is_sqlite:
                q = q.with_for_update(skip_locked=True)
            row = conn.execute(q).first()
            if row is None:
                return None
            conn.execute(
                update(jobs)
                .where(and_(j.task_id == self.task_id, j.role == self.role, j.job_id == row[0]))
                .values(lease_until=now + lease_seconds)
            )
            return bytes(row[0])

    def job_reports(self, job_id: bytes) -> list[Any]:
        """``(report id, time, public share, leader's input share, helper's ciphertext)`` of a job."""
        r, sh = reports.c, report_shares.c
        with self.st.read() as conn:
            if self.st.is_sqlite:  # the DB-API cursor: no SQLAlchemy row objects for ~20 KB rows
                return (
                    _cursor(conn)
                    .execute(
                        f"SELECT r.report_id, r.time, s.public_share, s.leader_share, s.helper_ct "
                        f"FROM {reports.name} AS r JOIN {report_shares.name} AS s "
                        "ON s.task_id = r.task_id AND s.report_id = r.report_id "
                        "WHERE r.task_id = ? AND r.job_id = ? ORDER BY r.report_id",
                        (self.task_id, job_id),
                    )
                    .fetchall()
                )
            return list(
                conn.execute(
                    select(r.report_id, r.time, sh.public_share, sh.leader_share, sh.helper_ct)
                    .join_from(
                        reports, report_shares, and_(sh.task_id == r.task_id, sh.report_id == r.report_id)
                    )
                    .where(and_(r.task_id == self.task_id, r.job_id == job_id))
                    .order_by(r.report_id)
                ).all()
            )

    def finish_job(
        self, job_id: bytes, done: list[bytes], failed: list[bytes], additions: dict[int, tuple]
    ) -> None:
        """Commit a job's outcome: report states, bucket sums and the job's state, atomically (the
        reports' shares, needed no more, are deleted)."""
        r, j, sh = reports.c, jobs.c, report_shares.c
        with self.st.transaction() as conn:
            state = conn.execute(
                select(j.state).where(
                    and_(j.task_id == self.task_id, j.role == self.role, j.job_id == job_id)
                )
            ).scalar()
            if state != "active":
                return  # another holder finished it
            if self.st.is_sqlite:
                # Free the shares' pages without overwriting them with zeros first (Debian's SQLite
                # defaults to secure_delete=ON, which writes each ~20 KB share again): a leader's
                # share alone is uniformly random, and the pages are reused by later uploads.
                conn.exec_driver_sql("PRAGMA secure_delete=FAST")
            for ids, st in ((done, "done"), (failed, "failed")):
                if self.st.is_sqlite:  # the DB-API cursor: SQLAlchemy compiles each IN list anew
                    self._finish_reports_sqlite(conn, ids, st)
                    continue
                for k in range(0, len(ids), 500):
                    conn.execute(
                        update(reports)
                        .where(and_(r.task_id == self.task_id, r.report_id.in_(ids[k : k + 500])))
                        .values(state=st)
                    )
                    conn.execute(
                        report_shares.delete().where(
                            and_(sh.task_id == self.task_id, sh.report_id.in_(ids[k : k + 500]))
                        )
                    )
            self.add_to_buckets(conn, additions)
            conn.execute(
                update(jobs)
                .where(and_(j.task_id == self.task_id, j.role == self.role, j.job_id == job_id))
                .values(state="done")
            )

    def _finish_reports_sqlite(self, conn: Connection, ids: list[bytes], state: str) -> None:
        """SQLite part of :meth:`finish_job`: reports ``ids`` to ``state``, their shares deleted."""
        cur = _cursor(conn)
        for part in _chunks(ids):
            where = f"WHERE task_id = ? AND report_id IN ({_marks(part)})"
            cur.execute(f"UPDATE {reports.name} SET state = ? {where}", (state, self.task_id, *part))
            cur.execute(f"DELETE FROM {report_shares.name} {where}", (self.task_id, *part))

    def pending_in(self, start: int, duration: int) -> int:
        """Reports in ``[start, start+duration)`` not yet aggregated (state start or job)."""
        r = reports.c
        with self.st.read() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(
                        and_(
                            r.task_id == self.task_id,
                            r.state.in_(("start", "job")),
                            r.time >= start,
                            r.time < start + duration,
                        )
                    )
                ).scalar()
                or 0
            )

    def report_states(self) -> dict[str, int]:
        r = reports.c
        with self.st.read() as conn:
            rows = conn.execute(
                select(r.state, func.count()).where(r.task_id == self.task_id).group_by(r.state)
            ).all()
        return {str(s): int(n) for s, n in rows}

    # ---- helper: jobs ---------------------------------------------------------------------------------
    def helper_job(self, conn: Connection, job_id: bytes) -> tuple[bytes, bytes] | None:
        j = jobs.c
        row = conn.execute(
            select(j.request_hash, j.response).where(
                and_(j.task_id == self.task_id, j.role == self.role, j.job_id == job_id)
            )
        ).first()
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    def seen_jobs(self, conn: Connection, rids: list[bytes]) -> dict[bytes, bytes]:
        """``{report id: job id}`` for the ids among ``rids`` the helper has already prepared."""
        s = seen.c
        out: dict[bytes, bytes] = {}
        if self.st.is_sqlite:  # the DB-API cursor: SQLAlchemy compiles each IN list anew (~20 µs a report)
            cur = _cursor(conn)
            for part in _chunks(rids):
                q = f"SELECT report_id, job_id FROM {seen.name} WHERE task_id = ? AND report_id IN ({_marks(part)})"
                out.update({bytes(a): bytes(b) for a, b in cur.execute(q, (self.task_id, *part))})
            return out
        for k in range(0, len(rids), 500):
            rows = conn.execute(
                select(s.report_id, s.job_id).where(
                    and_(s.task_id == self.task_id, s.report_id.in_(rids[k : k + 500]))
                )
            ).all()
            out.update({bytes(a): bytes(b) for a, b in rows})
        return out

    def commit_helper_job(
        self, conn: Connection, job_id: bytes, request_hash: bytes, response: bytes, rids: list[bytes],
        additions: dict[int, tuple],
    ) -> None:  # fmt: skip
        if rids and self.st.is_sqlite:
            _cursor(conn).executemany(
                f"INSERT INTO {seen.name} (task_id, report_id, job_id) VALUES (?, ?, ?)",
                [(self.task_id, r, job_id) for r in rids],
            )
        elif rids:
            conn.execute(
                seen.insert(), [{"task_id": self.task_id, "report_id": r, "job_id": job_id} for r in rids]
            )
        self.add_to_buckets(conn, additions)
        conn.execute(
            jobs.insert().values(
                task_id=self.task_id,
                role=self.role,
                job_id=job_id,
                state="done",
                lease_until=0,
                request_hash=request_hash,
                response=response,
            )
        )

    # ---- collections (leader) and aggregate shares (helper) -------------------------------------------
    def get_collection(self, conn: Connection | None, job_id: bytes) -> dict | None:
        c = collections.c
        q = select(collections).where(and_(c.task_id == self.task_id, c.job_id == job_id))
        if conn is None:
            with self.st.read() as cn:
                row = cn.execute(q).mappings().first()
        else:
            row = conn.execute(q).mappings().first()
        return None if row is None else dict(row)

    def insert_collection(self, conn: Connection, job_id: bytes, start: int, duration: int) -> None:
        conn.execute(
            collections.insert().values(
                task_id=self.task_id, job_id=job_id, start=start, duration=duration, state="start"
            )
        )

    def update_collection(self, conn: Connection | None, job_id: bytes, **values: Any) -> None:
        c = collections.c
        stmt = update(collections).where(and_(c.task_id == self.task_id, c.job_id == job_id)).values(**values)
        if conn is None:
            with self.st.transaction() as cn:
                cn.execute(stmt)
        else:
            conn.execute(stmt)

    def refused_collections(self, conn: Connection, start: int, duration: int) -> int:
        """Collection jobs refused below the minimum batch (deleted ones too) whose interval overlaps
        ``[start, start + duration)``: a wider or shifted interval asks about the same reports."""
        c = collections.c
        q = select(func.count()).where(
            and_(
                c.task_id == self.task_id,
                c.start < start + duration,
                start < c.start + c.duration,
                c.error == "invalidBatchSize",
            )
        )
        return int(conn.execute(q).scalar() or 0)

    def open_collections(self) -> list[bytes]:
        c = collections.c
        with self.st.read() as conn:
            rows = conn.execute(
                select(c.job_id).where(and_(c.task_id == self.task_id, c.state.in_(("start", "released"))))
            ).all()
        return [bytes(r[0]) for r in rows]

    def get_agg_share(self, conn: Connection, start: int) -> tuple[int, bytes, bytes] | None:
        a = agg_shares.c
        row = conn.execute(
            select(a.duration, a.request_hash, a.response).where(
                and_(a.task_id == self.task_id, a.start == start)
            )
        ).first()
        return None if row is None else (int(row[0]), bytes(row[1]), bytes(row[2]))

    def put_agg_share(
        self, conn: Connection, start: int, duration: int, request_hash: bytes, response: bytes
    ) -> None:
        conn.execute(
            agg_shares.insert().values(
                task_id=self.task_id,
                start=start,
                duration=duration,
                request_hash=request_hash,
                response=response,
            )
        )
