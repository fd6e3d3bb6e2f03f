"""End to end through real processes: clients -> collector, and clients -> shuffler -> analyzer.

Every collected Estimate is checked against the exact counts (within 5 standard errors, each
item), its standard error against the protocol's exact variance at the true counts, and against
the in-process protocol run on the same values (their difference within 5·√2 SE).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import SLOW, free_port, make_task, role_storage

from privstats.client import Client

N = 100_000
D = 16


def _values(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, D + 1) ** 1.1
    return rng.choice(D, size=n, p=p / p.sum())


def _check(est, values, exact_se, inproc_value=None, inproc_se=None):
    true = np.bincount(values, minlength=D)
    assert est.n == values.size
    z = (est.value - true) / est.stderr
    assert np.all(np.abs(z) < 5), f"z-scores {np.round(z, 2)}"
    # the reported (plug-in) standard error is the exact one evaluated near the truth
    np.testing.assert_allclose(est.stderr, exact_se, rtol=0.05)
    if inproc_value is not None:
        diff = (est.value - inproc_value) / np.sqrt(est.stderr**2 + inproc_se**2)
        assert np.all(np.abs(diff) < 5)


@pytest.mark.parametrize("protocol", ["grr", "oue", "hr"])
def test_collector_end_to_end(tmp_path, servers, protocol):
    port = free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "local",
        "--protocol",
        protocol,
        "--domain-size",
        str(D),
        "--epsilon",
        "1",
        "--min-batch",
        "1000",
        "--collector",
        f"http://127.0.0.1:{port}",
    )
    srv = servers("collector", task, f"sqlite:///{tmp_path / 'c.sqlite'}", port)
    values = _values(N, 1)
    with Client(srv.url, task) as client:
        reports = client.encode(values, rng=2)
        assert len({r.report_id for r in reports}) == N
        assert client.upload(reports) == N
        est = client.collect()
    oracle = client.protocol
    true = np.bincount(values, minlength=D)
    inproc = oracle.estimate(oracle.simulate(values, rng=3))
    _check(est, values, np.sqrt(oracle.variance(N, true)), inproc.value, inproc.stderr)
    assert est.protocol == protocol and est.model == "local" and est.epsilon == 1.0


def _wait_forwarded(db: str, client: Client, n: int, timeout: float = 300) -> dict:
    """The analyzer's exact counts, read from its database (no service serves a count)."""
    from privstats.services.shuffler import operator_counts

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = operator_counts(role_storage(db, client.task_path, "analyzer"), client.task)
        if st["n_reports"] >= n:
            return st
        time.sleep(0.5)
    raise AssertionError(f"analyzer has {st} after {timeout}s, expected {n} reports")


@pytest.mark.parametrize(
    "protocol,n", [("single-rr", N if SLOW else 10_000), ("multi-hadamard", N if SLOW else 1_000)]
)
def test_shuffler_analyzer_end_to_end(tmp_path, servers, protocol, n):
    sp, ap = free_port(), free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "shuffle",
        "--protocol",
        protocol,
        "--domain-size",
        str(D),
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--min-batch",
        "1000",
        "--shuffler",
        f"http://127.0.0.1:{sp}",
        "--analyzer",
        f"http://127.0.0.1:{ap}",
    )
    servers("analyzer", task, f"sqlite:///{tmp_path / 'a.sqlite'}", ap)
    servers("shuffler", task, f"sqlite:///{tmp_path / 's.sqlite'}", sp)
    values = _values(n, 4)
    with Client(None, task) as client:
        reports = client.encode(values, rng=5)
        assert client.upload(reports) == n
        st = _wait_forwarded(f"sqlite:///{tmp_path / 'a.sqlite'}", client, n)
        proto = client.protocol.protocol
        m = 1 if protocol == "single-rr" else proto.k + proto.rho
        assert st["n_reports"] == n and st["n_messages"] == n * m and st["dropped_messages"] == 0
        est = client.collect()
    true = np.bincount(values, minlength=D)
    if protocol == "single-rr":
        exact = np.sqrt(proto.local.variance(n, true))
    else:
        p = 2.0**-proto.tau
        exact = np.sqrt((n * m - true) * p / (1 - p))
    _check(est, values, exact)
    assert est.model == "shuffle" and est.delta == 1e-6


def test_cli_submit_and_collect(tmp_path, servers, capsys):
    from privstats.cli import main

    port = free_port()
    task = make_task(
        tmp_path,
        "--statistic",
        "frequencies",
        "--model",
        "local",
        "--protocol",
        "grr",
        "--domain-size",
        "4",
        "--epsilon",
        "2",
        "--min-batch",
        "100",
        "--collector",
        f"http://127.0.0.1:{port}",
    )
    servers("collector", task, f"sqlite:///{tmp_path / 'c.sqlite'}", port)
    csv = tmp_path / "v.csv"
    csv.write_text("item\n" + "\n".join(str(i % 4) for i in range(400)) + "\n")
    assert main(["submit", "--task", str(task), "--input", str(csv), "--column", "item"]) == 0
    assert "400 reports acknowledged" in capsys.readouterr().out
    assert main(["collect", "--task", str(task), "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 400 and out["protocol"] == "grr" and len(out["value"]) == 4
    # the budget (one collection) is spent: a second collection is refused with exit status 2
    assert main(["collect", "--task", str(task)]) == 2


def test_countmin_through_the_shuffler(tmp_path, servers):
    """Count-Min's data-independent number of messages is padded to a public cap; dummies are dropped."""
    from privstats.shuffle.countmin import DUMMY_CELL

    n, sp, ap = 1000, free_port(), free_port()
    task = make_task(
        tmp_path,
        *("--statistic", "frequencies", "--model", "shuffle", "--protocol", "multi-countmin"),
        *("--tau", "1", "--domain-size", str(D), "--epsilon", "2", "--delta", "1e-6", "--min-batch", "1000"),
        *("--shuffler", f"http://127.0.0.1:{sp}", "--analyzer", f"http://127.0.0.1:{ap}"),
    )
    servers("analyzer", task, f"sqlite:///{tmp_path / 'a.sqlite'}", ap)
    servers("shuffler", task, f"sqlite:///{tmp_path / 's.sqlite'}", sp)
    values = _values(n, 7)
    with Client(None, task) as client:
        proto = client.protocol.protocol
        reports = client.encode(values, rng=8)
        assert len({len(r.payload) for r in reports}) == 1  # every user sends the same public count
        assert client.upload(reports) == n
        st = _wait_forwarded(f"sqlite:///{tmp_path / 'a.sqlite'}", client, n)
        assert st["dropped_messages"] == 0
        # the analyzer counts the real messages only: n τ + Bin(n τ b, γ) (padding dropped)
        cells = proto.tau * proto.buckets
        blanket = st["n_messages"] - n * proto.tau
        assert abs(blanket - n * cells * proto.gamma) < 5 * np.sqrt(
            n * cells * proto.gamma * (1 - proto.gamma)
        )
        est = client.collect()
    true = np.bincount(values, minlength=D)
    z = (est.value - true) / est.stderr
    assert np.all(np.abs(z) < 5), f"z-scores {np.round(z, 2)}"
    # the same protocol in process, on the same values: agreement within 5·√2 SE
    inproc = proto.estimate(proto.simulate(values, rng=9))
    assert np.all(np.abs(est.value - inproc.value) < 5 * np.sqrt(est.stderr**2 + inproc.stderr**2))
    # padding never reaches the table: a batch of dummies only aggregates to nothing
    empty = proto.aggregate(np.full(10, DUMMY_CELL, dtype=np.uint64))
    assert empty.n == 0 and not empty.counts.any()


def _state_n(db: str, task) -> int:
    """Reports in the collector's state, read from its database (no service serves a count)."""
    from privstats.services.collector import STATE_NAME
    from privstats.services.tasks import load_task

    st = role_storage(db, task, "collector")
    with st.read() as conn:
        row = st.get_aggregate(conn, load_task(str(task)).id_bytes, STATE_NAME)
    st.close()
    return 0 if row is None else int(row[0])


def test_collector_rebuilds_its_state_on_dask(tmp_path, servers):
    """``serve collector --engine dask --rebuild`` re-aggregates every stored report through
    privstats.engine on a Dask cluster and replaces the incremental state (here wiped on purpose)."""
    pytest.importorskip("distributed")
    from privstats.services.collector import STATE_NAME
    from privstats.services.tasks import load_task

    port = free_port()
    task = make_task(
        tmp_path,
        *("--statistic", "frequencies", "--model", "local", "--protocol", "grr", "--domain-size", str(D)),
        *("--epsilon", "1", "--min-batch", "1000", "--collector", f"http://127.0.0.1:{port}"),
    )
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    values = _values(20_000, 11)
    srv = servers("collector", task, db, port)
    with Client(srv.url, task) as client:
        assert client.upload(client.encode(values, rng=12)) == values.size
        before = client.protocol.new_state()  # an empty state
    first = {"n_reports": _state_n(db, task)}
    assert srv.stop() == 0
    # wipe the incremental state: only a rebuild from the stored reports can bring the counts back
    st = role_storage(db, task, "collector")
    tid = load_task(str(task)).id_bytes
    with st.transaction() as conn:
        st.put_aggregate(conn, tid, STATE_NAME, 0, before.to_bytes())
    st.close()
    srv = servers("collector", task, db, port)  # without --rebuild the wiped state stays wiped
    assert _state_n(db, task) == 0
    assert srv.stop() == 0
    srv = servers("collector", task, db, port, extra=("--engine", "dask", "--rebuild"))
    with Client(srv.url, task) as client:
        assert _state_n(db, task) == first["n_reports"] == values.size
        est = client.collect()
    true = np.bincount(values, minlength=D)
    assert np.all(np.abs(est.value - true) < 5 * est.stderr)
