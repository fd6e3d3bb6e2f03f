"""The Parquet report format: round trips, metadata, versioning, atomic writes, registry."""

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from privstats.engine import ReportFormatError, ReportWriter, read_report_metadata, write_reports  # noqa: E402
from privstats.engine.format import FORMAT_VERSION, METADATA_KEY, iter_report_batches  # noqa: E402
from privstats.engine.registry import (  # noqa: E402
    available_protocols,
    build_oracle,
    example_params,
    register_protocol,
    registered_protocols,
)
from privstats.local import GRR, OUE  # noqa: E402

PROTOCOLS = available_protocols()


def _values(oracle, n, seed=0):
    """Users' values: items of the domain, or reals in [0, 1] for shuffle-sum (no domain)."""
    rng = np.random.default_rng(seed)
    d = getattr(oracle, "domain_size", None)
    return rng.integers(0, d, n) if d is not None else rng.random(n)


def test_every_registered_protocol_is_importable_and_has_an_example():
    assert set(PROTOCOLS) == set(registered_protocols())
    for name in PROTOCOLS:
        oracle = build_oracle(name, example_params(name))
        assert oracle.name == name


@pytest.mark.parametrize("name", PROTOCOLS)
def test_reports_round_trip_exactly(tmp_path, name):
    """What encode_batch produced is what the reader returns, column by column, dtype and shape."""
    oracle = build_oracle(name, example_params(name))
    reports = oracle.encode_batch(_values(oracle, 257), rng=1)
    path = tmp_path / "r.parquet"
    with ReportWriter(path, oracle, chunk_size=50) as writer:
        writer.write(reports)
    back = list(iter_report_batches(path, oracle, chunk_size=64))
    assert max(len(next(iter(b.values()))) for b in back) <= 64
    for key, col in reports.items():
        got = np.concatenate([b[key] for b in back])
        assert got.dtype == col.dtype and got.shape == col.shape
        np.testing.assert_array_equal(got, col)
    meta = read_report_metadata(path)
    assert meta["protocol"] == name and meta["n"] == len(next(iter(reports.values())))
    assert build_oracle(meta["protocol"], meta["params"]).params == oracle.params
    assert pq.ParquetFile(path).metadata.num_row_groups == -(-meta["n"] // 50)


def test_metadata_layout_and_packed_bits_type(tmp_path):
    """The documented layout: one JSON key; OUE's 2-D uint8 bits are fixed_size_binary(ceil(d/8))."""
    oracle = OUE(13, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 100), tmp_path / "oue.parquet", rng=0)
    schema = pq.read_schema(path)
    meta = json.loads(schema.metadata[METADATA_KEY])
    assert meta == {
        "format": "privstats.reports",
        "version": FORMAT_VERSION,
        "protocol": "oue",
        "params": {"domain_size": 13, "epsilon": 1.0},
        "columns": {"bits": {"dtype": "uint8", "shape": [2]}},
    }
    assert schema.field("bits").type == pa.binary(2) and not schema.field("bits").nullable
    # an independent reader (plain pyarrow) sees the packed bytes of encode_batch
    raw = pq.read_table(path).column("bits").to_pylist()
    assert all(len(b) == 2 for b in raw)


def _encode_in_chunks(oracle, pieces, seed, chunk_size):
    from privstats.privacy.randomness import as_source

    src = as_source(seed)
    return np.concatenate(
        [
            oracle.encode_batch(piece[i : i + chunk_size], rng=src)["value"]
            for piece in pieces
            for i in range(0, len(piece), chunk_size)
        ]
    )


def test_written_reports_are_the_client_encodings(tmp_path):
    """Read back with plain pyarrow: exactly encode_batch applied chunk by chunk with the seeded source."""
    oracle = GRR(1024, epsilon=1.0)
    values = _values(oracle, 5000)
    path = write_reports(oracle, values, tmp_path / "g.parquet", rng=3, chunk_size=999)
    col = pq.read_table(path).column("value")
    assert col.type == pa.int64()
    np.testing.assert_array_equal(col.to_numpy(), _encode_in_chunks(oracle, [values], 3, 999))
    # an iterator of value chunks (for more values than memory) is re-chunked to chunk_size
    pieces = np.array_split(values, 7)
    path2 = write_reports(oracle, iter(pieces), tmp_path / "h.parquet", rng=3, chunk_size=500)
    np.testing.assert_array_equal(
        pq.read_table(path2).column("value").to_numpy(), _encode_in_chunks(oracle, pieces, 3, 500)
    )
    assert max(rg["num_rows"] for rg in pq.ParquetFile(path2).metadata.to_dict()["row_groups"]) <= 500


def test_invalid_values_leave_no_file(tmp_path):
    oracle = GRR(8, epsilon=1.0)
    values = np.r_[np.zeros(500, dtype=np.int64), 8]  # the last chunk has an out-of-domain value
    with pytest.raises(ValueError, match="values"):
        write_reports(oracle, values, tmp_path / "bad.parquet", rng=0, chunk_size=100)
    assert list(tmp_path.iterdir()) == []


def test_newer_format_version_is_refused(tmp_path):
    oracle = GRR(8, epsilon=1.0)
    path = write_reports(oracle, [1, 2, 3], tmp_path / "r.parquet", rng=0)
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["version"] = FORMAT_VERSION + 1
    future = tmp_path / "future.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)}), future)
    with pytest.raises(ReportFormatError, match="future.parquet.*version"):
        read_report_metadata(future)


def test_foreign_parquet_without_metadata_is_refused(tmp_path):
    path = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"value": pa.array([1, 2], pa.int64())}), path)
    with pytest.raises(ReportFormatError, match="foreign.parquet.*no privstats metadata"):
        read_report_metadata(path)


def test_writer_rejects_wrong_columns(tmp_path):
    oracle = OUE(13, epsilon=1.0)
    with pytest.raises(ReportFormatError, match="bits"), ReportWriter(tmp_path / "r.parquet", oracle) as w:
        w.write({"bits": np.zeros((4, 3), dtype=np.uint8)})  # width 3, expected 2
    assert list(tmp_path.iterdir()) == []


def test_registry_rejects_unknown_and_inconsistent_params():
    with pytest.raises(ValueError, match="unknown protocol 'nope'.*grr"):
        build_oracle("nope", {})
    with pytest.raises(ValueError, match="cannot build 'grr'"):
        build_oracle("grr", {"domain_size": 4, "epsilon": 1.0, "extra": 1})
    params = example_params("hierarchical-histogram")
    params["level_oracles"] = ["oue"] * len(params["level_oracles"])  # not what "auto" picks
    with pytest.raises(ValueError, match="does not have params"):
        build_oracle("hierarchical-histogram", params)
    with pytest.raises(ValueError, match="already registered"):
        register_protocol("grr", "privstats.local.grr:GRR")
