"""Three real processes: two parties on their own data (`privstats serve party`) and the aggregator.

AUC across two hospitals (positives at one, negatives at the other), Kendall's tau-b on a vertical
split (one variable per organisation), the aggregator's attacks refused by the parties, and a party
killed with SIGKILL mid-run (the run stops cleanly, resumes, and never counts a pair twice).
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("spu")
from scipy import stats

from privstats.services.party.task import read_pairs_task, read_role_secrets
from privstats.ustat import central as C
from privstats.ustat.mpc import JobSpec, SpuSession
from privstats.ustat.mpc.backend import reconstruct
from privstats.ustat.mpc.circuit import require_spu, runtime_config
from privstats.ustat.mpc.wire import free_port

pytestmark = pytest.mark.timeout(900)


def _cli(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "privstats", *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"privstats {args[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r


def _new_task(tmp_path, *args):
    pl, pr, ll, lr = (free_port() for _ in range(4))
    task = tmp_path / "task.json"
    _cli(
        "task", "new", "--model", "secure", "--backend", "spu", *args,
        "--left", f"127.0.0.1:{pl}", "--right", f"127.0.0.1:{pr}",
        "--left-link", f"127.0.0.1:{ll}", "--right-link", f"127.0.0.1:{lr}", "--out", task,
    )  # fmt: skip
    return task


def _csv(path, name, values):
    path.write_text(name + "\n" + "\n".join(repr(float(v)) for v in values) + "\n")
    return path


class Party:
    def __init__(self, task, role, data, column, *extra):
        cmd = [sys.executable, "-m", "privstats", "serve", "party", "--task", str(task), "--role", role]
        cmd += ["--data", str(data), "--column", column, "--link-timeout", "10", *extra]
        self.log = (Path(task).parent / f"{role}.log").open("a")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert "serving on port" in line, f"the {role} party did not start ({self.proc.poll()})"
        self.worker = int(line.rsplit("pid ", 1)[1].rstrip(")\n"))  # the party process (its supervisor
        # restarts it if it dies)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def parties():
    started = []
    yield lambda *a: started.append(Party(*a)) or started[-1]
    for p in started:
        p.stop()


def test_auc_across_two_hospitals(tmp_path, parties):
    g = np.random.default_rng(5)
    pos, neg = np.clip(g.normal(1.0, 1.5, 700), -8, 8), np.clip(g.normal(0.0, 1.5, 600), -8, 8)
    task = _new_task(tmp_path, "--statistic", "auc", "--epsilon", "4", "--bounds", "-8", "8")
    parties(task, "left", _csv(tmp_path / "hospital_a.csv", "score", pos), "score")
    parties(task, "right", _csv(tmp_path / "hospital_b.csv", "score", neg), "score")
    est = json.loads(_cli("collect", "--task", task, "--json").stdout)
    exact = C.exact_auc(pos, neg, "half")
    assert abs(est["value"] - exact) < 4 * est["stderr"]
    assert est["n"] == 1300 and est["details"]["pairs"] == 600 and est["details"]["pairs_lost"] == 0
    again = json.loads(_cli("collect", "--task", task, "--json").stdout)  # no new jobs: the same release
    assert again["value"] == est["value"]
    t = read_pairs_task(task)
    for role, n in (("left", 700), ("right", 600)):
        db = sqlite3.connect(tmp_path / f"task.{role}.db")
        used = db.execute("SELECT COUNT(*), MAX(pairs) FROM usage").fetchone()
        assert used == (600, t.P)  # each party's record: 600 of its users, each in P = 1 pair
        assert n >= 600


def test_kendall_tau_on_a_vertical_split(tmp_path, parties):
    g = np.random.default_rng(8)
    n = 1200
    x = np.clip(g.normal(size=n), -5, 5)
    y = np.clip(x + g.normal(size=n), -5, 5)
    task = _new_task(
        tmp_path, "--statistic", "kendall_tau", "--epsilon", "4", "--bounds", "-5", "5", "--bounds", "-5", "5"
    )
    parties(task, "left", _csv(tmp_path / "org_a.csv", "x", x), "x")
    parties(task, "right", _csv(tmp_path / "org_b.csv", "y", y), "y")
    est = json.loads(_cli("collect", "--task", task, "--json").stdout)
    exact = stats.kendalltau(x, y).statistic
    assert abs(est["value"] - exact) < 4 * est["stderr"]
    assert est["n"] == n and est["details"]["pairs"] == n // 2


def _attacker(task_path):
    t = read_pairs_task(task_path)
    tok = read_role_secrets(task_path, "aggregator")["tokens"]
    addrs = (t.parties["left"]["listen"], t.parties["right"]["listen"])
    return t, SpuSession(parties=addrs, tokens=(tok["left"], tok["right"]))


def _job(t, job_id, rows_l, rows_r, **change):
    h = {"op": "job", **t.job_header(), "job_id": job_id, "m": len(rows_l)}
    h["outputs"] = [{**o, **change} for o in h["outputs"]]
    return ({**h, "rows": rows_l.tolist()}, {**h, "rows": rows_r.tolist()})


def test_aggregator_attacks_are_refused(tmp_path, parties):
    """Mechanism 'none', ε = 60, and 15 repeats of an ε = 1 job with a majority vote: refused; the
    only release is the planned one, so the vote recovers no more than one randomized response does."""
    g = np.random.default_rng(9)
    m = 400
    a, b = g.normal(size=m), g.normal(size=m)
    task = _new_task(
        tmp_path, "--statistic", "auc", "--epsilon", "1", "--ties", "zero", "--bounds", "-8", "8"
    )
    parties(task, "left", _csv(tmp_path / "a.csv", "v", a), "v")
    parties(task, "right", _csv(tmp_path / "b.csv", "v", b), "v")
    t, sess = _attacker(task)
    spu, libspu = require_spu()
    io = spu.Io(2, runtime_config(libspu))
    idx, neg = np.arange(m), -np.ones(m, dtype=np.int64)
    rows_l, rows_r = np.stack([idx, neg], 1), np.stack([neg, idx], 1)
    try:
        for change in ({"mechanism": "none"}, {"pair_epsilon": 60.0}):
            with pytest.raises(RuntimeError, match="differs from this party's task"):
                sess.run(_job(t, "attack", rows_l, rows_r, **change), None, None)
        first = reconstruct(io, libspu, sess.run(_job(t, "j0", rows_l, rows_r), None, None), m, 1)[:, 0]
        votes = [first]
        for k in range(14):
            try:
                votes.append(
                    reconstruct(io, libspu, sess.run(_job(t, f"r{k}", rows_l, rows_r), None, None), m, 1)[
                        :, 0
                    ]
                )
            except RuntimeError as exc:
                assert "P = 1" in str(exc)
        replay = reconstruct(io, libspu, sess.run(_job(t, "j0", rows_l, rows_r), None, None), m, 1)[:, 0]
    finally:
        sess.close()
    assert len(votes) == 1 and np.array_equal(replay, first)  # a replay returns the same release
    keep = JobSpec.from_header(t.job_header()).outputs[0].plan.keep
    truth = (a > b).astype(int)
    acc = float(np.mean(first == truth))
    assert abs(acc - keep) < 5 * np.sqrt(keep * (1 - keep) / m)  # ≈ 0.73, nowhere near 0.977


def _jobs_done(state):
    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=1)
        return db.execute("SELECT COUNT(*) FROM jobs WHERE state='done'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_party_killed_mid_run_resumes_without_double_counting(tmp_path, parties):
    g = np.random.default_rng(10)
    pos, neg = np.clip(g.normal(0.5, 1, 1000), -8, 8), np.clip(g.normal(0, 1, 1000), -8, 8)
    task = _new_task(
        tmp_path, "--statistic", "auc", "--epsilon", "4", "--bounds", "-8", "8", "--batch-size", "100"
    )
    left = parties(task, "left", _csv(tmp_path / "p.csv", "s", pos), "s")
    right = parties(task, "right", _csv(tmp_path / "n.csv", "s", neg), "s")
    state = tmp_path / "task.aggregator.db"
    run = subprocess.Popen(
        [sys.executable, "-m", "privstats", "collect", "--task", str(task)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while _jobs_done(state) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.2)
    os.kill(right.worker, signal.SIGKILL)  # kill -9 of the right party mid-run: jobs 3.. of 10 not done
    _, err = run.communicate(timeout=300)
    assert run.returncode == 1 and "collect again to resume" in err
    done_before = _jobs_done(state)
    assert 2 <= done_before < 10
    for _ in range(10):  # the left party's worker restarts after its link broke: collect again
        r = _cli("collect", "--task", task, "--json", check=False)
        if r.returncode != 1:
            break
        time.sleep(2)
    assert r.returncode == 0, r.stderr[-2000:]
    assert left.proc.poll() is None and right.proc.poll() is None  # both restarted on their ledgers
    est = json.loads(r.stdout)
    db = sqlite3.connect(state)
    states = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    assert states.get("pending", 0) == 0 and states["done"] >= done_before and states.get("lost", 0) <= 1
    lost = est["details"]["pairs_lost"]
    assert est["details"]["pairs"] + lost == 1000 and lost == 100 * states.get("lost", 0)
    for role in ("left", "right"):  # no user in more than P pairs at either party
        assert (
            sqlite3.connect(tmp_path / f"task.{role}.db")
            .execute("SELECT MAX(pairs) FROM usage")
            .fetchone()[0]
            == 1
        )
    assert abs(est["value"] - C.exact_auc(pos, neg, "half")) < 4 * est["stderr"]


def test_gini_mean_difference_users_at_both_parties_with_noise_shares(tmp_path, parties):
    """Horizontal layout (users at either party, pairs across and within), each party adding its
    own discrete Laplace share (--noise shares)."""
    g = np.random.default_rng(12)
    x_a, x_b = g.uniform(0, 10, 700), g.uniform(2, 10, 500)
    task = _new_task(
        tmp_path,
        "--statistic",
        "gini_mean_difference",
        "--epsilon",
        "2",
        "--bounds",
        "0",
        "10",
        "--noise",
        "shares",
    )
    t = read_pairs_task(task)
    assert t.layout == "horizontal" and t.kernels[0]["mechanism"] == "laplace-shares"
    parties(task, "left", _csv(tmp_path / "a.csv", "x", x_a), "x")
    parties(task, "right", _csv(tmp_path / "b.csv", "x", x_b), "x")
    est = json.loads(_cli("collect", "--task", task, "--json").stdout)
    x = np.r_[x_a, x_b]
    exact = C.exact_gini_mean_difference(x)
    assert abs(est["value"] - exact) < 4 * est["stderr"] + 10 * 2**-10  # + the public grid's rounding
    assert est["n"] == 1200 and est["details"]["pairs"] == 600 and est["guarantee"].get("delta", 0.0) == 0.0
    bad = _cli("serve", "party", "--task", task, "--role", "left", "--data", _csv(tmp_path / "c.csv", "x", [11.0]),
               "--column", "x", check=False)  # fmt: skip
    assert bad.returncode == 2 and "outside the task's public bounds" in bad.stderr
