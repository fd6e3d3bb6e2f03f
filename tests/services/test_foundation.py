"""In-process tests of the foundation: task files, secrets separation, tokens, HPKE binding, wire format,
storage (migrations, replays, ledger), the client's message grouping and the shuffler's stripping."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from privstats.client import Client, estimate_from_dict, shuffle_user_messages
from privstats.privacy.guarantees import PureDP
from privstats.privacy.ledger import BudgetExceededError
from privstats.services import security as sec
from privstats.services.storage import SCHEMA_VERSION, Storage
from privstats.services.tasks import Task, load_secrets, load_task, new_task, write_task
from privstats.services.wire import WireError, pack_upload, unpack_upload


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'db.sqlite'}"


# ---------------------------------------------------------------------------------------------- task files
def test_shuffle_task_without_delta_is_refused_not_invented():
    # the shuffle model gives (epsilon, delta)-DP: a task spends delta only when its author passes one
    with pytest.raises(ValueError, match="delta"):
        new_task(
            "frequencies",
            model="shuffle",
            protocol="single-rr",
            params={"domain_size": 8},
            epsilon=1.0,
            delta=None,
            min_batch=200,
        )


@pytest.mark.parametrize(
    "model,protocol", [("local", "grr"), ("shuffle", "multi-hadamard"), ("secure", "dap-09+prio3")]
)
def test_public_task_file_holds_no_secret(tmp_path, model, protocol):
    secure = model == "secure"  # the secure model runs ecdf/quantiles/roc on a public grid, pure ε
    task, secrets = new_task(
        "ecdf" if secure else "frequencies",
        model=model,
        protocol=protocol,
        params={"bounds": [0, 1], "grid": 16} if secure else {"domain_size": 16},
        epsilon=1.0,
        delta=None if secure else 1e-6,
        min_batch=1000,
    )
    paths = write_task(task, secrets, tmp_path / "task.json")
    public = (tmp_path / "task.json").read_text()
    for party, s in secrets.items():
        for value in [*s.tokens.values(), *s.token_hashes.values(), s.hpke_private_key]:
            if value:
                assert value not in public, f"{party} secret leaked into task.json"
        assert stat.S_IMODE(os.stat(paths[party]).st_mode) == 0o600
    assert load_task(tmp_path / "task.json") == task
    expected_keys = {"local": set(), "shuffle": {"analyzer"}, "secure": {"leader", "helper"}}[model]
    assert set(task.hpke_keys) == expected_keys
    for role in expected_keys:  # each role's private key matches its public key
        sk = load_secrets(tmp_path / "task.json", role).private_key_bytes
        info = sec.hpke_info("t", task.id_bytes)
        assert sec.hpke_open(sk, sec.hpke_seal(task.hpke_public_key(role), b"m", info), info) == b"m"
    # clients hold the upload token only; servers hold hashes, never the tokens they check
    client = load_secrets(tmp_path / "task.json", "client")
    assert set(client.tokens) == {"upload"} and not client.hpke_private_key
    up_role = task.upload_role()
    assert load_secrets(tmp_path / "task.json", up_role).token_hashes["upload"] == sec.token_hash(
        client.tokens["upload"]
    )


def test_task_file_validation(tmp_path):
    task, _ = new_task(
        "frequencies",
        model="local",
        protocol="oue",
        params={"domain_size": 5},
        epsilon=1.0,
        min_batch=10,
        max_collections=4,
    )
    assert task.budget_value == PureDP(4.0) and task.guarantee_value == PureDP(1.0)
    good = task.to_dict()
    bad_cases = {
        "version": {**good, "version": 99},
        "task_id": {**good, "task_id": "zz"},
        "min_batch": {**good, "min_batch": 0},
        "model": {**good, "model": "central"},
        "unknown field": {**good, "surprise": 1},
        "missing field": {k: v for k, v in good.items() if k != "params"},
        "budget": {**good, "budget": {"kind": "nope"}},
    }
    for what, d in bad_cases.items():
        with pytest.raises(ValueError):
            Task.from_dict(d)
        p = tmp_path / f"{what}.json"
        p.write_text(json.dumps(d))
        with pytest.raises(ValueError, match=str(p.name)):
            load_task(p)
    with pytest.raises(ValueError, match="not found"):
        load_task(tmp_path / "absent.json")
    with pytest.raises(ValueError, match="domain"):
        new_task("frequencies", model="local", protocol="grr", params={}, epsilon=1.0, min_batch=10)
    with pytest.raises(ValueError, match="protocol"):
        new_task(
            "frequencies",
            model="local",
            protocol="bogus",
            params={"domain_size": 4},
            epsilon=1.0,
            min_batch=10,
        )
    with pytest.raises(ValueError, match="epsilon"):
        new_task(
            "frequencies", model="local", protocol="grr", params={"domain_size": 4}, epsilon=-1, min_batch=10
        )
    with pytest.raises(ValueError, match="urls"):
        new_task(
            "frequencies",
            model="local",
            protocol="grr",
            params={"domain_size": 4},
            epsilon=1,
            min_batch=10,
            urls={"shuffler": "http://x"},
        )


# ---------------------------------------------------------------------------------------------- security
def test_bearer_tokens():
    h = sec.token_hash("right")
    assert sec.check_bearer("Bearer right", h) == 200
    assert sec.check_bearer("bearer right", h) == 200
    for header, status in [
        (None, 401),
        ("", 401),
        ("Bearer", 401),
        ("Bearer ", 401),
        ("Basic right", 401),
        ("Bearer wrong", 403),
        ("Bearer righ", 403),
        ("Bearer right2", 403),
    ]:
        assert sec.check_bearer(header, h) == status, header
    assert sec.check_bearer("Bearer right", None) == 403


def test_hpke_binds_task_and_report_and_detects_tampering():
    sk, pk = sec.generate_keypair()
    t1, t2, r1, r2 = b"\1" * 16, b"\2" * 16, b"\3" * 16, b"\4" * 16
    ct = sec.hpke_seal(pk, b"share", sec.hpke_info("secure", t1, r1))
    assert sec.hpke_open(sk, ct, sec.hpke_info("secure", t1, r1)) == b"share"
    for info in [
        sec.hpke_info("secure", t2, r1),
        sec.hpke_info("secure", t1, r2),
        sec.hpke_info("shuffle", t1, r1),
        sec.hpke_info("secure", t1),
    ]:
        with pytest.raises(sec.HPKEError):
            sec.hpke_open(sk, ct, info)
    tampered = bytearray(ct)
    tampered[-1] ^= 1
    for bad in (bytes(tampered), ct[:-1], ct[:10], b""):
        with pytest.raises(sec.HPKEError):
            sec.hpke_open(sk, bad, sec.hpke_info("secure", t1, r1))
    other_sk, _ = sec.generate_keypair()
    with pytest.raises(sec.HPKEError):
        sec.hpke_open(other_sk, ct, sec.hpke_info("secure", t1, r1))
    # two encryptions of the same message are unlinkable (fresh encapsulated key each)
    a, b = sec.hpke_seal_many(pk, [b"x", b"x"], sec.hpke_info("shuffle", t1))
    assert a[:32] != b[:32] and a != b


# ---------------------------------------------------------------------------------------------- wire
def test_wire_format_refuses_malformed_bodies():
    ids = [bytes([i]) * 16 for i in range(3)]
    body = pack_upload(b"t" * 16, ids, [b"abcd"] * 3)
    assert unpack_upload(body, record_size=20) == (b"t" * 16, ids, [b"abcd"] * 3)
    for bad in (body[:-1], body + b"x", b"PSU2" + body[4:], body[:10], b""):
        with pytest.raises(WireError):
            unpack_upload(bad, record_size=20)
    with pytest.raises(WireError, match="24 bytes"):
        unpack_upload(body, record_size=24)
    with pytest.raises(WireError, match="too many"):
        unpack_upload(body, max_records=2)


# ---------------------------------------------------------------------------------------------- storage
def test_storage_migrations_replays_and_ledger(db):
    st = Storage(db)
    assert st.schema_version() == SCHEMA_VERSION
    st.close()
    st = Storage(db)  # reopening applies nothing twice
    assert st.schema_version() == SCHEMA_VERSION
    tid = b"T" * 16
    with st.transaction() as conn:
        new = st.insert_reports(conn, tid, [b"a" * 16, b"b" * 16, b"a" * 16], [b"1", b"2", b"3"])
    assert new == {b"a" * 16, b"b" * 16}
    with st.transaction() as conn:  # replay mixed with new ids: only the new one
        assert st.insert_reports(conn, tid, [b"b" * 16, b"c" * 16], [b"9", b"4"]) == {b"c" * 16}
    assert st.count_reports(tid) == 3
    assert sorted(b for chunk in st.iter_report_bodies(tid) for b in chunk) == [b"1", b"2", b"4"]
    # an insert rolled back with its transaction leaves nothing
    with pytest.raises(RuntimeError), st.transaction() as conn:
        st.insert_reports(conn, tid, [b"d" * 16], [b"5"])
        raise RuntimeError("abort")
    assert st.count_reports(tid) == 3
    # the ledger: refuses an overspend, records nothing, and survives a reopen
    st.ensure_budget(tid, PureDP(1.0))
    with st.transaction() as conn:
        st.spend(conn, tid, PureDP(0.6), "first")
    with pytest.raises(BudgetExceededError), st.transaction() as conn:
        st.spend(conn, tid, PureDP(0.6), "second")
    st.close()
    st = Storage(db)
    led = st.ledger(None, tid)
    assert led.entries == [("first", PureDP(0.6))]
    st.ensure_budget(tid, PureDP(5.0))  # an existing ledger keeps its total and spends
    assert st.ledger(None, tid).total == PureDP(1.0)


def test_storage_refuses_newer_schema_and_bad_urls(db):
    from privstats.services.storage import schema_version

    st = Storage(db)
    with st.transaction() as conn:
        conn.execute(schema_version.insert().values(version=SCHEMA_VERSION + 1))
    st.close()
    with pytest.raises(RuntimeError, match="newer"):
        Storage(db)
    for url in ("mysql://x/y", "not a url", 5):
        with pytest.raises(ValueError, match="db url"):
            Storage(url)


# ---------------------------------------------------------------------------------------------- client
def test_client_groups_each_users_messages():
    from privstats.engine import build_oracle

    oracle = build_oracle(
        "shuffle-hadamard",
        {
            "domain_size": 9,
            "n": 1000,
            "epsilon": 1.0,
            "delta": 1e-6,
            "k": 1,
            "rho": 3,
            "tau": 6,
            "b_prime": 16,
        },
    )
    values = np.arange(50) % 9
    grouped = shuffle_user_messages(oracle, values, rng=4)
    assert grouped.shape[:2] == (50, 4)
    # the same draws as the protocol's batch encoder: the states agree exactly
    flat = grouped.reshape(-1, grouped.shape[2])
    assert oracle.aggregate({"message": flat}) == oracle.protocol.aggregate(
        oracle.protocol.encode_batch(values, 4)
    )
    # each user's first message is its real one: its span contains the user's Hadamard index
    sum_oracle = build_oracle(
        "shuffle-sum",
        {"n": 1000, "epsilon": 1.0, "delta": 1e-6, "blanket": 3, "gamma": 0.25, "inputs": "bits"},
    )
    bits = shuffle_user_messages(sum_oracle, np.ones(20), rng=1)
    assert bits.shape == (20, 4) and np.all(bits[:, 0] == 1)


def test_client_needs_a_token_and_rebuilds_estimates(tmp_path):
    task, sec = new_task(
        "frequencies", model="local", protocol="grr", params={"domain_size": 4}, epsilon=1.0, min_batch=10
    )
    # public part only (signed, as write_task writes it): no token files
    (tmp_path / "task.json").write_text(task.to_json(sec["analyst"].integrity_key_bytes))
    c = Client("http://127.0.0.1:9", tmp_path / "task.json", retries=0)
    with pytest.raises(ValueError, match="token"):
        c.upload(c.encode([1, 2]))
    with pytest.raises(TypeError):
        c.upload([b"raw bytes"])
    with pytest.raises(ValueError):
        c.encode([7])  # outside the domain
    oracle = c.protocol
    est = oracle.estimate(oracle.simulate(np.arange(100) % 4, rng=0))
    back = estimate_from_dict(json.loads(json.dumps(est.to_dict())))
    np.testing.assert_array_equal(back.value, est.value)
    np.testing.assert_array_equal(back.stderr, est.stderr)
    assert back.guarantee == est.guarantee and back.n == est.n and back.protocol == "grr"


def test_shuffler_strips_report_ids_and_order(db, tmp_path):
    from privstats.services.shuffler import ShufflerRole
    from privstats.services.wire import pack_batch

    task, role_secrets = new_task(
        "frequencies",
        model="shuffle",
        protocol="single-rr",
        params={"domain_size": 8},
        epsilon=1.0,
        delta=1e-6,
        min_batch=200,
    )
    role = ShufflerRole(task, role_secrets["shuffler"], Storage(db))
    client = Client(None, task)
    reports = client.encode(np.arange(400) % 8, rng=0)
    assert role.ingest(client.upload_body(reports))["new"] == 400
    batch_id = os.urandom(16)
    with role.storage.transaction() as conn:
        assert role.storage.assign_batch(conn, task.id_bytes, batch_id, "shuffler") == 400
    msgs, n = role._shuffled_messages(batch_id)
    assert n == 400 and sorted(msgs) == sorted(r.payload for r in reports)
    body = pack_batch(task.id_bytes, batch_id, n, msgs)
    assert not any(r.report_id in body for r in reports)  # no report id leaves the shuffler
    upload_order = [r.payload for r in reports]
    assert msgs != upload_order  # permuted (fails with prob. 1/400!)
    positions = np.array([upload_order.index(m) for m in msgs])
    # the permutation is not close to the identity or a shift: no positional correlation
    assert abs(np.corrcoef(positions, np.arange(400))[0, 1]) < 0.2


def test_shuffler_cuts_bounded_batches_of_at_least_min_batch(db):
    from privstats.services.shuffler import ShufflerRole

    task, role_secrets = new_task(
        "frequencies",
        model="shuffle",
        protocol="single-rr",
        params={"domain_size": 8},
        epsilon=1.0,
        delta=1e-6,
        min_batch=100,
    )
    role = ShufflerRole(task, role_secrets["shuffler"], Storage(db), max_batch_messages=300)
    client = Client(None, task)
    role.ingest(client.upload_body(client.encode(np.arange(750) % 8, rng=0)))
    role._last_upload -= role.linger_seconds  # the uploads have stopped arriving
    sizes: list[int] = []

    def fake_forward(batch_id: bytes) -> bool:  # the analyzer acknowledges everything
        _msgs, n = role._shuffled_messages(batch_id)
        sizes.append(n)
        with role.storage.transaction() as conn:
            role.storage.finish_batch(conn, task.id_bytes, batch_id, erase_bodies=True)
        return True

    role.forward = fake_forward  # type: ignore[method-assign]
    assert role.step() == 3
    assert sizes == [250, 250, 250]  # bounded by 300, equal, each >= min_batch
    role.ingest(client.upload_body(client.encode(np.arange(50) % 8, rng=1)))
    role._last_upload -= role.linger_seconds
    assert role.step() == 0  # below min_batch: waits
    assert role.storage.count_reports(task.id_bytes, pending_only=True) == 50
    # while uploads are arriving, a pool that fits in one batch waits for them: a collection right
    # after a client's upload finished then sees all of it, not the first min_batch
    role.ingest(client.upload_body(client.encode(np.arange(150) % 8, rng=2)))
    assert role.step() == 0 and sizes == [250, 250, 250]
    role._last_upload -= role.linger_seconds
    assert role.step() == 1 and sizes[-1] == 200
    # a client trickling uploads holds a batch back for at most max_linger_seconds
    role.ingest(client.upload_body(client.encode(np.arange(150) % 8, rng=3)))
    assert role.step() == 0 and role._waiting_since is not None
    role._waiting_since -= role.max_linger_seconds  # ... later, uploads still arriving
    role.ingest(client.upload_body(client.encode(np.arange(5) % 8, rng=4)))
    assert role.step() == 1 and sizes[-1] == 155
    assert set(role.status()) == {"task_id", "role", "worker_running"}  # no counts over HTTP


def test_analyzer_keeps_valid_messages_around_junk(db):
    from privstats.services.shuffler import AnalyzerRole

    task, role_secrets = new_task(
        "frequencies",
        model="shuffle",
        protocol="single-rr",
        params={"domain_size": 8},
        epsilon=1.0,
        delta=1e-6,
        min_batch=100,
    )
    an = AnalyzerRole(task, role_secrets["analyzer"], Storage(db))
    good = [int(v).to_bytes(8, "little", signed=True) for v in np.arange(1000) % 8]
    junk = [(99).to_bytes(8, "little"), (-1).to_bytes(8, "little", signed=True), b"short"]
    state, bad = an._fold(good[:400] + junk[:2] + good[400:] + junk[2:])
    assert bad == 3 and state.n == 1000
    np.testing.assert_array_equal(state.counts, np.full(8, 125))


def test_collector_rebuilds_a_missing_state_through_the_engine(db):
    from sqlalchemy import delete

    from privstats.services.collector import Collector
    from privstats.services.storage import aggregates

    task, _ = new_task(
        "frequencies", model="local", protocol="oue", params={"domain_size": 12}, epsilon=1.0, min_batch=10
    )
    col = Collector(task, Storage(db))
    client = Client(None, task)
    for seed in range(3):
        col.ingest(client.upload_body(client.encode(np.arange(500) % 12, rng=seed)))
    state = col.state()
    assert state.n == 1500 and col.rebuild_state() == state
    with col.storage.transaction() as conn:
        conn.execute(delete(aggregates))
    assert Collector(task, Storage(db)).state() == state
