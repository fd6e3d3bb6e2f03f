"""HTTP apps of the secure model's leader and helper (``privstats serve leader|helper``).

The roles' logic is :mod:`privstats.services.aggregators`; this module puts it behind FastAPI
with the services' JSON error shape.  No status carries a report count.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from fastapi import Request

from privstats.services.aggregators import JOB_SIZE, Helper, Leader

__all__ = ["create_helper_app", "create_leader_app"]

log = logging.getLogger("privstats.secure")


_CODES = {
    "_Conflict": "conflict",
    "_NotFound": "not_found",
    "_TooSmall": "batch_too_small",
    "_Unavailable": "unavailable",
    "_BudgetExceeded": "budget_exceeded",
}


def _failure(exc: Exception):
    """A JSON error in the services' shape: ``{"detail": {"error": code, "message": ...}}``."""
    from fastapi.responses import JSONResponse

    if isinstance(exc, (ValueError, KeyError, TypeError)) and not hasattr(exc, "status"):
        status, code = 400, "bad_request"
    else:
        status = int(getattr(exc, "status", 500))
        code = _CODES.get(type(exc).__name__, "error")
    if status >= 500:
        log.warning("secure service error: %s", exc)
    return JSONResponse({"detail": {"error": code, "message": str(exc)}}, status_code=status)


async def _json_body(request: Request, limit: int) -> dict:
    from privstats.services.app import read_body

    data = json.loads(await read_body(request, limit))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


def create_helper_app(task, secrets, storage, **_options: Any):
    """FastAPI app of the helper (``privstats serve helper``)."""
    import anyio
    from fastapi import FastAPI, Header

    from privstats.services.app import error, require_token

    helper = Helper(task, secrets, storage)
    app = FastAPI(title="privstats helper", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = helper
    limit = max(int(task.max_request_bytes), 64 << 20)

    def _auth(authorization: str | None, task_id: str) -> None:
        require_token(authorization, secrets, "forward")
        if task_id != helper.task_id:
            error(404, "unknown_task", "no such task")

    @app.get("/healthz")
    def healthz():
        return {"status": "ok", "role": "helper", "task_id": helper.task_id}

    @app.put("/tasks/{task_id}/batches/{batch_id}")
    async def announce(task_id: str, batch_id: int, authorization: str | None = Header(None)):
        _auth(authorization, task_id)
        await anyio.to_thread.run_sync(helper.announce, batch_id)
        return {"batch_id": batch_id}

    @app.post("/tasks/{task_id}/jobs/{job_id}/init")
    async def init(task_id: str, job_id: str, request: Request, authorization: str | None = Header(None)):
        _auth(authorization, task_id)
        try:
            body = await _json_body(request, limit)
            return await anyio.to_thread.run_sync(helper.init_job, job_id, body)
        except Exception as exc:
            return _failure(exc)

    @app.post("/tasks/{task_id}/jobs/{job_id}/finish")
    async def finish(task_id: str, job_id: str, request: Request, authorization: str | None = Header(None)):
        _auth(authorization, task_id)
        try:
            body = await _json_body(request, limit)
            return await anyio.to_thread.run_sync(helper.finish_job, job_id, body)
        except Exception as exc:
            return _failure(exc)

    @app.post("/tasks/{task_id}/batches/{batch_id}/collect")
    async def collect(
        task_id: str, batch_id: int, request: Request, authorization: str | None = Header(None)
    ):
        _auth(authorization, task_id)
        try:
            body = await _json_body(request, 1 << 16)
            return await anyio.to_thread.run_sync(helper.collect, batch_id, body)
        except Exception as exc:
            return _failure(exc)

    return app


def create_leader_app(
    task, secrets, storage, *, helper_url: str | None = None, job_size: int = JOB_SIZE, **_options: Any
):
    """FastAPI app of the leader (``privstats serve leader``); its driver thread runs with the app."""
    from contextlib import asynccontextmanager

    import anyio
    from fastapi import FastAPI, Header

    from privstats.services.app import error, read_body, require_token

    leader = Leader(task, secrets, storage, helper_url=helper_url, job_size=job_size)

    @asynccontextmanager
    async def lifespan(_app):
        leader.start()
        yield
        await anyio.to_thread.run_sync(leader.stop)

    app = FastAPI(
        title="privstats leader", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.server = leader

    def _task(task_id: str) -> None:
        if task_id != leader.task_id:
            error(404, "unknown_task", "no such task")

    @app.get("/healthz")
    def healthz():
        return {"status": "ok", "role": "leader", "task_id": leader.task_id}

    @app.post("/tasks/{task_id}/reports")
    async def upload(task_id: str, request: Request, authorization: str | None = Header(None)):
        require_token(authorization, secrets, "upload")
        _task(task_id)
        body = await read_body(request, int(task.max_request_bytes))
        try:
            return await anyio.to_thread.run_sync(leader.upload, body)
        except Exception as exc:
            return _failure(exc)

    @app.post("/tasks/{task_id}/collect")
    async def collect(task_id: str, request: Request, authorization: str | None = Header(None)):
        require_token(authorization, secrets, "collect")
        _task(task_id)
        try:
            body = await _json_body(request, 1 << 16)
            cid = body.get("collection_id") or os.urandom(16).hex()
            return await anyio.to_thread.run_sync(leader.collect, str(cid))
        except Exception as exc:
            return _failure(exc)

    @app.get("/tasks/{task_id}/status")
    def status(task_id: str, authorization: str | None = Header(None)):
        require_token(authorization, secrets, "collect")
        _task(task_id)
        return leader.stats()

    return app
