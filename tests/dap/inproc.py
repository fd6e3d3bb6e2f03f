"""An in-process leader/helper pair over Starlette TestClients (the leader's driver talks to the
helper's app directly), for protocol tests that need no real processes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Pair:
    task: Any
    secrets: dict
    leader_app: Any
    helper_app: Any
    leader: Any  # TestClient
    helper: Any  # TestClient

    @property
    def lctx(self):
        return self.leader_app.state.role

    @property
    def hctx(self):
        return self.helper_app.state.role

    @property
    def driver(self):
        return self.leader_app.state.driver

    def close(self) -> None:
        self.leader.close()
        self.helper.close()


def make_pair(tmp: Path, *, pg: Any = None, **task_kw: Any) -> Pair:
    from fastapi.testclient import TestClient

    from privstats.services.dap.helper import create_helper_app
    from privstats.services.dap.leader import create_leader_app
    from privstats.services.dap.task import new_dap_task
    from privstats.services.storage import Storage

    kw = {"bounds": (0, 1), "grid": 15, "epsilon": 1.0, "min_batch": 5, **task_kw}
    statistic = kw.pop("statistic", "ecdf")
    task, secrets = new_dap_task(statistic, **kw)
    if pg is None:
        ls, hs = Storage(f"sqlite:///{tmp}/leader.db"), Storage(f"sqlite:///{tmp}/helper.db")
    else:
        ls, hs = Storage(pg()), Storage(pg())
    happ = create_helper_app(task, secrets["helper"], hs)
    lapp = create_leader_app(task, secrets["leader"], ls, drive=False)
    helper = TestClient(happ)
    lapp.state.driver.client = helper
    return Pair(task, secrets, lapp, happ, TestClient(lapp), helper)


def drain(pair: Pair, rounds: int = 50) -> None:
    """Run driver steps until nothing is left to do."""
    for _ in range(rounds):
        if not pair.driver.step():
            return
    raise AssertionError("the driver kept finding work")


def collect(pair: Pair, interval: Any = None, job_id: bytes | None = None) -> tuple[int, Any]:
    """PUT a collection job, drive it, poll it: ``(status of the final poll, body or problem)``."""
    import os

    from privstats.services.dap.codec import COLLECT_REQ, CollectionReq, Interval
    from privstats.services.dap.task import DapTask, b64

    dap = DapTask.from_task(pair.task)
    tp = dap.time_precision
    interval = interval or Interval(0, (int(time.time()) // tp + 1) * tp)
    job_id = job_id or os.urandom(16)
    url = f"/tasks/{dap.task_id_b64}/collection_jobs/{b64(job_id)}"
    headers = {
        "Authorization": f"Bearer {pair.secrets['analyst'].token('collect')}",
        "Content-Type": COLLECT_REQ,
    }
    r = pair.leader.put(url, content=CollectionReq(interval).encode(), headers=headers)
    if r.status_code != 201:
        return r.status_code, r.json()
    drain(pair)
    r = pair.leader.post(url, headers=headers)
    return r.status_code, (r.content if r.status_code == 200 else r.json() if r.content else None)
