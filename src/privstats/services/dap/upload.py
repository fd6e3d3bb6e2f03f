"""The leader's upload path: ``PUT /tasks/{task-id}/reports``, served before FastAPI's stack.

Uploads are the leader's hot path (one request per report), so :class:`UploadRoute` handles them as
a bare ASGI app in front of the FastAPI app (no routing, dependency or middleware layers; other
requests pass through unchanged).  Per report it checks the content type and size, parses the
report, checks its times and HPKE config ids, opens the leader's input share (binding it to the task
id, metadata and public share), then awaits :class:`GroupCommitter`: concurrent uploads are stored in
one transaction per round (one commit and fsync for many reports), and each 201 is sent only after
the transaction holding its report committed.  Errors are DAP problem documents.

>>> from privstats.services.dap.common import DapProblem
>>> _checked("new")
'new'
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from privstats.services.dap.codec import (
    REPORT,
    DecodeError,
    HpkeCiphertext,
    PlaintextInputShare,
    Report,
    Role,
    input_share_info,
)
from privstats.services.dap.common import DapProblem, RoleContext, decode_body
from privstats.services.dap.hpke import HPKEOpenError, open_

__all__ = ["GroupCommitter", "UploadRoute", "handle_upload", "parse_upload"]


def parse_upload(ctx: RoleContext, body: bytes, now: int | None = None) -> tuple:
    """Validate a report and open the leader's share: the row to store
    ``(report id, time, public share, leader's input share, helper's sealed share)``.

    Raises :class:`DapProblem`: ``invalidMessage`` (does not parse, extensions),
    ``outdatedConfig`` (unknown HPKE config id), ``reportTooEarly`` (time beyond now + skew),
    ``reportRejected`` (too old, share does not open).
    """
    body = bytes(body)
    split = _split_report(body)
    if split is None:  # not a well-formed report: the generic decoder says why (or parses the rest)
        rep = decode_body(Report, body, "report")
        split = (
            rep.metadata.report_id,
            rep.metadata.time,
            rep.public_share,
            rep.leader_share,
            rep.helper_share.config_id,
            rep.helper_share.encode(),
            24 + 4 + len(rep.public_share),
        )
    rid, t, public_share, leader_ct, helper_config_id, helper_ct, aad_end = split
    now = int(time.time()) if now is None else now
    dap = ctx.dap
    if t > now + dap.tolerable_clock_skew:
        raise DapProblem(400, "reportTooEarly", "report time is in the future")
    if t < now - dap.report_expiry_age:
        raise DapProblem(400, "reportRejected", "report time is older than the report expiry age")
    if leader_ct.config_id != ctx.config.id or helper_config_id != dap.hpke_configs["helper"].id:
        raise DapProblem(400, "outdatedConfig", "unknown HPKE config id; fetch /hpke_config again")
    # InputShareAad = task id || ReportMetadata || opaque32 public share: the report's first bytes
    aad = dap.task_id + body[:aad_end]
    try:
        plain = open_(ctx.private_key_obj, ctx.config, leader_ct, _LEADER_INFO, aad)
        payload = _plaintext_payload(plain)
    except (HPKEOpenError, DecodeError):
        raise DapProblem(400, "reportRejected", "the leader's input share does not open") from None
    return (rid, t, public_share, payload, helper_ct)


_LEADER_INFO = input_share_info(Role.LEADER)
_U64, _U32, _U16 = struct.Struct(">Q"), struct.Struct(">I"), struct.Struct(">H")


def _split_report(body: bytes) -> tuple | None:
    """The fields of a well-formed ``Report`` read at their offsets (the upload hot path): ``(report
    id, time, public share, leader's HpkeCiphertext, helper's config id, helper's ciphertext as
    sent, end of the metadata and public share)``; None if ``body`` is not exactly one report (the
    caller then decodes it with :class:`Report`, which says what is wrong).

    >>> from privstats.services.dap.codec import HpkeCiphertext as Ct, ReportMetadata
    >>> rep = Report(ReportMetadata(b"r" * 16, 5), b"pub", Ct(1, b"e", b"lead"), Ct(2, b"f", b"help"))
    >>> rid, t, public, leader, helper_id, helper_ct, end = _split_report(rep.encode())
    >>> (rid, t, public, leader, helper_id, helper_ct == rep.helper_share.encode(), end)
    (b'rrrrrrrrrrrrrrrr', 5, b'pub', HpkeCiphertext(config_id=1, enc=b'e', payload=b'lead'), 2, True, 31)
    >>> _split_report(rep.encode() + b"x") is None, _split_report(rep.encode()[:-1]) is None
    (True, True)
    """
    size = len(body)
    if size < 24 + 4:
        return None
    end = 28 + _U32.unpack_from(body, 24)[0]  # metadata (16 + 8 bytes), public share
    cts = []
    pos = end
    for _ in range(2):  # HpkeCiphertext: config id (u8), enc (opaque16), payload (opaque32)
        if pos + 3 > size:
            return None
        enc_end = pos + 3 + _U16.unpack_from(body, pos + 1)[0]
        if enc_end + 4 > size:
            return None
        ct_end = enc_end + 4 + _U32.unpack_from(body, enc_end)[0]
        if ct_end > size:
            return None
        cts.append((pos, enc_end, ct_end))
        pos = ct_end
    if pos != size:
        return None
    (lp, le, lend), (hp, _, _) = cts
    leader = HpkeCiphertext(body[lp], body[lp + 3 : le], body[le + 4 : lend])
    return (body[:16], _U64.unpack_from(body, 16)[0], body[28:end], leader, body[hp], body[hp:], end)


def _plaintext_payload(plain: bytes) -> bytes:
    """The payload of a ``PlaintextInputShare`` without extensions (one copy); DecodeError if it does
    not parse, the 400 ``invalidMessage`` problem if it has extensions."""
    if len(plain) >= 6 and plain[:2] == b"\x00\x00" and _U32.unpack_from(plain, 2)[0] == len(plain) - 6:
        return plain[6:]
    share = PlaintextInputShare.decode(plain)
    if share.extensions:
        raise DapProblem(400, "invalidMessage", "report extensions are not supported")
    return share.payload


def handle_upload(ctx: RoleContext, body: bytes, now: int | None = None) -> str:
    """:func:`parse_upload` and store the report in its own transaction: ``"new"`` or ``"replay"``
    (``reportRejected`` if its batch has been collected)."""
    return _checked(ctx.store.put_report(*parse_upload(ctx, body, now)))


def _checked(outcome: str) -> str:
    if outcome == "collected":
        raise DapProblem(400, "reportRejected", "the report's batch has already been collected")
    return outcome


class GroupCommitter:
    """Stores concurrent uploads in one transaction per round (one commit for many reports).

    ``await put(row)`` returns the report's outcome once the transaction holding it committed.  While
    one transaction runs (in a dedicated thread), new rows queue up and go into the next one.
    ``on_commit(n)`` is told how many new reports each transaction stored.
    """

    def __init__(self, store: Any, max_batch: int = 1024, on_commit: Callable[[int], None] | None = None):
        self.store, self.max_batch, self.on_commit = store, int(max_batch), on_commit
        self.waiting: list[tuple[tuple, asyncio.Future]] = []
        self.flushing: asyncio.Future | None = None
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="dap-group-commit")

    async def put(self, row: tuple) -> str:
        fut = asyncio.get_running_loop().create_future()
        self.waiting.append((row, fut))
        if self.flushing is None:
            self.flushing = asyncio.ensure_future(self._flush())
        return await fut

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.waiting:
                batch, self.waiting = self.waiting[: self.max_batch], self.waiting[self.max_batch :]
                try:
                    outcomes = await loop.run_in_executor(
                        self.pool, self.store.put_reports, [row for row, _ in batch]
                    )
                except Exception as exc:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                for (_, fut), outcome in zip(batch, outcomes, strict=True):
                    if not fut.done():
                        fut.set_result(outcome)
                if self.on_commit is not None:
                    self.on_commit(outcomes.count("new"))
        finally:
            self.flushing = None

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class UploadRoute:
    """ASGI app: ``PUT /tasks/{task-id}/reports`` handled here, everything else passed to ``inner``."""

    def __init__(self, inner: Any, ctx: RoleContext, committer: GroupCommitter, limit: int):
        self.inner, self.ctx, self.committer, self.limit = inner, ctx, committer, int(limit)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or scope["method"] != "PUT"
            or not (path.startswith("/tasks/") and path.endswith("/reports") and path.count("/") == 3)
        ):
            await self.inner(scope, receive, send)
            return
        status, headers, body = 201, [], b""
        try:
            self.ctx.check_task(path[len("/tasks/") : -len("/reports")])
            row = parse_upload(self.ctx, await self._body(scope, receive))
            _checked(await self.committer.put(row))
        except DapProblem as p:
            body = json.dumps(p.document(self.ctx.dap.task_id)).encode()
            status, headers = p.status, [(b"content-type", b"application/problem+json")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _body(self, scope: dict, receive: Any) -> bytes:
        """The request body after the content-type and size checks (415, 413 before buffering)."""
        ct = declared = None
        for k, v in scope["headers"]:
            if k == b"content-type":
                ct = v.decode("latin-1")
            elif k == b"content-length":
                declared = v
        if ct is not None and ct.split(";")[0].strip() != REPORT:
            raise DapProblem(415, "invalidMessage", f"Content-Type must be {REPORT}")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            raise DapProblem(413, "invalidMessage", f"the body must be at most {self.limit} bytes")
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise DapProblem(400, "invalidMessage", "the client went away")
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                raise DapProblem(413, "invalidMessage", f"the body must be at most {self.limit} bytes")
            chunks.append(chunk)
            if not msg.get("more_body", False):
                return b"".join(chunks)
