"""The leader's driver keeps two aggregation jobs in flight while uploads arrive."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("fastapi")

from inproc import make_pair


def test_a_job_signalled_while_one_runs_starts_at_once(tmp_path):
    """With two workers, a full job's worth of uploads signalled while job 1 runs becomes job 2 and
    runs to the end while job 1 is still in flight (job 1 waits for that, with a timeout that fails
    the test: a driver that waited for job 1 before looking for new jobs would never start job 2)."""
    from privstats.services.dap.client import DapClient
    from privstats.services.dap.leader import Driver

    pair = make_pair(tmp_path)
    try:
        driver = Driver(pair.lctx, job_size=4, workers=2)
        driver.client.close()
        driver.client = pair.helper
        client = DapClient(pair.task, http=pair.leader)
        values = np.random.default_rng(3).uniform(0, 1, size=8)
        assert client.upload(values[:4]) == 4
        assert pair.lctx.store.create_jobs(4, min_size=4) == 1

        first_started, second_done = threading.Event(), threading.Event()
        order: list[str] = []
        real_run_job = driver.run_job

        def run_job(job_id: bytes) -> None:
            if not order:
                order.append("job 1 starts")
                first_started.set()
                if not second_done.wait(30):
                    raise AssertionError("job 2 did not run while job 1 was in flight")
                real_run_job(job_id)
                order.append("job 1 done")
            else:
                order.append("job 2 starts")
                real_run_job(job_id)
                order.append("job 2 done")
                second_done.set()

        driver.run_job = run_job  # type: ignore[method-assign]
        errors: list[BaseException] = []

        def drive() -> None:
            try:
                driver._run_jobs()
            except BaseException as exc:  # re-raised in the test's thread
                errors.append(exc)

        thread = threading.Thread(target=drive)
        thread.start()
        assert first_started.wait(30)
        assert client.upload(values[4:]) == 4
        driver.uploaded(4)  # what the upload path tells the driver after its commit
        thread.join(60)
        assert not thread.is_alive() and not errors, errors
        assert order == ["job 1 starts", "job 2 starts", "job 2 done", "job 1 done"]
        assert pair.lctx.store.report_states() == {"done": 8}
        driver.pool.shutdown()
    finally:
        pair.close()
