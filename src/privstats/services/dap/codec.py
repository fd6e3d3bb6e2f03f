"""DAP-09 messages (draft-ietf-ppm-dap-09, TLS presentation language) and their binary encodings.

Each message is a frozen dataclass with ``encode() -> bytes`` and ``decode(data) -> message``;
``decode`` refuses trailing bytes, truncation and out-of-range enums with :class:`DecodeError`
(a ``ValueError``), which the servers answer with an ``invalidMessage`` problem document.  Only the
``time_interval`` query type is implemented; VDAF payloads (public shares, input shares, prep
shares, prep messages, aggregate shares) stay opaque byte strings here.

>>> md = ReportMetadata(bytes(16), 1_700_000_000)
>>> ReportMetadata.decode(md.encode()) == md
True
>>> Interval.decode(Interval(3600, 7200).encode())
Interval(start=3600, duration=7200)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self, TypeVar

__all__ = [
    "AGGREGATE_SHARE",
    "AGGREGATE_SHARE_REQ",
    "AGG_JOB_INIT_REQ",
    "AGG_JOB_RESP",
    "COLLECTION",
    "COLLECT_REQ",
    "HPKE_CONFIG_LIST",
    "REPORT",
    "TIME_INTERVAL",
    "AggregateShareAad",
    "AggregateShareReq",
    "AggregationJobInitReq",
    "AggregationJobResp",
    "Collection",
    "CollectionReq",
    "DecodeError",
    "HpkeCiphertext",
    "HpkeConfig",
    "InputShareAad",
    "Interval",
    "PingPong",
    "PlaintextInputShare",
    "PrepareInit",
    "PrepareResp",
    "Report",
    "ReportMetadata",
    "ReportShare",
    "Role",
    "batch_selector",
    "decode_hpke_config_list",
    "encode_hpke_config_list",
    "encode_job_init_req",
]

DAP_VERSION = "dap-09"
HPKE_CONFIG_LIST = "application/dap-hpke-config-list"
REPORT = "application/dap-report"
AGG_JOB_INIT_REQ = "application/dap-aggregation-job-init-req"
AGG_JOB_RESP = "application/dap-aggregation-job-resp"
AGGREGATE_SHARE_REQ = "application/dap-aggregate-share-req"
AGGREGATE_SHARE = "application/dap-aggregate-share"
COLLECT_REQ = "application/dap-collect-req"
COLLECTION = "application/dap-collection"

TIME_INTERVAL = 1  # QueryType; fixed_size (2) is not implemented


class Role:
    """DAP roles (the byte that enters HPKE info strings)."""

    COLLECTOR, CLIENT, LEADER, HELPER = 0, 1, 2, 3


class DecodeError(ValueError):
    """A DAP message that does not parse (truncated, trailing bytes, bad enum, bad length)."""


class Reader:
    """Cursor over a byte string; every read checks the remaining length.

    Sub-readers (:meth:`sub32`, :meth:`sub16`) view their parent's bytes without copying them; only
    the values read out are copied (a 512-report aggregation job is ~10 MB)."""

    def __init__(self, data: bytes | memoryview):
        if not isinstance(data, memoryview):
            data = memoryview(data if isinstance(data, bytes) else bytes(data))
        self.data, self.pos = data, 0

    def _span(self, n: int) -> int:
        """Advance by ``n`` bytes; returns the start of the span."""
        pos = self.pos
        if n < 0 or pos + n > len(self.data):
            raise DecodeError(f"message truncated at byte {pos} (needs {n} more)")
        self.pos = pos + n
        return pos

    def take(self, n: int) -> bytes:
        pos = self._span(n)
        return self.data[pos : pos + n].tobytes()

    def u8(self) -> int:
        return int(self.data[self._span(1)])

    def u16(self) -> int:
        return int(_U16.unpack_from(self.data, self._span(2))[0])

    def u32(self) -> int:
        return int(_U32.unpack_from(self.data, self._span(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack_from(self.data, self._span(8))[0])

    def opaque16(self) -> bytes:
        return self.take(self.u16())

    def opaque32(self) -> bytes:
        return self.take(self.u32())

    def sub32(self) -> Reader:
        """A reader over a 32-bit-length-prefixed vector (of structures)."""
        n = self.u32()
        pos = self._span(n)
        return Reader(self.data[pos : pos + n])

    def sub16(self) -> Reader:
        n = self.u16()
        pos = self._span(n)
        return Reader(self.data[pos : pos + n])

    @property
    def done(self) -> bool:
        return self.pos == len(self.data)

    def end(self) -> None:
        if not self.done:
            raise DecodeError(f"{len(self.data) - self.pos} trailing bytes")


_U16, _U32, _U64 = struct.Struct(">H"), struct.Struct(">I"), struct.Struct(">Q")


_M = TypeVar("_M", bound="Message")


def u8(v: int) -> bytes:
    return struct.pack(">B", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def opaque16(b: bytes) -> bytes:
    if len(b) >= 1 << 16:
        raise ValueError("opaque<0..2^16-1> value too long")
    return u16(len(b)) + bytes(b)


def opaque32(b: bytes) -> bytes:
    if len(b) >= 1 << 32:
        raise ValueError("opaque<0..2^32-1> value too long")
    return u32(len(b)) + bytes(b)


def _fixed(n: int) -> tuple[Callable[[bytes], bytes], Callable[[Reader], bytes]]:
    def enc(b: bytes) -> bytes:
        if len(b) != n:
            raise ValueError(f"expected {n} bytes, got {len(b)}")
        return bytes(b)

    return enc, lambda r: r.take(n)


# Field kinds of a message's WIRE: (encode value -> bytes, read value from a Reader)
_KINDS: dict[str, tuple[Callable[[Any], bytes], Callable[[Reader], Any]]] = {
    "u8": (u8, Reader.u8),
    "u16": (u16, Reader.u16),
    "u64": (u64, Reader.u64),
    "opaque16": (opaque16, Reader.opaque16),
    "opaque32": (opaque32, Reader.opaque32),
    "id16": _fixed(16),
    "id32": _fixed(32),
    "selector": (lambda iv: batch_selector(iv), lambda r: read_batch_selector(r)),  # time interval
}


class Message:
    """A structure that reads itself from a :class:`Reader`; ``decode`` reads one whole message.

    A plain structure only lists its fields' wire kinds in ``WIRE`` (in field order: a key of
    ``_KINDS`` or a nested :class:`Message` class); ``encode`` and ``read`` follow from it.
    """

    WIRE: ClassVar[tuple[str | type[Message], ...]] = ()

    def encode(self) -> bytes:
        out = []
        for kind, f in zip(self.WIRE, fields(self), strict=True):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            out.append(value.encode() if not isinstance(kind, str) else _KINDS[kind][0](value))
        return b"".join(out)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(*(kind.read(r) if not isinstance(kind, str) else _KINDS[kind][1](r) for kind in cls.WIRE))

    @classmethod
    def decode(cls, data: bytes) -> Self:
        r = Reader(data)
        out = cls.read(r)
        r.end()
        return out


def _read_all(r: Reader, item: type[_M]) -> list[_M]:
    """Read ``item`` structures until ``r`` (a length-prefixed vector) is exhausted."""
    out = []
    while not r.done:
        out.append(item.read(r))
    return out


@dataclass(frozen=True)
class Interval(Message):
    """``[start, start + duration)`` in seconds since the epoch."""

    start: int
    duration: int

    WIRE = ("u64", "u64")


@dataclass(frozen=True)
class HpkeConfig(Message):
    """An aggregator's (or the collector's) HPKE public key and its algorithm ids."""

    id: int
    kem_id: int
    kdf_id: int
    aead_id: int
    public_key: bytes

    WIRE = ("u8", "u16", "u16", "u16", "opaque16")


def encode_hpke_config_list(configs: list[HpkeConfig]) -> bytes:
    """``HpkeConfig configs<1..2^16-1>`` — the body of ``GET /hpke_config``."""
    return opaque16(b"".join(c.encode() for c in configs))


def decode_hpke_config_list(data: bytes) -> list[HpkeConfig]:
    r = Reader(data)
    out = _read_all(r.sub16(), HpkeConfig)
    r.end()
    if not out:
        raise DecodeError("empty HpkeConfigList")
    return out


@dataclass(frozen=True)
class HpkeCiphertext(Message):
    config_id: int
    enc: bytes
    payload: bytes

    WIRE = ("u8", "opaque16", "opaque32")

    @classmethod
    def read(cls, r: Reader) -> HpkeCiphertext:  # hot path: one per uploaded report and per job report
        return cls(r.u8(), r.opaque16(), r.opaque32())


@dataclass(frozen=True)
class ReportMetadata(Message):
    report_id: bytes
    time: int

    WIRE = ("id16", "u64")

    @classmethod
    def read(cls, r: Reader) -> ReportMetadata:
        return cls(r.take(16), r.u64())


@dataclass(frozen=True)
class Report(Message):
    """A client's upload (``PUT /tasks/{task-id}/reports``)."""

    metadata: ReportMetadata
    public_share: bytes
    leader_share: HpkeCiphertext
    helper_share: HpkeCiphertext

    WIRE = (ReportMetadata, "opaque32", HpkeCiphertext, HpkeCiphertext)

    @classmethod
    def read(cls, r: Reader) -> Report:
        return cls(ReportMetadata.read(r), r.opaque32(), HpkeCiphertext.read(r), HpkeCiphertext.read(r))


@dataclass(frozen=True)
class PlaintextInputShare(Message):
    """What an input share ciphertext opens to: extensions (raw encoded list) and the VDAF payload."""

    extensions: bytes
    payload: bytes

    WIRE = ("opaque16", "opaque32")

    @classmethod
    def read(cls, r: Reader) -> PlaintextInputShare:
        return cls(r.opaque16(), r.opaque32())


@dataclass(frozen=True)
class InputShareAad(Message):
    task_id: bytes
    metadata: ReportMetadata
    public_share: bytes

    WIRE = ("id32", ReportMetadata, "opaque32")


def input_share_info(server_role: int) -> bytes:
    """HPKE info of an input share: ``"dap-09 input share" || client || server_role``."""
    return f"{DAP_VERSION} input share".encode() + bytes([Role.CLIENT, server_role])


def aggregate_share_info(server_role: int) -> bytes:
    """HPKE info of an aggregate share: ``"dap-09 aggregate share" || server_role || collector``."""
    return f"{DAP_VERSION} aggregate share".encode() + bytes([server_role, Role.COLLECTOR])


def batch_selector(interval: Interval) -> bytes:
    """A time-interval ``BatchSelector`` (also the encoding of a time-interval ``Query``)."""
    return u8(TIME_INTERVAL) + interval.encode()


def read_batch_selector(r: Reader) -> Interval:
    qt = r.u8()
    if qt != TIME_INTERVAL:
        raise DecodeError(f"query type {qt} is not time_interval (1)")
    return Interval.read(r)


@dataclass(frozen=True)
class AggregateShareAad(Message):
    task_id: bytes
    agg_param: bytes
    interval: Interval

    WIRE = ("id32", "opaque32", "selector")


@dataclass(frozen=True)
class PingPong(Message):
    """VDAF ping-pong message: type 0 initialize (prep_share), 1 continue (prep_msg, prep_share),
    2 finish (prep_msg)."""

    kind: int
    prep_msg: bytes = b""
    prep_share: bytes = b""

    INITIALIZE, CONTINUE, FINISH = 0, 1, 2

    def encode(self) -> bytes:
        if self.kind == self.INITIALIZE:
            return u8(0) + opaque32(self.prep_share)
        if self.kind == self.CONTINUE:
            return u8(1) + opaque32(self.prep_msg) + opaque32(self.prep_share)
        return u8(2) + opaque32(self.prep_msg)

    @classmethod
    def read(cls, r: Reader) -> PingPong:
        kind = r.u8()
        if kind == cls.INITIALIZE:
            return cls(kind, prep_share=r.opaque32())
        if kind == cls.CONTINUE:
            return cls(kind, prep_msg=r.opaque32(), prep_share=r.opaque32())
        if kind == cls.FINISH:
            return cls(kind, prep_msg=r.opaque32())
        raise DecodeError(f"ping-pong message type {kind} unknown")


@dataclass(frozen=True)
class ReportShare(Message):
    metadata: ReportMetadata
    public_share: bytes
    encrypted_input_share: HpkeCiphertext

    WIRE = (ReportMetadata, "opaque32", HpkeCiphertext)

    @classmethod
    def read(cls, r: Reader) -> ReportShare:
        return cls(ReportMetadata.read(r), r.opaque32(), HpkeCiphertext.read(r))


@dataclass(frozen=True)
class PrepareInit(Message):
    report_share: ReportShare
    payload: bytes  # an encoded PingPong (initialize) message

    WIRE = (ReportShare, "opaque32")

    @classmethod
    def read(cls, r: Reader) -> PrepareInit:
        return cls(ReportShare.read(r), r.opaque32())


@dataclass(frozen=True)
class AggregationJobInitReq(Message):
    """Leader → helper, ``PUT /tasks/{task-id}/aggregation_jobs/{job-id}`` (time-interval tasks)."""

    agg_param: bytes
    prepare_inits: tuple[PrepareInit, ...]

    def encode(self) -> bytes:
        inits = b"".join(p.encode() for p in self.prepare_inits)
        return opaque32(self.agg_param) + u8(TIME_INTERVAL) + opaque32(inits)

    @classmethod
    def read(cls, r: Reader) -> AggregationJobInitReq:
        agg_param = r.opaque32()
        qt = r.u8()
        if qt != TIME_INTERVAL:
            raise DecodeError(f"partial batch selector type {qt} is not time_interval (1)")
        inits = _read_all(r.sub32(), PrepareInit)
        if not inits:
            raise DecodeError("an aggregation job needs at least one report")
        return cls(agg_param, tuple(inits))


def encode_job_init_req(encoded_inits: list[bytes]) -> bytes:
    """:class:`AggregationJobInitReq` (Prio3: empty aggregation parameter) from encoded PrepareInits."""
    return opaque32(b"") + u8(TIME_INTERVAL) + opaque32(b"".join(encoded_inits))


@dataclass(frozen=True)
class PrepareResp(Message):
    """Per report: state 0 continue (payload: PingPong), 1 finished, 2 reject (``error``)."""

    report_id: bytes
    state: int
    payload: bytes = b""
    error: int = 0

    CONTINUE, FINISHED, REJECT = 0, 1, 2

    def encode(self) -> bytes:
        head = bytes(self.report_id) + u8(self.state)
        if self.state == self.CONTINUE:
            return head + opaque32(self.payload)
        if self.state == self.REJECT:
            return head + u8(self.error)
        return head

    @classmethod
    def read(cls, r: Reader) -> PrepareResp:
        rid, state = r.take(16), r.u8()
        if state == cls.CONTINUE:
            return cls(rid, state, payload=r.opaque32())
        if state == cls.FINISHED:
            return cls(rid, state)
        if state == cls.REJECT:
            return cls(rid, state, error=r.u8())
        raise DecodeError(f"prepare response state {state} unknown")


class PrepareError:
    """``PrepareError`` codes of DAP-09."""

    BATCH_COLLECTED, REPORT_REPLAYED, REPORT_DROPPED, HPKE_UNKNOWN_CONFIG_ID = 0, 1, 2, 3
    HPKE_DECRYPT_ERROR, VDAF_PREP_ERROR, BATCH_SATURATED, TASK_EXPIRED = 4, 5, 6, 7
    INVALID_MESSAGE, REPORT_TOO_EARLY = 8, 9


@dataclass(frozen=True)
class AggregationJobResp(Message):
    prepare_resps: tuple[PrepareResp, ...]

    def encode(self) -> bytes:
        return opaque32(b"".join(p.encode() for p in self.prepare_resps))

    @classmethod
    def read(cls, r: Reader) -> AggregationJobResp:
        return cls(tuple(_read_all(r.sub32(), PrepareResp)))


@dataclass(frozen=True)
class CollectionReq(Message):
    """Collector → leader, ``PUT /tasks/{task-id}/collection_jobs/{job-id}``."""

    interval: Interval
    agg_param: bytes = b""

    WIRE = ("selector", "opaque32")


@dataclass(frozen=True)
class Collection(Message):
    """Leader → collector: ``report_count`` here is *noisy* (see :mod:`privstats.services.dap.dp`)."""

    report_count: int
    interval: Interval
    leader_share: HpkeCiphertext
    helper_share: HpkeCiphertext

    def encode(self) -> bytes:
        return (
            u8(TIME_INTERVAL)
            + u64(self.report_count)
            + self.interval.encode()
            + self.leader_share.encode()
            + self.helper_share.encode()
        )

    @classmethod
    def read(cls, r: Reader) -> Collection:
        if r.u8() != TIME_INTERVAL:
            raise DecodeError("collection: partial batch selector is not time_interval")
        return cls(r.u64(), Interval.read(r), HpkeCiphertext.read(r), HpkeCiphertext.read(r))


@dataclass(frozen=True)
class AggregateShareReq(Message):
    """Leader → helper, ``POST /tasks/{task-id}/aggregate_shares``."""

    interval: Interval
    agg_param: bytes
    report_count: int
    checksum: bytes

    WIRE = ("selector", "opaque32", "u64", "id32")
