"""Issue 22, items 2 and 4 (in process: the roles' logic and their FastAPI apps, no server processes).

* No exact count leaves a service: statuses carry none (they are identical before and after reports
  arrive), a refusal below the minimum batch has one text and status whatever the count, an
  analyst-chosen ``min_reports`` threshold is refused, and a secure add-remove collection has no n.
* The shuffle analyzer counts reports itself from the well-formed messages it decrypts and does not
  apply a batch below the minimum; the shuffler takes exactly m messages per report and a report id
  once; a malicious client moves an item by exactly one report of m crafted messages (README).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient

from privstats.client import Client, estimate_from_dict
from privstats.services.storage import Storage
from privstats.services.tasks import new_task
from privstats.services.wire import WireError, pack_batch, pack_upload, record_layout

COUNT_KEYS = {"n_reports", "n_messages", "dropped_messages", "pending_reports", "stored_report_ids"}


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVSTATS_CONFIG_DIR", str(tmp_path / "cfg"))


def _db(tmp_path, name: str) -> str:
    return f"sqlite:///{tmp_path / (name + '.sqlite')}"


# ------------------------------------------------------------------------------------------ item 2
def test_collector_refusal_is_the_same_for_1_and_min_minus_1_reports(tmp_path):
    from privstats.services.collector import create_app

    task, secrets = new_task(
        "frequencies", model="local", protocol="grr", params={"domain_size": 4}, epsilon=1.0, min_batch=10
    )
    app = create_app(task, secrets["collector"], Storage(_db(tmp_path, "c")))
    dev = Client(None, task)
    up = {"Authorization": f"Bearer {secrets['client'].token('upload')}"}
    col = {"Authorization": f"Bearer {secrets['analyst'].token('collect')}"}
    base = f"/tasks/{task.task_id}"
    answers, statuses = [], []
    with TestClient(app) as http:
        statuses.append(http.get(f"{base}/status", headers=col).json())
        for n_new in (1, 8):  # 1 report, then min_batch - 1 = 9
            r = http.post(
                f"{base}/reports", content=dev.upload_body(dev.encode([1] * n_new, rng=0)), headers=up
            )
            assert r.status_code == 200
            resp = http.post(f"{base}/collect", json={"collection_id": f"c{n_new}"}, headers=col)
            answers.append((resp.status_code, resp.json()))
            statuses.append(http.get(f"{base}/status", headers=col).json())
        # an analyst-chosen threshold would find the count by bisection: refused outright
        r = http.post(f"{base}/collect", json={"collection_id": "t", "min_reports": 5}, headers=col)
        assert r.status_code == 400 and "bisection" in r.json()["detail"]["message"]
        # at min_batch the collection goes through (n is public under replace neighbours)
        http.post(f"{base}/reports", content=dev.upload_body(dev.encode([2], rng=1)), headers=up)
        done = http.post(f"{base}/collect", json={"collection_id": "ok"}, headers=col)
        assert done.status_code == 200 and done.json()["n"] == 10
    assert answers[0] == answers[1], answers  # same status, same text at 1 and at 9 reports
    assert answers[0][0] == 409 and answers[0][1]["detail"]["error"] == "batch_too_small"
    assert answers[0][1]["detail"]["message"] == "the batch is below the minimum batch; nothing was released"
    assert statuses[0] == statuses[1] == statuses[2]  # the status does not move with the count
    assert not COUNT_KEYS & set(statuses[0])


def _shuffle_task(protocol: str = "single-rr", min_batch: int = 1000, domain: int = 16):
    return new_task(
        "frequencies",
        model="shuffle",
        protocol=protocol,
        params={"domain_size": domain},
        epsilon=1.0,
        delta=1e-6,
        min_batch=min_batch,
    )


def _roles(tmp_path, task, secrets):
    from privstats.services.shuffler import AnalyzerRole, ShufflerRole

    shuffler = ShufflerRole(task, secrets["shuffler"], Storage(_db(tmp_path, "s")), linger_seconds=0)
    analyzer = AnalyzerRole(task, secrets["analyzer"], Storage(_db(tmp_path, "a")))

    def forward(batch_id: bytes) -> bool:  # the shuffler's forward, in process
        msgs, n = shuffler._shuffled_messages(batch_id)
        analyzer.receive(pack_batch(task.id_bytes, batch_id, n, msgs))
        with shuffler.storage.transaction() as conn:
            shuffler.storage.finish_batch(conn, task.id_bytes, batch_id, erase_bodies=True)
        return True

    shuffler.forward = forward  # type: ignore[method-assign]
    return shuffler, analyzer


def test_shuffle_statuses_do_not_move_with_the_count(tmp_path):
    task, secrets = _shuffle_task(min_batch=50)
    shuffler, analyzer = _roles(tmp_path, task, secrets)
    before = (shuffler.status(), analyzer.status())
    dev = Client(None, task)
    shuffler.ingest(dev.upload_body(dev.encode(np.arange(40) % 16, rng=0)))
    middle = (shuffler.status(), analyzer.status())
    shuffler.ingest(dev.upload_body(dev.encode(np.arange(60) % 16, rng=1)))
    assert shuffler.step() == 1
    after = (shuffler.status(), analyzer.status())
    assert before == middle == after
    assert not COUNT_KEYS & (set(before[0]) | set(before[1]))


# ------------------------------------------------------------------------------------------ item 4
def _sealed(task, rows: np.ndarray, m: int) -> list[bytes]:
    """Payloads of len(rows) // m reports whose messages are the given rows (a malicious client)."""
    from privstats.services.security import hpke_info, hpke_seal_many
    from privstats.services.tasks import build_protocol

    proto = build_protocol(task)
    layout = record_layout(proto)
    flat = layout.pack({next(iter(proto.report_fields)): rows})
    cts = hpke_seal_many(
        task.hpke_public_key("analyzer"), (r.tobytes() for r in flat), hpke_info("shuffle", task.id_bytes)
    )
    return [b"".join(cts[i * m : (i + 1) * m]) for i in range(len(cts) // m)]


def test_analyzer_counts_reports_itself_and_refuses_small_batches(tmp_path):
    from privstats.services.shuffler import operator_counts

    task, secrets = _shuffle_task(min_batch=1000)
    _, analyzer = _roles(tmp_path, task, secrets)
    dev = Client(None, task)
    ct = len(dev.encode([0], rng=0)[0].payload)
    # a 3-report batch of genuine messages: below min_batch, recorded, not applied
    three = [r.payload for r in dev.encode([1, 2, 3], rng=1)]
    assert analyzer.receive(pack_batch(task.id_bytes, b"a" * 16, 3, three))["applied"] is False
    # 1000 undecryptable messages claiming 1000 reports: the analyzer counts 0
    junk = [bytes([i % 251]) * ct for i in range(1000)]
    assert analyzer.receive(pack_batch(task.id_bytes, b"b" * 16, 1000, junk))["applied"] is False
    assert operator_counts(analyzer.storage, task)["n_reports"] == 0
    # 1100 genuine + 100 junk messages claiming 1200 reports: 1100 counted, not 1200
    good = [r.payload for r in dev.encode(np.arange(1100) % 16, rng=2)]
    assert analyzer.receive(pack_batch(task.id_bytes, b"c" * 16, 1200, good + junk[:100]))["applied"] is True
    assert operator_counts(analyzer.storage, task)["n_reports"] == 1100
    est = estimate_from_dict(analyzer.collect("x")["estimate"])
    assert est.n == 1100
    # a header whose count does not match its length is refused whole
    with pytest.raises(WireError):
        analyzer.receive(pack_batch(task.id_bytes, b"d" * 16, 5, good[:4]))


def test_shuffler_takes_exactly_m_messages_per_report_and_an_id_once(tmp_path):
    task, secrets = _shuffle_task("multi-hadamard", min_batch=1000)
    shuffler, _ = _roles(tmp_path, task, secrets)
    m = shuffler.m
    dev = Client(None, task)
    reps = dev.encode([3, 4], rng=0)
    ct = len(reps[0].payload) // m
    for extra in (ct, -ct):  # one message more, one fewer
        bad = pack_upload(
            task.id_bytes,
            [b"x" * 16],
            [reps[0].payload[:extra] if extra < 0 else reps[0].payload + reps[0].payload[:ct]],
        )
        with pytest.raises(WireError):
            shuffler.ingest(bad)
    twice = pack_upload(task.id_bytes, [reps[0].report_id] * 2, [reps[0].payload, reps[1].payload])
    assert shuffler.ingest(twice) == {"acknowledged": 2, "new": 1, "duplicates": 1}
    assert shuffler.ingest(dev.upload_body(reps))["new"] == 1  # reps[0] again: a replay
    assert shuffler.storage.count_reports(task.id_bytes) == 2


def test_a_malicious_hadamard_client_moves_an_item_by_one_report_of_m_messages(tmp_path):
    """README: one report is m = k + ρ messages; a message whose kernel holds item x adds exactly 1 to
    x's estimate (an honest report adds 1 to each item it holds), so a malicious report adds at most m.
    40 clients that send m such messages each, replay their ids with more and oversize their records:
    the item moves by 40 m (within 5 SE of the estimate), no more."""
    task, secrets = _shuffle_task("multi-hadamard", min_batch=1000)
    shuffler, analyzer = _roles(tmp_path, task, secrets)
    proto = shuffler.oracle.protocol
    m, width = shuffler.m, 1 + proto.m
    dev = Client(None, task)
    values = np.random.default_rng(5).integers(0, 16, 1000)
    values[values == 7] = 6  # item 7 held by nobody
    shuffler.ingest(dev.upload_body(dev.encode(values, rng=6)))
    rows = np.zeros((40 * m, width), dtype=np.uint32)
    rows[:, 0], rows[:, 1] = 1, 7 + 1  # span {0, j}: votes for item 7 only (Hadamard index j = x + 1)
    evil = _sealed(task, rows, m)
    ids = [bytes([200, i]) * 8 for i in range(40)]
    assert shuffler.ingest(pack_upload(task.id_bytes, ids, evil))["new"] == 40
    assert shuffler.ingest(pack_upload(task.id_bytes, ids, evil[::-1]))["new"] == 0  # replays: nothing
    with pytest.raises(WireError):  # 2m messages in one report: refused
        shuffler.ingest(pack_upload(task.id_bytes, [b"e" * 16], [evil[0] + evil[1]]))
    assert shuffler.step() == 1
    est = estimate_from_dict(analyzer.collect("x")["estimate"])
    assert est.n == 1040  # the analyzer's own count: 1040 reports of m messages
    shift = est.value[7] - 0.0
    assert abs(shift - 40 * m) <= 5 * est.stderr[7], (shift, m, est.stderr[7])
    assert abs(shift - 40) > 5 * est.stderr[7]  # far more than 40 honest reports: README states m per client
