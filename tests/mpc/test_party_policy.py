"""A party's own policy (numpy + SQLite only: runs in the main suite too)."""

import dataclasses

import numpy as np
import pytest

from privstats.services.party.policy import PartyPolicy, PolicyError
from privstats.services.party.task import new_pairs_task, read_pairs_task, write_pairs_task
from privstats.ustat.mpc.circuit import JobSpec


@pytest.fixture
def task():
    return new_pairs_task("auc", epsilon=1.0, bounds=[(-8, 8)], ties="zero")


def _policy(task, tmp_path, role="left", n=10):
    t, sec = task
    return PartyPolicy(t, role, sec[role]["token"], tmp_path / f"{role}.db", n_users=n)


def _job(t, job_id="j0", rows=None, **change):
    rows = [[0, -1], [1, -1]] if rows is None else rows
    h = {"op": "job", **t.job_header(), "job_id": job_id, "m": len(rows), "rows": rows}
    if change:
        h["outputs"] = [{**h["outputs"][0], **change}]
    return h


def _check(pol, h):
    return pol.check(h, JobSpec.from_header(h), h["m"])


def test_refuses_parameters_that_differ_from_its_task(task, tmp_path):
    t, sec = task
    pol = _policy(task, tmp_path)
    for change in ({"mechanism": "none"}, {"pair_epsilon": 60.0}, {"kernel": "equal"}):
        with pytest.raises(PolicyError, match="differs from this party's task"):
            _check(pol, _job(t, **change))
    with pytest.raises(PolicyError, match="task_id"):
        _check(pol, {**_job(t), "task_id": "other"})
    other = dataclasses.replace(t, bounds=[[-100.0, 100.0]], P=3)  # an edited copy of the same task
    with pytest.raises(PolicyError, match="task_digest"):
        _check(pol, {**_job(t), "task_digest": other.digest()})
    values_job = {k: v for k, v in _job(t).items() if k != "rows"}
    with pytest.raises(PolicyError, match="never values"):
        _check(pol, values_job)
    assert _check(pol, _job(t)) is None  # the task's own parameters pass
    assert pol.authenticate({"token": sec["left"]["token"]})
    assert not pol.authenticate({"token": sec["right"]["token"]}) and not pol.authenticate({})


def test_pairs_beyond_the_plan_are_refused_durably(task, tmp_path):
    t, _ = task
    pol = _policy(task, tmp_path)
    h = _job(t, "j0")
    _check(pol, h)
    pol.reserve(h)
    pol.done(h, [b"meta", b"chunk"])
    assert _check(pol, h) == [b"meta", b"chunk"]  # the same job id: the stored release, no new noise
    with pytest.raises(PolicyError, match="P = 1"):  # a repeat of user 0 under a new job id
        _check(pol, _job(t, "j1", rows=[[0, -1]]))
    with pytest.raises(PolicyError, match="other pairs"):
        _check(pol, _job(t, "j0", rows=[[5, -1]]))
    _check(pol, _job(t, "j2", rows=[[2, -1], [3, -1]]))  # fresh users are fine
    h3 = _job(t, "j3", rows=[[4, -1]])
    pol.reserve(h3)  # reserved, then the process dies mid-run
    reopened = _policy(task, tmp_path)
    assert reopened.pairs_of(0) == 1 and reopened.pairs_of(4) == 1 and reopened.pairs_of(5) == 0
    with pytest.raises(PolicyError, match="interrupted"):
        _check(reopened, h3)
    with pytest.raises(PolicyError, match="P = 1"):
        _check(reopened, _job(t, "j4", rows=[[1, -1]]))
    rows = reopened.db.execute("SELECT job_id, slot0, slot1 FROM comparisons ORDER BY job_id").fetchall()
    assert rows == [("j0", 0, -1), ("j0", 1, -1), ("j3", 4, -1)]


def test_layout_checks(task, tmp_path):
    t, _ = task
    pol = _policy(task, tmp_path)
    with pytest.raises(PolicyError, match="own slot"):
        _check(pol, _job(t, rows=[[-1, 3]]))
    with pytest.raises(PolicyError, match="user indices"):
        _check(pol, _job(t, rows=[[10, -1]]))
    tv, sv = new_pairs_task("kendall_tau", epsilon=2.0, bounds=[(-6, 6), (-6, 6)], P=2)
    assert tv.layout == "vertical" and tv.columns == {"left": [0], "right": [1]}
    pv = PartyPolicy(tv, "right", sv["right"]["token"], tmp_path / "v.db", n_users=5)
    with pytest.raises(PolicyError, match="two different users"):
        _check(pv, _job(tv, rows=[[1, 1]]))
    assert [k["pair_epsilon"] for k in tv.kernels] == [0.5, 0.25, 0.25]  # ε/P split ½, ¼, ¼


def test_task_files_round_trip_and_secrets_are_private(task, tmp_path):
    t, sec = task
    paths = write_pairs_task(t, sec, tmp_path / "task.json")
    assert read_pairs_task(paths["task"]) == t
    assert (paths["left"].stat().st_mode & 0o777) == 0o600
    assert sec["left"]["token"] not in paths["task"].read_text()
    with pytest.raises(ValueError, match="bounds"):
        new_pairs_task("auc", epsilon=1.0, bounds=[(1, 0)])
    with pytest.raises(ValueError, match="kernel"):
        new_pairs_task("ustatistic", epsilon=1.0, bounds=[(0, 1)])


def test_usage_counts_match_the_plan(task, tmp_path):
    """A P = 2 task: every user may take part in two pairs, not three."""
    t, sec = new_pairs_task("gini_mean_difference", epsilon=1.0, bounds=[(0, 10)], P=2)
    pol = PartyPolicy(t, "left", sec["left"]["token"], tmp_path / "g.db", n_users=4)
    rows = np.array([[0, 1], [2, 3], [0, 2], [1, 3]])
    h = {"op": "job", **t.job_header(), "job_id": "a", "m": 4, "rows": rows.tolist()}
    _check(pol, h)
    pol.reserve(h)
    h2 = {**h, "job_id": "b", "m": 1, "rows": [[0, -1]]}
    with pytest.raises(PolicyError, match="3 pairs"):
        _check(pol, h2)


def test_unsupported_python_gets_a_clear_error(monkeypatch):
    """pip installs no SPU on Python 3.12 (the extra's marker); asking for it names the versions."""
    import sys

    from privstats.ustat.mpc import spu_available
    from privstats.ustat.mpc.circuit import require_spu

    monkeypatch.setattr(sys, "version_info", (3, 12, 1, "final", 0))
    with pytest.raises(ImportError, match=r"needs Python 3\.10 or 3\.11; this is Python 3\.12"):
        require_spu()
    assert not spu_available()


def test_ledger_and_state_files_are_bound_to_their_task(task, tmp_path):
    """A party's ledger and the aggregator's state remember their task: another task's file is refused
    (named as ledger or state), and the same task reopens its own file."""
    from privstats.services.party.collect import _State

    t = task[0]
    other, other_sec = new_pairs_task("auc", epsilon=1.0, bounds=[(-8, 8)])
    _policy(task, tmp_path).db.close()
    with pytest.raises(
        ValueError, match=f"ledger .*left.db belongs to task {t.task_id}, not {other.task_id}"
    ):
        PartyPolicy(other, "left", other_sec["left"]["token"], tmp_path / "left.db", n_users=10)
    assert _policy(task, tmp_path).hello({})["task_id"] == t.task_id

    _State(tmp_path / "agg.db", t).db.close()
    with pytest.raises(ValueError, match=f"state .*agg.db belongs to task {t.task_id}, not {other.task_id}"):
        _State(tmp_path / "agg.db", other)
    assert _State(tmp_path / "agg.db", t).meta("task_id") == t.task_id
