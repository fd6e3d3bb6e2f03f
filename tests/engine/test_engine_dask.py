"""The Dask engine on a real LocalCluster (2 worker processes): bit-for-bit equal to the local engine."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")

from privstats.engine import ReportFormatError, ReportWriter, aggregate, write_reports  # noqa: E402
from privstats.engine.registry import available_protocols, build_oracle, example_params  # noqa: E402
from privstats.local import GRR  # noqa: E402

PROTOCOLS = available_protocols()


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},
    ) as cl:
        yield cl


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


def _oracle(name):
    return build_oracle(name, example_params(name))


def _values(oracle, n, seed=0):
    """Users' values: items of the domain, or reals in [0, 1] for shuffle-sum (no domain)."""
    rng = np.random.default_rng(seed)
    d = getattr(oracle, "domain_size", None)
    return rng.integers(0, d, n) if d is not None else rng.random(n)


def _ragged_dataset(oracle, root, seed=0):
    """Three files: row groups of uneven sizes with empty ones, a one-row file, an empty file."""
    root.mkdir()
    with ReportWriter(root / "a.parquet", oracle, chunk_size=40) as w:
        for k, size in enumerate([0, 1, 97, 0, 13, 150]):
            if size:
                w.write(oracle.encode_batch(_values(oracle, size, seed + k), rng=seed + k))
            else:
                w.write({key: col[:0] for key, col in oracle.encode_batch([0], rng=0).items()})
    write_reports(oracle, _values(oracle, 1, seed + 9), root / "b.parquet", rng=seed + 9)
    write_reports(oracle, [], root / "c.parquet", rng=0)
    return root


@pytest.mark.parametrize("name", PROTOCOLS)
def test_dask_equals_local_bit_for_bit(tmp_path, client, name):
    oracle = _oracle(name)
    root = _ragged_dataset(oracle, tmp_path / "ds")
    local = aggregate(oracle, root)
    for chunk_size in (1, 16, 10**6):  # partitions of a few rows up to one per file
        assert aggregate(oracle, root, engine="dask", client=client, chunk_size=chunk_size) == local
    # batches of any size, including empty ones, as partitions
    batches = [oracle.encode_batch(_values(oracle, m, m), rng=m) for m in (5, 1, 60, 2)]
    batches.insert(2, {k: v[:0] for k, v in batches[0].items()})
    expected = aggregate(oracle, batches)
    assert aggregate(oracle, iter(batches), engine="dask", client=client, chunk_size=8) == expected
    assert expected != aggregate(oracle, batches[:-1])  # the equality above can fail


def test_scheduler_address_and_many_partitions(tmp_path, cluster):
    oracle = GRR(64, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 5000), tmp_path / "r.parquet", rng=4, chunk_size=100)
    local = aggregate(oracle, path, chunk_size=1000)
    assert (
        aggregate(oracle, path, engine="dask", scheduler=cluster.scheduler_address, chunk_size=100) == local
    )


def test_corrupted_partition_fails_the_whole_job_naming_the_file(tmp_path, client):
    oracle = GRR(16, epsilon=1.0)
    for k in range(3):
        write_reports(oracle, _values(oracle, 400, k), tmp_path / f"part-{k}.parquet", rng=k, chunk_size=50)
    bad = tmp_path / "part-1.parquet"
    data = bytearray(bad.read_bytes())
    data[200] ^= 0xFF  # inside the first data pages: caught by the page checksum on the worker
    bad.write_bytes(bytes(data))
    with pytest.raises(ReportFormatError, match="part-1.parquet"):
        aggregate(oracle, tmp_path, engine="dask", client=client, chunk_size=50)
    # the cluster is still usable and a good file still aggregates
    good = tmp_path / "part-0.parquet"
    assert aggregate(oracle, good, engine="dask", client=client) == aggregate(oracle, good)


def test_invalid_reports_in_a_batch_fail_on_the_worker(client):
    oracle = GRR(4, epsilon=1.0)
    batches = [{"value": np.array([0, 1], dtype=np.int64)}, {"value": np.array([2, 7], dtype=np.int64)}]
    with pytest.raises(ValueError, match="batch #1.*invalid reports"):
        aggregate(oracle, batches, engine="dask", client=client)


def test_own_local_cluster_is_started_and_closed(tmp_path):
    oracle = GRR(8, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 300), tmp_path / "r.parquet", rng=0, chunk_size=64)
    assert aggregate(oracle, path, engine="dask", n_workers=1, chunk_size=64) == aggregate(oracle, path)


def test_cli_with_scheduler(tmp_path, cluster):
    oracle = GRR(8, epsilon=1.0)
    path = write_reports(oracle, _values(oracle, 300), tmp_path / "r.parquet", rng=0, chunk_size=64)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "privstats",
            "aggregate",
            "--protocol",
            "grr",
            "--input",
            str(path),
            "--scheduler",
            cluster.scheduler_address,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["engine"] == "dask" and out["n"] == 300
    assert out["counts"] == aggregate(oracle, path).counts.tolist()
