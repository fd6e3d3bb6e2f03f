"""The compact binary upload format shared by clients and servers.

An upload body is::

    b"PSU1" | task id (16 bytes) | record size (u32 LE) | record count (u32 LE) | records

with ``count`` fixed-size records, each ``report id (16 bytes) || payload``.  The payload layout is
fixed by the task (:func:`record_layout`), so servers parse a whole request with one
``numpy.frombuffer`` and reject any request whose sizes do not add up.

* Local model: the payload is one report of the protocol, its columns
  (``privstats.engine.format.column_specs``) packed little-endian in order (GRR: one int64;
  OUE: ``ceil(d/8)`` bytes; OLH: seed u64 + bucket i64; ...).
* Shuffle model: the payload is the user's ``m`` messages, each HPKE-encrypted to the analyzer
  separately (``enc || ciphertext`` of a fixed-size plaintext), ``m`` fixed by the protocol.

>>> body = pack_upload(bytes(16), [b"r" * 16, b"s" * 16], [b"ab", b"cd"])
>>> tid, ids, payloads = unpack_upload(body, record_size=18)
>>> tid == bytes(16), ids, payloads
(True, [b'rrrrrrrrrrrrrrrr', b'ssssssssssssssss'], [b'ab', b'cd'])
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BATCH_MAGIC",
    "HEADER_SIZE",
    "UPLOAD_MAGIC",
    "RecordLayout",
    "WireError",
    "pack_batch",
    "pack_upload",
    "record_layout",
    "unpack_batch",
    "unpack_upload",
]

UPLOAD_MAGIC = b"PSU1"
BATCH_MAGIC = b"PSB1"
HEADER_SIZE = 4 + 16 + 4 + 4


class WireError(ValueError):
    """A malformed, truncated or foreign request body (the server answers 400)."""


def pack_upload(task_id: bytes, report_ids: Sequence[bytes], payloads: Sequence[bytes]) -> bytes:
    """An upload body; every payload must have the same length."""
    if len(report_ids) != len(payloads):
        raise ValueError("report_ids and payloads must have the same length")
    if not payloads:
        return UPLOAD_MAGIC + task_id + struct.pack("<II", 16, 0)
    size = 16 + len(payloads[0])
    parts = [UPLOAD_MAGIC, task_id, struct.pack("<II", size, len(payloads))]
    for rid, p in zip(report_ids, payloads, strict=True):
        if len(rid) != 16 or len(p) != size - 16:
            raise ValueError("report ids must be 16 bytes and payloads of equal length")
        parts.append(rid)
        parts.append(p)
    return b"".join(parts)


def unpack_upload(
    body: bytes, *, record_size: int | None = None, max_records: int = 1 << 20
) -> tuple[bytes, list[bytes], list[bytes]]:
    """``(task id, report ids, payloads)``; :class:`WireError` on anything malformed."""
    tid, ids, rows = unpack_upload_array(body, record_size=record_size, max_records=max_records)
    return tid, ids, [r.tobytes() for r in rows]


def unpack_upload_array(
    body: bytes, *, record_size: int | None = None, max_records: int = 1 << 20
) -> tuple[bytes, list[bytes], np.ndarray]:
    """As :func:`unpack_upload` with the payloads as a ``(count, size)`` uint8 array (no copies)."""
    if len(body) < HEADER_SIZE or body[:4] != UPLOAD_MAGIC:
        raise WireError("body is not a privstats upload (bad magic or too short)")
    task_id = bytes(body[4:20])
    size, count = struct.unpack_from("<II", body, 20)
    if record_size is not None and size != record_size:
        raise WireError(f"records must be {record_size} bytes for this task, got {size}")
    if size < 16:
        raise WireError("record size is smaller than a report id")
    if count > max_records:
        raise WireError(f"too many records ({count} > {max_records})")
    if len(body) != HEADER_SIZE + size * count:
        raise WireError(
            f"body is truncated or has trailing bytes: {count} records of {size} bytes need "
            f"{HEADER_SIZE + size * count} bytes, got {len(body)}"
        )
    arr = np.frombuffer(body, dtype=np.uint8, offset=HEADER_SIZE).reshape(count, size)
    ids = np.ascontiguousarray(arr[:, :16]).view("V16").ravel().tolist()
    return task_id, ids, arr[:, 16:]


@dataclass(frozen=True)
class RecordLayout:
    """How one report's payload packs the protocol's columns (a numpy structured dtype)."""

    dtype: np.dtype

    @property
    def size(self) -> int:
        return int(self.dtype.itemsize)

    def pack(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        """Columns (one row per report) -> ``(n, size)`` uint8 rows."""
        n = len(next(iter(columns.values())))
        out = np.zeros(n, dtype=self.dtype)
        for name in self.dtype.names or ():
            out[name] = np.asarray(columns[name])
        return out.view(np.uint8).reshape(n, self.size)

    def unpack(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``(n, size)`` uint8 rows -> columns in the protocol's native dtypes."""
        rows = np.ascontiguousarray(rows, dtype=np.uint8)
        if rows.ndim != 2 or rows.shape[1] != self.size:
            raise WireError(f"report payloads must be {self.size} bytes")
        rec = rows.view(self.dtype).ravel()
        return {
            name: rec[name].astype(self.dtype[name].base.newbyteorder("="), copy=False)
            for name in self.dtype.names or ()
        }


def record_layout(oracle) -> RecordLayout:
    """The payload layout of ``oracle``'s reports (local model) or of its message rows (shuffle model)."""
    from privstats.engine.format import column_specs

    specs = column_specs(oracle)
    fields = [(name, np.dtype(s["dtype"]).newbyteorder("<"), tuple(s["shape"])) for name, s in specs.items()]
    return RecordLayout(np.dtype(fields, align=False))


def pack_batch(task_id: bytes, batch_id: bytes, n_reports: int, messages: Sequence[bytes]) -> bytes:
    """A server-to-server batch of equal-size opaque messages (shuffler -> analyzer)."""
    size = len(messages[0]) if messages else 0
    if any(len(m) != size for m in messages):
        raise ValueError("messages must have equal length")
    return b"".join(
        [BATCH_MAGIC, task_id, batch_id, struct.pack("<QII", n_reports, size, len(messages)), *messages]
    )


def unpack_batch(body: bytes) -> tuple[bytes, bytes, int, np.ndarray]:
    """``(task id, batch id, n_reports, (count, size) uint8 messages)``; WireError if malformed."""
    head = 4 + 16 + 16 + 16
    if len(body) < head or body[:4] != BATCH_MAGIC:
        raise WireError("body is not a privstats batch")
    n_reports, size, count = struct.unpack_from("<QII", body, 36)
    if len(body) != head + size * count:
        raise WireError("batch body is truncated or has trailing bytes")
    msgs = np.frombuffer(body, dtype=np.uint8, offset=head).reshape(count, size)
    return bytes(body[4:20]), bytes(body[20:36]), int(n_reports), msgs
