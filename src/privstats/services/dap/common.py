"""What the DAP leader and helper apps share: problem documents, auth, the HPKE config endpoint,
and the role's keys and VDAF.

Problem documents (RFC 9457, ``application/problem+json``) carry ``type``
``urn:ietf:params:ppm:dap:error:<name>`` for DAP's registered errors (privstats' own, such as an
exhausted privacy budget, use ``https://privstats.dev/errors/<name>``), ``title``, ``status``,
``detail`` and ``taskid`` (unpadded base64url) — ``@divviup/dap`` reads ``taskid`` and the type's
last segment (``outdatedConfig`` makes it refetch keys and retry once).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request

from privstats.services.dap.codec import (
    HPKE_CONFIG_LIST,
    DecodeError,
    HpkeConfig,
    Message,
    encode_hpke_config_list,
)
from privstats.services.dap.task import DapTask, b64, unb64
from privstats.services.security import check_bearer
from privstats.services.tasks import RoleSecrets, Task

__all__ = ["DapProblem", "RoleContext", "dap_app", "job_id_from_path"]

DAP_ERRORS = {
    "invalidMessage",
    "unrecognizedTask",
    "unrecognizedAggregationJob",
    "outdatedConfig",
    "reportRejected",
    "reportTooEarly",
    "batchInvalid",
    "invalidBatchSize",
    "batchQueriedTooManyTimes",
    "batchMismatch",
    "unauthorizedRequest",
    "missingTaskID",
    "stepMismatch",
    "batchOverlap",
}


class DapProblem(Exception):
    """An error answered as a problem document (``status``, DAP error ``name``, ``detail``)."""

    def __init__(self, status: int, name: str, detail: str):
        super().__init__(f"{status} {name}: {detail}")
        self.status, self.name, self.detail = int(status), name, detail

    def document(self, task_id: bytes | None) -> dict:
        urn = (
            f"urn:ietf:params:ppm:dap:error:{self.name}"
            if self.name in DAP_ERRORS
            else f"https://privstats.dev/errors/{self.name}"
        )
        doc: dict[str, Any] = {"type": urn, "title": self.name, "status": self.status, "detail": self.detail}
        if task_id is not None:
            doc["taskid"] = b64(task_id)
        return doc


_M = TypeVar("_M", bound=Message)


def decode_body(message: type[_M], body: bytes, what: str) -> _M:
    """``message.decode(body)``, a parse failure answered as a 400 ``invalidMessage`` problem."""
    try:
        return message.decode(body)
    except DecodeError as exc:
        raise DapProblem(400, "invalidMessage", f"{what}: {exc}") from None


def job_id_from_path(text: str, what: str = "job id") -> bytes:
    """A 16-byte id from its unpadded base64url path segment (400 invalidMessage otherwise)."""
    try:
        raw = unb64(text, what)
    except ValueError:
        raw = b""
    if len(raw) != 16 or b64(raw) != text:
        raise DapProblem(400, "invalidMessage", f"{what} must be 16 bytes in unpadded base64url")
    return raw


@dataclass
class RoleContext:
    """One aggregator's view of its task: the DAP config, secrets, VDAF and storage."""

    role: str  # "leader" | "helper"
    dap: DapTask
    secrets: RoleSecrets
    vdaf: Any
    store: Any  # DapStore
    storage: Any  # foundation Storage (budget ledger)

    @property
    def config(self) -> HpkeConfig:
        return self.dap.hpke_configs[self.role]

    @property
    def private_key(self) -> bytes:
        return self.secrets.private_key_bytes

    @functools.cached_property
    def private_key_obj(self) -> Any:
        """The X25519 private key object (parsed once; HPKE opens take it or raw bytes)."""
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        return X25519PrivateKey.from_private_bytes(self.private_key)

    @property
    def verify_key(self) -> bytes:
        key = bytes.fromhex(self.secrets.token("verify"))
        return key[: int(self.vdaf.VERIFY_KEY_SIZE)]

    @property
    def modulus(self) -> int:
        return int(self.vdaf.field.MODULUS)

    def check_auth(self, headers: Any, kind: str) -> None:
        """Bearer ``kind`` token (``Authorization: Bearer`` or DAP's ``DAP-Auth-Token``)."""
        auth = headers.get("authorization")
        if auth is None and headers.get("dap-auth-token"):
            auth = "Bearer " + headers.get("dap-auth-token")
        if check_bearer(auth, self.secrets.token_hashes.get(kind)) != 200:
            raise DapProblem(
                401 if auth is None else 403, "unauthorizedRequest", f"a valid {kind} token is required"
            )

    def check_task(self, task_id_text: str) -> None:
        if task_id_text != self.dap.task_id_b64:
            raise DapProblem(404, "unrecognizedTask", "this aggregator does not serve that task")

    def admit(self, task_id_text: str, headers: Any, kind: str) -> None:
        """A request's gate: :meth:`check_task` on the path's task id, then :meth:`check_auth`."""
        self.check_task(task_id_text)
        self.check_auth(headers, kind)


def build_context(role: str, task: Task, secrets: RoleSecrets, storage: Any) -> RoleContext:
    from privstats.services.dap.store import DapStore

    dap = DapTask.from_task(task)
    if secrets.role != role:
        raise ValueError(f"secrets: these are the {secrets.role} secrets, not the {role}'s")
    vdaf = dap.vdaf()
    store = DapStore(storage, dap.task_id, role, int(vdaf.field.MODULUS))
    storage.ensure_budget(task.id_bytes, task.budget_value)
    ctx = RoleContext(role, dap, secrets, vdaf, store, storage)
    _warm_up(ctx)
    return ctx


def single_threaded_blas() -> int:
    """Limit the process's BLAS libraries to one thread (threadpoolctl); returns how many were limited.

    Preparation's matrix products are small (a batch of reports against a few dozen columns): extra
    BLAS threads do not speed them up, they spin while waiting for work, which cost an aggregator
    ~300 µs of CPU per report when ``OPENBLAS_NUM_THREADS`` was unset.  numpy is imported before
    the server starts, so the environment variable is too late here.

    >>> single_threaded_blas() >= 0
    True
    """
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # not used as a context: kept for the process's life
    return sum(info["user_api"] == "blas" for info in threadpool_info())


def freeze_startup_heap() -> None:
    """Move every object alive after start-up (numba, SQLAlchemy, FastAPI, the VDAF's tables) out of
    the cyclic garbage collector's reach (:func:`gc.freeze`).

    The servers allocate many short-lived containers per report, so the collector runs often, and
    each full collection walked the whole start-up heap again: about a third of the aggregators' CPU
    while serving (py-spy: ~40% of the leader's and the helper's busy samples in gc_collect_main;
    with the freeze, leader CPU ~560 -> ~450-510 us/report, helper ~280 -> ~225 in bench_dap_e2e).
    Frozen objects are never collected; they live for the process's life anyway.
    """
    import gc

    gc.collect()
    gc.freeze()


def _warm_up(ctx: RoleContext) -> None:
    """Parse the HPKE key, build the VDAF's cached tables and load (or, on a machine's first start,
    compile) the batch kernels at start, not on the first reports."""
    from privstats.secure.vdaf.batch import warm_up

    assert ctx.private_key_obj is not None
    warm_up(ctx.vdaf)


def _serving(lifespan: Any = None) -> Any:
    """The app's lifespan: :func:`single_threaded_blas` when the server starts (not when the app is
    merely built, e.g. by tests that drive it in process), then ``lifespan`` if given."""
    import contextlib

    @contextlib.asynccontextmanager
    async def serving(app: Any) -> Any:
        single_threaded_blas()
        freeze_startup_heap()
        if lifespan is None:
            yield
        else:
            async with lifespan(app):
                yield

    return serving


def request_hash(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


def dap_app(ctx: RoleContext, lifespan: Any = None):
    """A FastAPI app with ``/healthz``, ``GET /hpke_config`` and the problem-document handler."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response

    from privstats.services.app import role_app

    app, _ = role_app(f"dap-{ctx.role}", ctx.dap.task_id_b64, ctx, lifespan=_serving(lifespan))

    @app.exception_handler(DapProblem)
    async def _problem(_request: Request, exc: DapProblem):
        return JSONResponse(
            exc.document(ctx.dap.task_id), status_code=exc.status, media_type="application/problem+json"
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError):
        doc = DapProblem(400, "invalidMessage", "malformed request").document(ctx.dap.task_id)
        return JSONResponse(doc, status_code=400, media_type="application/problem+json")

    @app.get("/hpke_config")
    def hpke_config(request: Request):
        task_id = request.query_params.get("task_id")
        if not task_id:
            raise DapProblem(400, "missingTaskID", "GET /hpke_config needs ?task_id=")
        ctx.check_task(task_id)
        return Response(
            encode_hpke_config_list([ctx.config]),
            media_type=HPKE_CONFIG_LIST,
            headers={"Cache-Control": "max-age=86400", "Access-Control-Allow-Origin": "*"},
        )

    return app
