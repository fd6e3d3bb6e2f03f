"""Secure model through real leader and helper processes (privstats serve leader|helper).

Sizes: the default run sends 10^4 clients per statistic (HPKE sealing costs ~0.5 ms per report on
this shared 2-core machine); ``PRIVSTATS_SLOW_SERVICES=1`` runs 10^5.
"""

from __future__ import annotations

import base64
import threading
import time

import httpx
import numpy as np
import pytest
from conftest import SLOW, Server, free_port, make_task

from privstats.client import Client, ServiceError
from privstats.secure.leader_helper import encode_vectors, run_in_process
from privstats.services.secure_tasks import spec_of
from privstats.services.security import hpke_info, hpke_seal
from privstats.services.tasks import load_secrets, load_task

N = 100_000 if SLOW else 10_000


def _task(tmp, statistic="ecdf", *, epsilon="1.0", grid="64", min_batch="100", extra=(), name="task.json"):
    lp, hp = free_port(), free_port()
    path = make_task(
        tmp,
        "--statistic",
        statistic,
        "--model",
        "secure",
        "--bounds",
        "0",
        "1",
        "--grid",
        grid,
        "--epsilon",
        epsilon,
        "--min-batch",
        min_batch,
        "--leader",
        f"http://127.0.0.1:{lp}",
        "--helper",
        f"http://127.0.0.1:{hp}",
        *extra,
        name=name,
    )
    return path, lp, hp


def _start(servers, path, lp, hp, db_leader, db_helper):
    helper = servers("helper", path, db_helper, hp)
    leader = servers("leader", path, db_leader, lp)
    return leader, helper


def _sqlite(tmp, role):
    return f"sqlite:///{tmp / (role + '.sqlite')}"


def _cheat_reports(task, x: np.ndarray):
    """Reports for arbitrary contribution vectors, sealed like honest ones."""
    spec = spec_of(task)
    reps = encode_vectors(spec, x)
    from privstats.client import Report

    tid = task.id_bytes
    return [
        Report(
            r.report_id,
            hpke_seal(
                task.hpke_public_key("leader"), r.leader_share, hpke_info("secure-leader", tid, r.report_id)
            )
            + hpke_seal(
                task.hpke_public_key("helper"), r.helper_seed, hpke_info("secure-helper", tid, r.report_id)
            ),
        )
        for r in reps
    ]


def test_ecdf_and_quantiles_through_leader_and_helper(tmp_path, servers):
    path, lp, hp = _task(tmp_path)
    _start(servers, path, lp, hp, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"))
    x = np.random.default_rng(0).beta(2, 5, N)
    with Client(None, str(path)) as c:
        reps = c.encode(x)
        assert c.upload(reps) == N
        assert c.upload(reps[:500]) == 500  # a replayed upload is acknowledged, counted once
        cid = "collection-1"
        res = c.collect_secure(cid)
        again = c.collect_secure(cid)  # a retried collection: the same release
    spec = spec_of(load_task(str(path)))
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])
    assert res.estimate.n == N and res.estimate.details["n_invalid"] == 0
    assert np.array_equal(res.raw, again.raw)
    # the error is the distributed tree noise: each point within 5 SE of its exact variance
    assert np.all(np.abs(res.raw - exact) <= 5 * res.stderr + 1e-12)
    # the stderr is the in-process secure model's (same mechanism, two full noise shares)
    ref = run_in_process(spec, x[:1000], rng=1)
    assert np.allclose(res.stderr * N, ref.stderr * 1000)
    # quantiles are post-processing of the same release
    from privstats.services.secure_client import open_collection

    with Client(None, str(path)) as c:
        out = c._request(
            "POST",
            f"http://127.0.0.1:{lp}/tasks/{c.task.task_id}/collect",
            token=c._token("collect"),
            json={"collection_id": cid},
        )
    qs = open_collection(load_task(str(path)), out, q=[0.1, 0.5, 0.9], statistic="quantiles")
    cell_mass = float(np.max(np.diff(np.concatenate([[0.0], exact]))))
    for p, v in zip([0.1, 0.5, 0.9], qs.value, strict=True):
        # the released quantile's exact ECDF value is within the curve's 5-SE band of p, plus one grid cell
        assert abs(np.mean(x <= v) - p) < 5 * float(res.stderr.max()) + cell_mass


def test_roc_auc_through_leader_and_helper(tmp_path, servers):
    path, lp, hp = _task(tmp_path, "roc", epsilon="2.0")
    _start(servers, path, lp, hp, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"))
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, N)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)
    with Client(None, str(path)) as c:
        assert c.submit(s, labels=y) == N
        _fpr, _tpr, _thr, est = c.collect_secure()
    spec = spec_of(load_task(str(path)))
    # the AUC of the exact grid curves (what the unsmoothed release estimates without bias)
    from privstats.stats.distribution import _auc_terms

    pos = np.array([np.mean(s[y == 1] <= t) for t in spec.thresholds])
    neg = np.array([np.mean(s[y == 0] <= t) for t in spec.thresholds])
    auc_exact, _, _ = _auc_terms(pos, neg)
    assert abs(est.details["auc_raw"] - auc_exact) < 5 * est.stderr
    assert 0.7 < est.value < 0.95 and est.n is None


def test_malicious_clients_are_dropped_and_counted(tmp_path, servers):
    path, lp, hp = _task(tmp_path, epsilon="1e6", grid="16", min_batch="50")
    _start(servers, path, lp, hp, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"))
    task = load_task(str(path))
    spec = spec_of(task)
    x = np.random.default_rng(2).uniform(size=2000)
    L = spec.layout.length
    bad = np.zeros((4, L), dtype=np.int64)
    bad[0, 3] = 1000  # 1000 x a one-hot
    bad[1, [2, 7]] = 1  # two ones
    bad[2, 4] = -1  # a negative entry
    bad[3, [1, 5]] = [2, -1]  # sums to one
    with Client(None, str(path)) as c:
        honest = c.encode(x)
        cheats = _cheat_reports(task, bad)
        a, b = c.encode([0.1]), c.encode([0.9])
        from privstats.client import Report

        ll = len(a[0].payload) - 64
        mixed = Report(a[0].report_id, a[0].payload[:ll] + b[0].payload[ll:])  # helper part of another report
        assert c.upload(honest[:1000] + cheats + [mixed] + honest[1000:]) == 2005
        res = c.collect_secure()
    exact = np.array([np.mean(x <= t) for t in spec.thresholds])
    assert res.estimate.details["n_invalid"] == 5
    assert res.estimate.n == 2000
    assert np.allclose(res.raw, exact, atol=1e-6)


def test_refusals(tmp_path, servers):
    path, lp, hp = _task(tmp_path, grid="8", min_batch="20", extra=("--max-collections", "1"))
    leader, helper = _start(servers, path, lp, hp, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"))
    task = load_task(str(path))
    tid = task.task_id
    fwd = load_secrets(str(path), "leader").token("forward")
    with Client(None, str(path)) as c:
        reps = c.encode(np.random.default_rng(3).uniform(size=30))
        # wrong or missing upload token: refused, nothing stored
        r = httpx.post(
            f"{leader.url}/tasks/{tid}/reports",
            content=c.upload_body(reps),
            headers={"authorization": "Bearer nope"},
        )
        assert r.status_code == 403
        r = httpx.post(f"{leader.url}/tasks/{tid}/reports", content=c.upload_body(reps))
        assert r.status_code == 401
        # a truncated body: 400, nothing stored
        r = httpx.post(
            f"{leader.url}/tasks/{tid}/reports",
            content=c.upload_body(reps)[:-7],
            headers={"authorization": f"Bearer {c._token('upload')}"},
        )
        assert r.status_code == 400
        from privstats.services.aggregators import operator_progress

        assert operator_progress(_sqlite(tmp_path, "leader"), task) == {}  # read in the database
        assert set(c.status()) == {"task_id", "role", "budget_epsilon"}  # no count is served
        # the helper refuses the leader's endpoints without the server-to-server token
        assert httpx.put(f"{helper.url}/tasks/{tid}/batches/7").status_code == 401
        assert (
            httpx.put(
                f"{helper.url}/tasks/{tid}/batches/7", headers={"authorization": "Bearer x"}
            ).status_code
            == 403
        )
        auth = {"authorization": f"Bearer {fwd}"}
        # a job for a batch the leader never announced
        body = {
            "batch_id": 99,
            "report_ids": base64.b64encode(reps[0].report_id).decode(),
            "helper_cts": [base64.b64encode(reps[0].payload[-64:]).decode()],
            "d": base64.b64encode(bytes(8)).decode(),
        }
        r = httpx.post(f"{helper.url}/tasks/{tid}/jobs/j-unannounced/init", json=body, headers=auth)
        assert r.status_code == 409 and "announced" in r.text
        # below the minimum batch: both servers refuse, nothing charged
        assert c.upload(reps[:10]) == 10
        with pytest.raises(ServiceError) as e:
            c.collect_secure()
        assert e.value.code == "batch_too_small" and "10" not in str(e.value)
        assert "below the minimum batch" in str(e.value)
        r = httpx.post(
            f"{helper.url}/tasks/{tid}/batches/0/collect",
            json={"collection_id": "x", "n_valid": 10},
            headers=auth,
        )
        assert r.status_code == 400
        assert c.upload(reps) == 30
        res = c.collect_secure("first")
        assert res.estimate.n == 30
        # the helper refuses a second collection of the closed batch
        r = httpx.post(
            f"{helper.url}/tasks/{tid}/batches/0/collect",
            json={"collection_id": "other", "n_valid": 30},
            headers=auth,
        )
        assert r.status_code == 409
        # a replayed report: the leader acknowledges it and stores nothing; the helper rejects a job that
        # carries an id it has verified before
        assert c.upload(reps[:5]) == 5
        body = {
            "batch_id": 1,
            "report_ids": base64.b64encode(reps[0].report_id).decode(),
            "helper_cts": [base64.b64encode(reps[0].payload[-64:]).decode()],
            "d": base64.b64encode(bytes(8)).decode(),
        }
        httpx.put(f"{helper.url}/tasks/{tid}/batches/1", headers=auth)
        r = httpx.post(f"{helper.url}/tasks/{tid}/jobs/j-replay/init", json=body, headers=auth)
        assert r.status_code == 200 and base64.b64decode(r.json()["replay"]) == b"\x01"
        # the budget allows one collection
        more = c.encode(np.random.default_rng(4).uniform(size=25))
        assert c.upload(more) == 25
        from privstats.privacy.ledger import BudgetExceededError

        with pytest.raises(BudgetExceededError):
            c.collect_secure("second")
        assert c.collect_secure("first").estimate.n == 30  # the first release can still be fetched


def _upload_until(client, reports, acked, stop_at: threading.Event, batch=250):
    for i in range(0, len(reports), batch):
        chunk = reports[i : i + batch]
        try:
            if client.upload(chunk) == len(chunk):  # one request per chunk: acknowledged as a whole
                acked.extend(r.report_id for r in chunk)
        except Exception:
            stop_at.set()
            return
    stop_at.set()


def _crash_run(tmp_path, victim: str, db_leader: str, db_helper: str, n: int):
    path, lp, hp = _task(tmp_path, grid="16", min_batch="100")
    helper = Server("helper", path, db_helper, hp).start()
    leader = Server("leader", path, db_leader, lp).start()
    try:
        x = np.random.default_rng(5).uniform(size=n)
        # the leader's clients stop at the first failed request; with the helper down uploads go on
        with Client(None, str(path), retries=0 if victim == "leader" else 6) as c:
            reps = c.encode(x)
            acked: list[bytes] = []
            done = threading.Event()
            t = threading.Thread(target=_upload_until, args=(c, reps, acked, done))
            t.start()
            deadline = time.monotonic() + 120
            while len(acked) < n // 3 and not done.is_set() and time.monotonic() < deadline:
                time.sleep(0.05)
            (leader if victim == "leader" else helper).kill()  # SIGKILL mid-upload
            t.join()
        if victim == "leader":
            assert 0 < len(acked) < n, "the kill should land in the middle of the uploads"
            leader = Server("leader", path, db_leader, lp).start()
        else:
            assert len(acked) == n, "uploads go on while the helper is down (the leader verifies later)"
            helper = Server("helper", path, db_helper, hp).start()
        with Client(None, str(path)) as c:
            assert c.upload(reps) == n  # re-upload everything
            res = c.collect_secure()
        assert res.estimate.n == n and res.estimate.details["n_invalid"] == 0
        spec = spec_of(load_task(str(path)))
        exact = np.array([np.mean(x <= t) for t in spec.thresholds])
        assert np.all(np.abs(res.raw - exact) <= 5 * res.stderr + 1e-12)
    finally:
        codes = [s.stop() for s in (leader, helper)]
    assert codes == [0, 0]


# kill -9 of either server mid-upload, on both databases
VICTIMS = ["leader", "helper"]
CRASH_N = 100_000 if SLOW else 20_000


@pytest.mark.parametrize("victim", VICTIMS)
def test_sigkill_mid_upload_sqlite(tmp_path, servers, victim):
    _crash_run(tmp_path, victim, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"), CRASH_N)


@pytest.mark.parametrize("victim", VICTIMS)
def test_sigkill_mid_upload_postgres(tmp_path, servers, victim, postgres_server):
    _, createdb = postgres_server
    _crash_run(tmp_path, victim, createdb(), createdb(), CRASH_N)


def test_hosmer_lemeshow_through_leader_and_helper(tmp_path, servers):
    """HL is a post-processing of the two class curves: its error matches the in-process secure model's."""
    from privstats.secure.hosmer_lemeshow import hl_from_class_counts

    path, lp, hp = _task(tmp_path, "hosmer_lemeshow", epsilon="1.0", grid="64")
    _start(servers, path, lp, hp, _sqlite(tmp_path, "leader"), _sqlite(tmp_path, "helper"))
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, N)
    y = (rng.uniform(size=N) < np.clip(1.15 * p, 0, 1)).astype(int)  # miscalibrated: H far from 0
    with Client(None, str(path)) as c:
        assert c.submit(p, labels=y) == N
        est = c.collect_secure()
    spec = spec_of(load_task(str(path)))
    # the noise-free value of the same post-processing (zero noise covariance)
    cells = spec.cells(p, y).ravel()
    k = spec.internal.size
    hist = np.bincount(cells, minlength=2 * (k + 1))
    pos, neg = np.cumsum(hist[: k + 1]), np.cumsum(hist[k + 1 :])
    zero = np.zeros((k + 1, k + 1))
    exact = hl_from_class_counts(pos, neg, zero, zero, spec.internal, 0.0, bootstrap=100, rng=0)["H"]
    assert abs(est.details["unbiased"] - exact) < 5 * est.stderr
    assert est.details["p_value"] < 0.01 and est.model == "secure" and est.epsilon == 1.0
    # the in-process secure model on the same data has the same law: its stderr agrees
    ref = privstats_hl(p, y, spec)
    assert 0.7 < est.stderr / ref.stderr < 1.4


def privstats_hl(p, y, spec):
    import privstats

    return privstats.hosmer_lemeshow(y, p, epsilon=spec.epsilon, model="secure", depth=6, rng=11)
