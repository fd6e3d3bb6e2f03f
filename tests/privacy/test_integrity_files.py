"""Issue 22, item 6: every saved file carries a keyed MAC; the audit's edits are refused by default."""

import json
import os
import stat

import numpy as np
import pytest

from privstats.local import GRR
from privstats.local.base import pack_versioned, unpack_versioned
from privstats.privacy import PureDP
from privstats.privacy.integrity import IntegrityError, default_key, load_state, new_key, save_state
from privstats.privacy.ledger import BudgetLedger


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVSTATS_CONFIG_DIR", str(tmp_path / "cfg"))


def test_default_key_is_created_once_private():
    k = default_key()
    path = os.path.join(os.environ["PRIVSTATS_CONFIG_DIR"], "integrity.key")
    assert len(k) == 32 and default_key() == k
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(IntegrityError, match="private"):
        default_key()


# ------------------------------------------------------------------------------------------- ledgers
def _saved_ledger() -> dict:
    led = BudgetLedger(PureDP(1.0))
    led.spend(PureDP(0.5), "a")
    led.spend(PureDP(0.5), "b")
    return json.loads(led.to_json())  # the default way: signed with the owner's default key


@pytest.mark.parametrize("edit", ["total", "drop", "zero"])
def test_default_saved_ledger_edits_are_refused(edit):
    doc = _saved_ledger()
    assert "hmac" in doc
    assert BudgetLedger.from_json(json.dumps(doc)).spent == PureDP(1.0)
    if edit == "total":
        doc["total"]["epsilon"] = 5.0
    elif edit == "drop":
        doc["entries"] = doc["entries"][:1]
    else:
        doc["entries"][0]["guarantee"]["epsilon"] = 0.0
    with pytest.raises(IntegrityError, match="HMAC"):
        BudgetLedger.from_json(json.dumps(doc))
    # forensics only: the unverified read shows the edit
    assert BudgetLedger.from_json(json.dumps(doc), verify=False) is not None


def test_ledger_without_hmac_is_refused_with_or_without_key():
    key = BudgetLedger.new_key()
    doc = json.loads(BudgetLedger(PureDP(1.0)).to_json(key))
    del doc["hmac"]
    for k in (None, key):
        with pytest.raises(IntegrityError, match="no hmac"):
            BudgetLedger.from_json(json.dumps(doc), key=k)


# ------------------------------------------------------------------------------------- states
def _edit_state(blob: bytes, header_edit=None, counts=None) -> bytes:
    """The signed blob with its state body edited and the old MAC kept."""
    head, body = blob[:38], blob[38:]
    header, raw = unpack_versioned(body, b"PSCS", 1, "CountState") if body[:4] == b"PSCS" else (None, None)
    assert header is not None, body[:4]
    if header_edit:
        header.update(header_edit)
    if counts is not None:
        raw = np.asarray(counts, dtype="<i8").tobytes()
        header["size"] = len(counts)
    return head + pack_versioned(b"PSCS", 1, header, raw)


def test_saved_state_edits_are_refused():
    oracle = GRR(4, epsilon=1.0)
    state = oracle.aggregate(oracle.encode_batch(np.arange(200) % 4, rng=0))
    blob = save_state(state)
    assert load_state(blob) == state
    raised = {**state.params, "epsilon": 5.0}
    edits = [
        _edit_state(blob, {"params": raised}),  # stderr shrinks 5x
        _edit_state(blob, counts=[1, 2, 3, 4]),  # counts not summing to n
        _edit_state(blob, {"n": 10**18}),
    ]
    for bad in edits:
        assert state.from_bytes(bad[38:]) != state  # the unsigned form accepts each edit
        with pytest.raises(IntegrityError, match="MAC"):
            load_state(bad)
    with pytest.raises(IntegrityError, match="no MAC"):
        load_state(state.to_bytes())  # an unsigned state
    with pytest.raises(IntegrityError, match="MAC"):
        load_state(blob, key=new_key())  # another owner's key
    # counts not summing to n are refused even when the file is read without its MAC
    with pytest.raises(IntegrityError, match="sum"):
        load_state(edits[1], verify=False)


def test_saved_state_file_round_trip(tmp_path):
    oracle = GRR(4, epsilon=1.0)
    state = oracle.aggregate(oracle.encode_batch([0, 1, 2], rng=0))
    save_state(state, tmp_path / "s.bin")
    assert load_state(tmp_path / "s.bin") == state


# ---------------------------------------------------------------------------------- report files
def test_report_file_rewritten_by_the_public_writer_is_refused(tmp_path):
    pytest.importorskip("pyarrow")
    from privstats.engine import ReportWriter, aggregate
    from privstats.engine.format import ReportIntegrityError, iter_report_batches, read_report_metadata

    honest = GRR(8, epsilon=1.0)
    path = tmp_path / "r.parquet"
    with ReportWriter(path, honest) as w:
        w.write(honest.encode_batch(np.arange(500) % 8, rng=0))
    assert aggregate(honest, path).n == 500
    reports = next(iter_report_batches(path, honest))
    claimed = GRR(8, epsilon=5.0)  # same reports, ε raised, rewritten by someone without the owner's key
    with ReportWriter(path, claimed, key=new_key()) as w:
        w.write(reports)
    with pytest.raises(ReportIntegrityError, match="MAC"):
        read_report_metadata(path)
    with pytest.raises(ReportIntegrityError, match="MAC"):
        aggregate(claimed, path)
    assert isinstance(ReportIntegrityError("x"), IntegrityError)
    assert read_report_metadata(path, verify=False)["params"]["epsilon"] == 5.0  # forensics


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_report_file_counted_twice_is_refused(tmp_path, how):
    pytest.importorskip("pyarrow")
    import shutil

    from privstats.engine import ReportWriter, aggregate
    from privstats.engine.format import ReportIntegrityError, read_report_metadata

    oracle = GRR(8, epsilon=1.0)
    data = tmp_path / "data"
    data.mkdir()
    with ReportWriter(data / "a.parquet", oracle) as w:
        w.write(oracle.encode_batch(np.arange(300) % 8, rng=0))
    with ReportWriter(data / "b.parquet", oracle) as w:
        w.write(oracle.encode_batch(np.arange(100) % 8, rng=1))
    assert aggregate(oracle, data).n == 400
    if how == "copy":
        shutil.copy(data / "a.parquet", data / "c.parquet")
    else:
        os.symlink(data / "a.parquet", data / "c.parquet")
    with pytest.raises(ReportIntegrityError, match="counted once"):
        read_report_metadata(data)
    with pytest.raises(ReportIntegrityError, match="counted once"):
        aggregate(oracle, data)


# ------------------------------------------------------------------------------------ task files
def _task(tmp_path):
    from privstats.services.tasks import new_task, write_task

    task, secrets = new_task(
        "frequencies", model="local", protocol="grr", params={"domain_size": 4}, epsilon=1.0, min_batch=10
    )
    write_task(task, secrets, tmp_path / "task.json")
    return tmp_path / "task.json", secrets


@pytest.mark.parametrize("edit", ["epsilon", "max_collections", "mac_removed"])
def test_task_file_edits_are_refused(tmp_path, edit):
    from privstats.services.tasks import load_task

    path, secrets = _task(tmp_path)
    doc = json.loads(path.read_text())
    assert load_task(path).budget["epsilon"] == 1.0
    if edit == "epsilon":
        doc["guarantee"]["epsilon"] = 5.0
        doc["budget"]["epsilon"] = 5.0
        doc["params"]["epsilon"] = 5.0
    elif edit == "max_collections":
        doc["budget"]["epsilon"] = 1000.0
    else:
        del doc["mac"]
    path.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError):
        load_task(path)  # the analyst's key next to it
    with pytest.raises(IntegrityError):
        load_task(path, key=secrets["collector"].integrity_key_bytes)  # what `privstats serve` does
    assert load_task(path, verify=False).budget["epsilon"] >= 1.0  # forensics


def test_task_clients_hold_no_key_but_need_the_mac(tmp_path):
    from privstats.client import Client
    from privstats.services.tasks import load_task, secrets_path

    path, secrets = _task(tmp_path)
    assert secrets["client"].integrity_key is None
    assert all(secrets[p].integrity_key for p in ("analyst", "collector"))
    for party in ("analyst", "collector"):
        secrets_path(path, party).unlink()
    with pytest.raises(IntegrityError, match="no integrity key"):
        load_task(path)
    assert Client(None, path).task.task_id == secrets["client"].task_id
    doc = json.loads(path.read_text())
    del doc["mac"]
    path.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError, match="no MAC"):
        Client(None, path)


def test_serve_refuses_an_edited_task_file_before_starting(tmp_path):
    pytest.importorskip("fastapi")
    from privstats.services.app import build_app, serve
    from privstats.services.tasks import load_secrets, load_task

    path, secrets = _task(tmp_path)
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    app = build_app("collector", load_task(path), load_secrets(path, "collector"), db)
    from sqlalchemy import select

    from privstats.services.storage import budget

    with app.state.role.storage.read() as conn:
        raw = conn.execute(select(budget.c.ledger)).scalar()
    # the services' durable ledger is signed with the task's integrity key (the role's secrets)
    assert BudgetLedger.from_json(raw, key=secrets["collector"].integrity_key_bytes).total == PureDP(1.0)
    with pytest.raises(IntegrityError):
        BudgetLedger.from_json(
            raw.replace('"epsilon": 1.0', '"epsilon": 5.0'), key=secrets["collector"].integrity_key_bytes
        )
    doc = json.loads(path.read_text())
    doc["budget"]["epsilon"] = 1000.0  # max_collections 1 -> 1000
    path.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError):
        serve("collector", str(path), db=db, port=9)  # refused before any socket is opened


def test_services_stored_state_edits_are_refused(tmp_path):
    pytest.importorskip("sqlalchemy")
    from sqlalchemy import update

    from privstats.client import Client
    from privstats.services.collector import STATE_NAME, Collector
    from privstats.services.storage import Storage, aggregates
    from privstats.services.tasks import new_task

    task, _ = new_task(
        "frequencies", model="local", protocol="grr", params={"domain_size": 4}, epsilon=1.0, min_batch=10
    )
    storage = Storage(f"sqlite:///{tmp_path / 'c.sqlite'}")
    col = Collector(task, storage)
    dev = Client(None, task)
    col.ingest(dev.upload_body(dev.encode([1] * 20, rng=0)))
    good = col.state()
    assert good.n == 20
    with storage.read() as conn:
        stored = conn.execute(aggregates.select()).first().state
    edits = [
        {"n_reports": 10**18},  # the count
        {
            "state": stored[:32]
            + _edit_state(b"\0" * 38 + good.to_bytes(), {"params": {**good.params, "epsilon": 5.0}})[38:]
        },
    ]
    for values in edits:
        with storage.transaction() as conn:
            conn.execute(update(aggregates).where(aggregates.c.name == STATE_NAME).values(**values))
        with pytest.raises(IntegrityError, match="MAC"):
            col.collect("c")
        with storage.transaction() as conn:  # restore
            conn.execute(update(aggregates).values(n_reports=20, state=stored))
    assert col.collect("c")["n"] == 20
