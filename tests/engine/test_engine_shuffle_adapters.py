"""Shuffle-model message streams through the engine: stored messages aggregate to the in-memory state."""

import json

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from privstats.engine import ReportFormatError, ReportWriter, aggregate, build_oracle, read_report_metadata
from privstats.engine.adapters import ShuffledMessages
from privstats.engine.cli import cli_aggregate
from privstats.shuffle import (
    CountMinMultiMessage,
    HadamardMultiMessage,
    ShuffledKRR,
    ShuffledRAPPOR,
    ShuffledSum,
    shuffle_rows,
)

N_USERS = 4000


def _calibrated():
    """Protocols calibrated by their accountants (derived params: gamma, epsilon0, rho, tau, ...)."""
    return {
        "shuffle-krr": ShuffledKRR(10, n=N_USERS, epsilon=2.0, delta=1e-6),
        "shuffle-rappor": ShuffledRAPPOR(13, n=N_USERS, epsilon=1.0, delta=1e-6),
        "shuffle-hadamard": HadamardMultiMessage(9, n=N_USERS, epsilon=2.0, delta=1e-6),
        "shuffle-countmin": CountMinMultiMessage(20, n=N_USERS, epsilon=4.0, delta=1e-6, tau=3),
        "shuffle-sum": ShuffledSum(n=N_USERS, epsilon=1.0, delta=1e-6),
    }


PROTOCOLS = _calibrated()


def _values(protocol, n, seed):
    rng = np.random.default_rng(seed)
    d = getattr(protocol, "domain_size", None)
    if d is None:
        return rng.random(n)
    return np.minimum(rng.geometric(0.3, n) - 1, d - 1)  # skewed: the estimate has something to find


def _write_messages(path, protocol, messages, chunk_size):
    oracle = ShuffledMessages(protocol)
    field = next(iter(oracle.report_fields))
    with ReportWriter(path, oracle, chunk_size=chunk_size) as writer:
        for start in range(0, len(messages), 3 * chunk_size):
            writer.write({field: _fixed_width(oracle, messages[start : start + 3 * chunk_size])})
    return oracle


def _fixed_width(oracle, rows):
    spec = next(iter(oracle.report_fields.values()))
    dtype, width = spec if isinstance(spec, tuple) else (spec, None)
    rows = np.asarray(rows)
    if width is not None and rows.ndim == 2 and rows.shape[1] < width:
        rows = np.pad(rows, ((0, 0), (0, width - rows.shape[1])))
    return rows.astype(dtype)


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_stored_messages_aggregate_to_the_in_memory_state_and_estimate(tmp_path, name):
    """Analyzer side: the shuffler's output, stored, aggregates (any chunking) to protocol.aggregate(messages)."""
    protocol = PROTOCOLS[name]
    values = _values(protocol, N_USERS, seed=1)
    messages = shuffle_rows(protocol.encode_batch(values, rng=2), rng=3)
    expected = protocol.aggregate(messages)
    path = tmp_path / f"{name}.parquet"
    oracle = _write_messages(path, protocol, messages, chunk_size=997)
    assert read_report_metadata(path)["n"] == len(messages)  # rows are messages, not users
    for chunk_size in (500, 10**6):
        assert aggregate(oracle, path, chunk_size=chunk_size) == expected
    # rebuilt from the file's metadata alone: identical params (derived ones included), same state
    meta = read_report_metadata(path)
    rebuilt = build_oracle(meta["protocol"], meta["params"])
    assert rebuilt.params == protocol.params
    state = aggregate(rebuilt, path)
    assert state == expected
    assert protocol.aggregate(messages[1:]) != expected  # the equality above can fail

    est, direct = rebuilt.estimate(state), protocol.estimate(expected)
    np.testing.assert_array_equal(est.value, direct.value)
    assert est.model == "shuffle" and est.protocol == name
    if name == "shuffle-sum":
        truth, var = values.sum(), est.stderr**2
    elif name == "shuffle-countmin":  # point queries of the sketch: checked in privstats.shuffle's own tests
        assert np.all(np.isfinite(est.value)) and np.shape(est.value) == (protocol.domain_size,)
        return
    else:
        truth = np.bincount(values, minlength=protocol.domain_size)
        var = (
            protocol.variance(truth)
            if name != "shuffle-hadamard"
            else (len(messages) - truth) * 2.0**-protocol.tau / (1 - 2.0**-protocol.tau)
        )  # exact, N messages
    z = (np.asarray(est.value) - truth) / np.sqrt(var)
    assert np.all(np.abs(z) < 5), z


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_write_reports_path_and_cli_round_trip(tmp_path, name, capsys):
    from privstats.engine import write_reports

    protocol = PROTOCOLS[name]
    oracle = ShuffledMessages(protocol)
    values = _values(protocol, 300, seed=4)
    path = write_reports(oracle, values, tmp_path / "m.parquet", rng=5, chunk_size=64)
    state = aggregate(oracle, path, chunk_size=100)
    assert state.n == read_report_metadata(path)["n"] >= 300
    if name in ("shuffle-krr", "shuffle-rappor"):
        assert state.n == 300
    elif name == "shuffle-hadamard":
        assert state.n == 300 * protocol.messages_per_user
    if name in ("shuffle-countmin", "shuffle-sum"):
        # 300 of the planned 4000 users: these blanket-only protocols give no finite ε for so few, and
        # the estimate refuses by name instead of claiming the guarantee of 4000 users (issue 22)
        assert cli_aggregate(["--input", str(path), "--json", "--no-progress"]) == 2
        assert "of the planned n=4000 users arrived" in capsys.readouterr().err
        return
    assert cli_aggregate(["--input", str(path), "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == name and out["params"] == json.loads(json.dumps(protocol.params))
    assert out["n"] == state.n and out["counts"] == state.counts.tolist()


def test_encode_batch_permutes_the_batch_messages():
    """Stored rows are not in user order: Hadamard's real messages are not the first k*n rows."""
    protocol = HadamardMultiMessage(9, n=1000, epsilon=1.0, delta=1e-6, rho=3, tau=6)
    oracle = ShuffledMessages(protocol)
    rows = oracle.encode_batch(np.arange(9).repeat(20), rng=0)["message"]
    raw = protocol.encode_batch(np.arange(9).repeat(20), rng=0)
    assert rows.shape == (180 * 4, 1 + protocol.m) and rows.dtype == np.uint32
    assert oracle.aggregate({"message": rows}) == protocol.aggregate(raw)  # same messages, other order
    assert not np.array_equal(rows[:, : raw.shape[1]], raw)


def test_other_params_and_malformed_messages_are_refused_by_file_name(tmp_path):
    krr = ShuffledKRR(10, n=1000, epsilon=1.0, delta=1e-6, gamma=0.5)
    path = tmp_path / "krr.parquet"
    _write_messages(path, krr, krr.encode_batch(np.arange(10), rng=0), chunk_size=4)
    other = ShuffledMessages(ShuffledKRR(10, n=1000, epsilon=1.0, delta=1e-6, gamma=0.25))
    with pytest.raises(ReportFormatError, match="krr.parquet.*gamma"):
        aggregate(other, path)
    with pytest.raises(ValueError, match="does not have params"):
        build_oracle("shuffle-krr", {**krr.params, "epsilon0": 1.0})  # derived value inconsistent with gamma
    with pytest.raises(ValueError, match="missing.*gamma"):
        build_oracle("shuffle-krr", {k: v for k, v in krr.params.items() if k != "gamma"})

    had = HadamardMultiMessage(9, n=1000, epsilon=1.0, delta=1e-6, rho=1, tau=6)
    bad = np.zeros((3, 1 + had.m), dtype=np.uint32)
    bad[:, 0] = had.m + 1  # kernel dimension larger than m
    with ReportWriter(tmp_path / "evil.parquet", ShuffledMessages(had)) as w:
        w.write({"message": bad})
    with pytest.raises(ReportFormatError, match="evil.parquet.*invalid reports"):
        aggregate(ShuffledMessages(had), tmp_path / "evil.parquet")

    rappor = ShuffledMessages(ShuffledRAPPOR(13, n=1000, epsilon=1.0, delta=1e-6, epsilon0=2.0))
    rows = rappor.encode_batch(np.arange(13), rng=0)["bits"].copy()
    rows[4, 1] |= 1  # a padding bit (bit 15 of a 13-bit indicator)
    with pytest.raises(ValueError, match="padding"):
        rappor.aggregate({"bits": rows})
