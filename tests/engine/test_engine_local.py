"""The local (chunked, in-process) engine: every source kind, every protocol, corrupted input."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from privstats.engine import ReportFormatError, ReportWriter, aggregate, write_reports  # noqa: E402
from privstats.engine.registry import available_protocols, build_oracle, example_params  # noqa: E402
from privstats.local import GRR, OUE  # noqa: E402
from privstats.privacy.randomness import as_source  # noqa: E402

PROTOCOLS = available_protocols()


def _oracle(name):
    return build_oracle(name, example_params(name))


def _values(oracle, n, seed=0):
    """Users' values: items of the domain, or reals in [0, 1] for shuffle-sum (no domain)."""
    rng = np.random.default_rng(seed)
    d = getattr(oracle, "domain_size", None)
    return rng.integers(0, d, n) if d is not None else rng.random(n)


def _concat(batches):
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def _encode_chunks(oracle, values, seed, chunk_size):
    """The reports write_reports produces, built independently of the engine's reader."""
    src = as_source(seed)
    return _concat(
        [oracle.encode_batch(values[i : i + chunk_size], rng=src) for i in range(0, len(values), chunk_size)]
    )


@pytest.mark.parametrize("name", PROTOCOLS)
def test_file_aggregate_equals_direct_aggregation_for_any_chunking(tmp_path, name):
    oracle = _oracle(name)
    values = _values(oracle, 300)
    path = write_reports(oracle, values, tmp_path / "r.parquet", rng=7, chunk_size=37)
    direct = oracle.aggregate(_encode_chunks(oracle, values, 7, 37))
    for chunk_size in (1, 16, 10**6):
        assert aggregate(oracle, path, chunk_size=chunk_size) == direct
    # the comparison is sensitive: one report fewer gives a different state
    fewer = {k: v[:-1] for k, v in _encode_chunks(oracle, values, 7, 37).items()}
    assert oracle.aggregate(fewer) != direct


def test_grr_counts_are_the_histogram_of_the_stored_values(tmp_path):
    oracle = GRR(50, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 2000), tmp_path / "r.parquet", rng=1, chunk_size=300)
    stored = pq.read_table(path).column("value").to_numpy()
    state = aggregate(oracle, path, chunk_size=128)
    assert state.n == 2000
    np.testing.assert_array_equal(state.counts, np.bincount(stored, minlength=50))


def test_every_in_memory_source_kind_gives_the_same_state():
    oracle = OUE(13, epsilon=1.0)
    reports = oracle.encode_batch(_values(oracle, 200), rng=2)
    expected = oracle.aggregate(reports)
    batch = pa.RecordBatch.from_pydict(
        {
            "bits": pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(2), 200, [None, pa.py_buffer(np.ascontiguousarray(reports["bits"]))]
            )
        }
    )
    table = pa.Table.from_batches([batch.slice(0, 80), batch.slice(80)])
    empty = {"bits": np.zeros((0, 2), dtype=np.uint8)}
    mixed = [
        empty,
        {"bits": reports["bits"][:3]},
        batch.slice(3, 100),
        empty,
        {"bits": reports["bits"][103:]},
    ]
    for source in (
        reports,
        batch,
        table,
        mixed,
        iter(mixed),
        pa.RecordBatchReader.from_batches(batch.schema, [batch.slice(0, 0), batch]),
    ):
        assert aggregate(oracle, source, chunk_size=7) == expected
    grr = GRR(5, epsilon=1.0)
    values = grr.encode_batch(_values(grr, 50), rng=0)["value"]
    assert aggregate(grr, values) == grr.aggregate({"value": values})  # 1-D array for a one-column protocol
    assert aggregate(grr, []) == grr.new_state()


def test_dataset_directory_and_ignored_files(tmp_path):
    oracle = GRR(8, epsilon=1.0)
    write_reports(oracle, _values(oracle, 100), tmp_path / "part-0.parquet", rng=1, chunk_size=30)
    (tmp_path / "sub").mkdir()
    write_reports(oracle, _values(oracle, 50), tmp_path / "sub" / "part-1.parquet", rng=2)
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-2.parquet.tmp").write_bytes(b"garbage")
    state = aggregate(oracle, tmp_path)
    assert state == aggregate(oracle, tmp_path / "part-0.parquet").merge(
        aggregate(oracle, tmp_path / "sub" / "part-1.parquet")
    )
    assert state.n == 150


def test_file_of_another_protocol_or_params_is_refused_by_name(tmp_path):
    write_reports(GRR(8, epsilon=1.0), [1, 2], tmp_path / "a.parquet", rng=0)
    write_reports(GRR(8, epsilon=2.0), [1, 2], tmp_path / "b.parquet", rng=0)
    with pytest.raises(ReportFormatError, match="b.parquet.*epsilon"):
        aggregate(GRR(8, epsilon=1.0), tmp_path)
    with pytest.raises(ReportFormatError, match="a.parquet.*grr.*not oue"):
        aggregate(OUE(8, epsilon=1.0), tmp_path / "a.parquet")


def test_out_of_domain_reports_in_a_valid_file_are_refused_by_name(tmp_path):
    oracle = GRR(10, epsilon=1.0)
    with ReportWriter(tmp_path / "evil.parquet", oracle, chunk_size=4) as w:
        w.write({"value": np.array([1, 2, 3, 4, 5, 10], dtype=np.int64)})  # 10 is outside [0, 10)
    with pytest.raises(ReportFormatError, match="evil.parquet.*invalid reports"):
        aggregate(oracle, tmp_path / "evil.parquet")


def test_every_single_byte_corruption_is_caught_or_harmless(tmp_path):
    """Flip each byte of a small file: either a ReportFormatError naming the file, or the exact same state.

    (Parquet page CRCs cover the data; the writer's recorded row-group sizes cover the footer.)
    """
    oracle = GRR(4, epsilon=1.0)
    good = tmp_path / "good.parquet"
    write_reports(oracle, _values(oracle, 40), good, rng=0, chunk_size=20)
    reference = aggregate(oracle, good)
    data = good.read_bytes()
    bad = tmp_path / "flipped.parquet"
    caught = 0
    for pos in range(len(data)):
        corrupted = bytearray(data)
        corrupted[pos] ^= 0x5A
        bad.write_bytes(bytes(corrupted))
        try:
            state = aggregate(oracle, bad)
        except ReportFormatError as exc:
            assert "flipped.parquet" in str(exc)
            caught += 1
        else:
            assert state == reference, f"byte {pos} changed the counts silently"
    assert caught > len(data) // 2


def test_truncated_file_in_a_dataset_fails_whole_and_leaves_the_state_alone(tmp_path):
    oracle = GRR(8, epsilon=1.0)
    write_reports(oracle, _values(oracle, 500), tmp_path / "a.parquet", rng=1, chunk_size=100)
    write_reports(oracle, _values(oracle, 500), tmp_path / "b.parquet", rng=2, chunk_size=100)
    data = (tmp_path / "b.parquet").read_bytes()
    (tmp_path / "b.parquet").write_bytes(data[: len(data) // 2])
    start = aggregate(oracle, tmp_path / "a.parquet")
    snapshot = start.counts.copy()
    with pytest.raises(ReportFormatError, match="b.parquet"):
        aggregate(oracle, tmp_path, state=start)
    np.testing.assert_array_equal(start.counts, snapshot)
    assert start.n == 500


def test_state_argument_adds_without_modifying():
    oracle = GRR(4, epsilon=1.0)
    first = oracle.aggregate(oracle.encode_batch([0, 1], rng=0))
    before = first.counts.copy()
    more = oracle.encode_batch([2, 3, 3], rng=1)
    assert aggregate(oracle, more, state=first) == first.merge(oracle.aggregate(more))
    np.testing.assert_array_equal(first.counts, before)
    with pytest.raises(ValueError, match="state"):
        aggregate(GRR(4, epsilon=2.0), more, state=first)


def test_argument_validation():
    oracle = GRR(4, epsilon=1.0)
    reports = oracle.encode_batch([1], rng=0)
    with pytest.raises(ValueError, match="engine"):
        aggregate(oracle, reports, engine="spark")
    with pytest.raises(ValueError, match="chunk_size"):
        aggregate(oracle, reports, chunk_size=0)
    with pytest.raises(ValueError, match="engine='dask'"):
        aggregate(oracle, reports, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(TypeError, match="oracle"):
        aggregate(object(), reports)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        aggregate(oracle, "/nonexistent/nowhere.parquet")
    olh = build_oracle("olh", example_params("olh"))
    with pytest.raises(ValueError, match="different lengths"):
        aggregate(olh, {"seed": np.zeros(2, np.uint64), "bucket": np.zeros(3, np.int64)}, chunk_size=1)
    with pytest.raises(ValueError, match="missing.*bucket"):
        aggregate(olh, {"seed": np.zeros(2, np.uint64)})


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    oracle = GRR(4, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 100), tmp_path / "r.parquet", rng=0)
    aggregate(oracle, path)  # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""
    aggregate(oracle, path, progress=True)
    assert "100/100 reports" in capsys.readouterr().err
