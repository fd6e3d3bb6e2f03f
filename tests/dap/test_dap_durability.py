"""Deliverable 2's durability: kill -9 of either server during uploads and aggregation, on SQLite and
PostgreSQL.  Every acknowledged report is counted, none twice, and leader and helper agree."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from dap_support import db_counts, make_dap_task


def _upload_retrying(client, values, acked: list[int]) -> None:
    """Upload each report, resending *the same bytes* until the leader acknowledges it (a resent
    report that was already stored is ignored as a replay, so it counts once)."""
    import time

    import httpx

    from privstats.services.dap.codec import REPORT

    tp = client.dap.time_precision
    url = f"{client.dap.url('leader')}/tasks/{client.dap.task_id_b64}/reports"
    for cell in client.spec.cells(values)[:, 0].tolist():
        body = client.report(cell, int(time.time()) // tp * tp).encode()
        deadline = time.monotonic() + 120
        while True:
            try:
                r = httpx.put(url, content=body, headers={"Content-Type": REPORT}, timeout=30)
                assert r.status_code == 201, r.text
                acked[0] += 1
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the leader did not come back"
                time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill9_either_server(tmp_path, dap_servers, backend, request):
    from privstats.services.dap.client import DapClient, collect
    from privstats.services.dap.task import DapTask
    from privstats.services.tasks import load_task

    if backend == "sqlite":
        ldb, hdb = f"sqlite:///{tmp_path}/leader.db", f"sqlite:///{tmp_path}/helper.db"
    else:
        make = request.getfixturevalue("postgres_server")[1]
        ldb, hdb = make(), make()
    task_path, ports = make_dap_task(tmp_path, min_batch=20, grid=63)
    extra = ("--job-size", "8", "--lease-seconds", "2")
    leader = dap_servers("leader", task_path, ldb, ports["leader"], extra)
    helper = dap_servers("helper", task_path, hdb, ports["helper"])
    client = DapClient(task_path)
    x = np.random.default_rng(3).uniform(size=150)
    acked = [0]
    _upload_retrying(client, x[:60], acked)
    helper.kill()  # mid-aggregation: the leader's job fails and is retried after its lease
    helper.start()
    leader.kill()
    leader.start()
    # kill the leader again while uploads are arriving
    th = threading.Thread(target=_upload_retrying, args=(client, x[60:], acked))
    th.start()
    while acked[0] < 90 and th.is_alive():
        th.join(0.05)
    leader.kill()
    leader.start()
    th.join()
    assert acked[0] == 150
    res = collect(task_path, timeout=300)
    assert res.probabilities.shape == DapTask.from_task(load_task(task_path)).spec.thresholds.shape
    tid = DapTask.from_task(load_task(task_path)).task_id
    n_leader, states = db_counts(ldb, "leader", tid)
    n_helper, _ = db_counts(hdb, "helper", tid)
    # every acknowledged report counted once (resent reports included), on both servers
    assert n_leader == n_helper == states.get("done", 0) == 150
    assert set(states) <= {"done"}


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (Linux /proc)."""
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_kill9_of_the_leader_takes_its_driver_process(tmp_path, dap_servers):
    """The aggregation-job driver runs in a child process of the leader: kill -9 of the leader must
    not leave it running (it would keep driving jobs beside the restarted leader's driver)."""
    import time
    from pathlib import Path

    if not Path("/proc/self/task").exists():
        pytest.skip("needs Linux /proc")
    task_path, ports = make_dap_task(tmp_path, min_batch=20, grid=63)
    leader = dap_servers("leader", task_path, f"sqlite:///{tmp_path}/leader.db", ports["leader"])
    pid = leader.proc.pid
    kids: list[int] = []
    for _ in range(300):  # the driver process starts with the server
        kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        if kids:
            break
        time.sleep(0.1)
    assert kids, "the leader started no driver process"
    leader.kill()
    for _ in range(300):
        if not any(_alive(k) for k in kids):
            break
        time.sleep(0.1)
    assert not any(_alive(k) for k in kids), "the driver process outlived its leader"
