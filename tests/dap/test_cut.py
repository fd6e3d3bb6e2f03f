"""A collection cuts its batch at a point in time: while uploads keep arriving, the collection
finishes, uploads into the cut interval are refused from then on, and the batch holds exactly the
reports acknowledged before the cut (leader and helper agree)."""

from __future__ import annotations

import threading
import time

from dap_support import db_counts, make_dap_task


def test_collection_does_not_wait_on_arriving_uploads(tmp_path, dap_servers):
    import httpx

    from privstats.services.dap.client import DapClient, collect
    from privstats.services.dap.codec import REPORT

    task_path, ports = make_dap_task(tmp_path, min_batch=20, grid=63)
    ldb, hdb = f"sqlite:///{tmp_path}/leader.db", f"sqlite:///{tmp_path}/helper.db"
    dap_servers("leader", task_path, ldb, ports["leader"])
    dap_servers("helper", task_path, hdb, ports["helper"])
    client = DapClient(task_path)
    tp = client.dap.time_precision
    t = int(time.time()) // tp * tp
    url = f"{client.dap.url('leader')}/tasks/{client.dap.task_id_b64}/reports"
    acked, refused, stop = [0], [0], threading.Event()

    def keep_uploading() -> None:
        with httpx.Client(timeout=60) as h:
            k = 0
            while not stop.is_set():
                r = h.put(url, content=client.report(k % 64, t).encode(), headers={"Content-Type": REPORT})
                if r.status_code == 201:
                    acked[0] += 1
                else:
                    assert r.status_code == 400 and r.json()["type"].endswith("reportRejected"), r.text
                    refused[0] += 1
                k += 1

    th = threading.Thread(target=keep_uploading, daemon=True)
    th.start()
    while acked[0] < 40:
        time.sleep(0.05)
    res = collect(task_path, timeout=300)  # interval [0, end of the current bucket): includes t
    finished_while_uploading = th.is_alive()
    while refused[0] < 5:  # uploads into the cut interval are refused now
        time.sleep(0.05)
    stop.set()
    th.join(60)
    assert finished_while_uploading and res.probabilities.size > 0
    tid = client.dap.task_id
    n_leader, states = db_counts(ldb, "leader", tid)
    n_helper, _ = db_counts(hdb, "helper", tid)
    assert n_leader == n_helper == acked[0] == states.get("done", 0)
