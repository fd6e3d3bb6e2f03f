"""What every role's HTTP app shares, and the runner behind ``privstats serve ROLE``.

* :func:`read_body` — the request body with a hard size limit (413 before reading more).
* :func:`require_token` — bearer-token check (401 missing, 403 wrong; constant-time).
* :func:`error` — an ``HTTPException`` with a JSON ``{"error": code, "message": ...}`` detail.
* :func:`role_app` and :class:`TaskRoutes` — the app a role starts from and the routes the
  collector, shuffler and analyzer share (a binary upload, a collection, a status).
* :func:`run_server` — uvicorn in this process; SIGTERM stops accepting, drains in-flight requests
  and background work, runs the role's shutdown, and returns 0.
* :func:`serve` — build a role's app from ``task.json`` (+ its secrets file) and run it.

Role apps register themselves in :data:`ROLE_FACTORIES` (``role -> "module:function"``); a factory
takes ``(task, secrets, storage, **options)`` and returns a FastAPI app.  The secure model's
``leader`` and ``helper`` are the DAP-09 aggregators (:data:`privstats.services.dap.ROLE_FACTORIES`),
for a task with a ``dap`` object.
"""

import importlib
import os
import signal
from typing import Any, NoReturn

from privstats.services.security import check_bearer
from privstats.services.tasks import RoleSecrets, Task, load_secrets, load_task

__all__ = [
    "ROLE_FACTORIES",
    "TaskRoutes",
    "build_app",
    "error",
    "read_body",
    "read_json",
    "require_token",
    "role_app",
    "run_server",
    "serve",
]

#: role -> "module:function" building its FastAPI app
ROLE_FACTORIES: dict[str, str] = {
    "collector": "privstats.services.collector:create_app",
    "shuffler": "privstats.services.shuffler:create_shuffler_app",
    "analyzer": "privstats.services.shuffler:create_analyzer_app",
}


def error(status: int, code: str, message: str) -> NoReturn:
    """Raise an HTTPException whose JSON detail names the error."""
    from fastapi import HTTPException

    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    raise HTTPException(status_code=status, detail={"error": code, "message": message}, headers=headers)


def require_token(authorization: str | None, secrets: RoleSecrets, kind: str) -> None:
    """401 if the bearer token is missing, 403 if it is not this role's ``kind`` token."""
    status = check_bearer(authorization, secrets.token_hashes.get(kind))
    if status == 401:
        error(401, "unauthorized", f"a bearer {kind} token is required")
    if status == 403:
        error(403, "forbidden", f"the {kind} token is not valid for this task")


async def read_body(request: Any, limit: int) -> bytes:
    """The body, refusing (413) a declared or actual size above ``limit`` before buffering it all."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                error(413, "too_large", f"body of {declared} bytes exceeds the limit of {limit}")
        except ValueError:
            error(400, "bad_request", "invalid Content-Length")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            error(413, "too_large", f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Any) -> dict:
    """The body as a JSON object (at most 64 KiB; an empty body is ``{}``); 400 otherwise."""
    import json

    raw = await read_body(request, 1 << 16)
    try:
        query = json.loads(raw or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        error(400, "bad_request", "the body must be a JSON object")
    if not isinstance(query, dict):
        error(400, "bad_request", "the body must be a JSON object")
    return query


def role_app(role: str, task_id: str, server: Any, *, lifespan: Any = None) -> tuple[Any, Any]:
    """The FastAPI app every role starts from — ``GET /healthz`` answers 200 once it serves — and
    the check its routes run on the task id of their path (404 for another task)."""
    from fastapi import FastAPI

    app = FastAPI(
        title=f"privstats {role}", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.role = server

    def check_task(path_task_id: str) -> None:
        if path_task_id != task_id:
            error(404, "unknown_task", f"this {role} serves another task")

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "role": role, "task_id": task_id}

    return app, check_task


class TaskRoutes:
    """The routes of a role's task, on ``app`` (from :func:`role_app`): each checks its bearer
    token (401/403), then the task id of its path (404), before anything else."""

    def __init__(self, app: Any, check_task: Any, secrets: RoleSecrets):
        self.app, self.check_task, self.secrets = app, check_task, secrets

    def _check(self, authorization: str | None, token: str, task_id: str) -> None:
        require_token(authorization, self.secrets, token)
        self.check_task(task_id)

    def binary(self, path: str, token: str, limit: int, handler: Any, bad_code: str) -> None:
        """``POST /tasks/{id}/<path>``: a binary body of at most ``limit`` bytes, answered by
        ``handler(body)`` in a worker thread; a WireError is a 400 ``bad_code``."""
        from fastapi import Header, Request
        from fastapi.concurrency import run_in_threadpool

        from privstats.services.wire import WireError

        @self.app.post(f"/tasks/{{task_id}}/{path}")
        async def post(task_id: str, request: Request, authorization: str | None = Header(None)) -> dict:
            self._check(authorization, token, task_id)
            body = await read_body(request, limit)
            try:
                return await run_in_threadpool(handler, body)
            except WireError as exc:
                error(400, bad_code, str(exc))

    def collect(self, handler: Any) -> None:
        """``POST /tasks/{id}/collect`` (collect token): ``handler(collection_id, min_reports)`` from
        the JSON body; a :class:`~privstats.services.collection.CollectError` is a 400 (bad request)
        or 409 (batch too small, budget exceeded)."""
        from fastapi import Header, Request
        from fastapi.concurrency import run_in_threadpool

        from privstats.services.collection import CollectError

        @self.app.post("/tasks/{task_id}/collect")
        async def collect(task_id: str, request: Request, authorization: str | None = Header(None)) -> dict:
            self._check(authorization, "collect", task_id)
            query = await read_json(request)
            try:
                return await run_in_threadpool(handler, query.get("collection_id"), query.get("min_reports"))
            except CollectError as exc:
                error(400 if exc.code == "bad_request" else 409, exc.code, str(exc))

    def status(self, token: str, handler: Any) -> None:
        """``GET /tasks/{id}/status`` (``token``): ``handler()``."""
        from fastapi import Header

        @self.app.get("/tasks/{task_id}/status")
        def status(task_id: str, authorization: str | None = Header(None)) -> dict:
            self._check(authorization, token, task_id)
            return handler()


def build_app(role: str, task: Task, secrets: RoleSecrets, db: str, **options: Any):
    """The FastAPI app of ``role`` over the database ``db`` (an SQLAlchemy URL)."""
    from privstats.services.dap import ROLE_FACTORIES as DAP
    from privstats.services.storage import Storage

    if role not in ROLE_FACTORIES and role not in DAP:
        raise ValueError(f"role must be one of {sorted({*ROLE_FACTORIES, *DAP})}, got {role!r}")
    if role not in task.roles:
        raise ValueError(
            f"role {role!r} is not part of this {task.model}-model task (roles: {list(task.roles)})"
        )
    if secrets.task_id != task.task_id:
        raise ValueError(f"the {role} secrets belong to task {secrets.task_id}, not {task.task_id}")
    if role in DAP and not getattr(task, "dap", None):
        raise ValueError(
            "task: a secure task runs DAP-09 and needs its 'dap' object (this one has none: it was made "
            "by an older privstats; create it again with `privstats task new --model secure`)"
        )
    module, fn = (DAP if role in DAP else ROLE_FACTORIES)[role].split(":")
    factory = getattr(importlib.import_module(module), fn)
    key = secrets.integrity_key_bytes if secrets.integrity_key else None  # the ledger's MAC key
    return factory(task, secrets, Storage(db, key=key), **options)


def run_server(app: Any, host: str, port: int, *, log_level: str = "warning", drain_seconds: int = 30) -> int:
    """Run ``app`` under uvicorn until SIGTERM/SIGINT; in-flight requests finish; returns 0.

    uvicorn re-raises the signal it caught once it has shut down; a no-op handler installed here
    receives it, so the process exits with status 0 after a clean drain.
    """
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=int(port),
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=drain_seconds,
        access_log=False,
    )
    server = uvicorn.Server(config)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    server.run()
    return 0 if server.started else 1


def serve(
    role: str,
    task_path: str,
    *,
    db: str | None = None,
    host: str | None = None,
    port: int | None = None,
    secrets_path: str | None = None,
    log_level: str = "warning",
    **options: Any,
) -> int:
    """``privstats serve ROLE``: load the task and the role's secrets, open the database, run."""
    from urllib.parse import urlsplit

    from privstats.services.storage import default_db_url

    secrets = load_secrets(task_path, role, secrets_path)
    task = load_task(task_path, key=secrets.integrity_key_bytes)  # an edited task.json is refused
    url = urlsplit(task.url(role))
    host = host or url.hostname or "127.0.0.1"
    port = port if port is not None else (url.port or 80)
    db = (
        db
        or os.environ.get("PRIVSTATS_DB")
        or default_db_url(role, task.task_id, os.path.dirname(os.path.abspath(task_path)))
    )
    if role == "leader":  # as `privstats dap serve leader`: the job driver in its own process
        options.setdefault("driver_process", True)
    app = build_app(role, task, secrets, db, **options)
    return run_server(app, host, port, log_level=log_level)
