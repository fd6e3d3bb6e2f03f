"""Benchmark of privstats.engine: aggregating GRR reports (d = 1024) from Parquet.

Writes ``--n`` reports with :func:`privstats.engine.write_reports` (seeded), then measures, each in
a fresh process so peak RSS is that step's own:

* the I/O floor: reading the same Parquet with pyarrow alone (``iter_batches``, nothing else);
* the local engine: reports/s and peak RSS (target < 1 GiB at 10^8);
* the Dask engine on a LocalCluster with 1 and 2 worker processes (target 2w/1w >= 1.6 on 2 cores),
  cluster start-up excluded, workers warmed up first;
* the machine's own parallelism: a numpy job in 2 processes vs 1, the ceiling for the Dask ratio
  when other work shares the CPUs.

Prints reports/s and ratios to the pyarrow floor measured in the same run, the file's size on disk,
and deletes the file unless ``--keep``.  Timings are the best of ``--repeat`` runs; on a shared
machine they are noisy (the load average is printed).

    python benchmarks/bench_engine.py --n 10000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

D = 1024
EPSILON = 1.0


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def step_pyarrow(path: str, chunk_size: int, repeat: int) -> dict:
    import pyarrow.parquet as pq

    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        rows = 0
        for batch in pq.ParquetFile(path).iter_batches(
            batch_size=chunk_size, columns=["value"], use_threads=False
        ):
            batch.column(0).to_numpy()
            rows += batch.num_rows
        best = min(best, time.perf_counter() - t)
    return {"seconds": best, "rows": rows, "peak_rss_mib": _peak_rss_mib()}


def step_local(path: str, chunk_size: int, repeat: int) -> dict:
    from privstats.engine import aggregate
    from privstats.local import GRR

    oracle = GRR(D, EPSILON)
    rss_before = _rss_mib()
    aggregate(oracle, path, chunk_size=chunk_size, progress=False) if repeat > 1 else None  # warm-up
    best, state = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        state = aggregate(oracle, path, chunk_size=chunk_size, progress=False)
        best = min(best, time.perf_counter() - t)
    return {
        "seconds": best,
        "rows": state.n,
        "peak_rss_mib": _peak_rss_mib(),
        "rss_before_mib": rss_before,
        "counts_sha": _digest(state.counts),
    }


def step_dask(path: str, chunk_size: int, repeat: int, workers: int) -> dict:
    import distributed

    from privstats.engine import aggregate
    from privstats.local import GRR

    oracle = GRR(D, EPSILON)
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(lambda: __import__("privstats.engine.core") and __import__("pyarrow.parquet"))  # warm up
        best, state, cpu = float("inf"), None, []
        for _ in range(repeat):
            before = client.run(time.process_time)
            t = time.perf_counter()
            state = aggregate(
                oracle, path, engine="dask", client=client, chunk_size=chunk_size, progress=False
            )
            wall = time.perf_counter() - t
            after = client.run(time.process_time)
            if wall < best:
                best, cpu = wall, sorted(after[w] - before[w] for w in after)
    return {"seconds": best, "rows": state.n, "counts_sha": _digest(state.counts), "worker_cpu": cpu}


def _cpu_job(_=None) -> float:
    values = np.random.default_rng(0).integers(0, D, 1 << 22)
    t = time.perf_counter()
    for _ in range(30):
        np.bincount(values, minlength=D)
    return time.perf_counter() - t


def machine_parallelism(repeat: int) -> float:
    """Throughput of the same numpy job in 2 processes vs 1: what 2 workers can get from this machine now."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_cpu_job, [0, 1])
        ratios = []
        for _ in range(repeat):
            one = _cpu_job()
            t = time.perf_counter()
            pool.map(_cpu_job, [0, 1])
            ratios.append(2 * one / (time.perf_counter() - t))
    return max(ratios)


def _digest(counts) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(counts, dtype="<i8").tobytes()).hexdigest()[:16]


def _run_step(args, step: str, **extra) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--_step",
        step,
        "--_path",
        str(args.path),
        "--chunk-size",
        str(args.chunk_size),
        "--repeat",
        str(args.repeat),
    ]
    for k, v in extra.items():
        cmd += [f"--{k}", str(v)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"step {step} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_file(path: Path, n: int, chunk_size: int, seed: int) -> float:
    from privstats.engine import write_reports
    from privstats.local import GRR

    rng = np.random.default_rng(seed)

    def values():
        for start in range(0, n, chunk_size):
            yield rng.integers(0, D, min(chunk_size, n - start))

    t = time.perf_counter()
    write_reports(GRR(D, EPSILON), values(), path, rng=seed + 1, chunk_size=chunk_size, progress=False)
    return time.perf_counter() - t


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e8, help="number of reports (default 1e8)")
    parser.add_argument("--chunk-size", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=2, help="best of this many timed runs per step")
    parser.add_argument("--dir", default=None, help="directory for the Parquet file (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the Parquet file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--_step", help=argparse.SUPPRESS)
    parser.add_argument("--_path", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._step:  # a measured step in its own process
        fn = {"pyarrow": step_pyarrow, "local": step_local, "dask": step_dask}[args._step]
        extra = {"workers": args.workers} if args._step == "dask" else {}
        print(json.dumps(fn(args._path, args.chunk_size, args.repeat, **extra)))
        return 0

    n = int(args.n)
    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_", dir=args.dir))
    args.path = tmp / "grr_reports.parquet"
    print(
        f"bench_engine: n={n:,} GRR reports, d={D}, chunk_size={args.chunk_size:,}, best of {args.repeat}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared: timings are noisy)"
    )
    try:
        t_write = write_file(args.path, n, args.chunk_size, args.seed)
        size = args.path.stat().st_size
        print(
            f"write_reports: {t_write:.1f} s ({n / t_write:,.0f} reports/s); file {size / 2**20:,.1f} MiB on disk "
            f"({8 * size / n:.2f} bits/report)"
        )
        floor = _run_step(args, "pyarrow")
        local = _run_step(args, "local")
        dask1 = _run_step(args, "dask", workers=1)
        machine = machine_parallelism(args.repeat)
        dask2 = _run_step(args, "dask", workers=2)
    finally:
        if not args.keep:
            args.path.unlink(missing_ok=True)
            tmp.rmdir()
            print(f"deleted {args.path}")
        else:
            print(f"kept {args.path}")
    assert local["rows"] == dask1["rows"] == dask2["rows"] == n
    same = local["counts_sha"] == dask1["counts_sha"] == dask2["counts_sha"]
    rate = {
        k: n / v["seconds"]
        for k, v in [("pyarrow", floor), ("local", local), ("dask1", dask1), ("dask2", dask2)]
    }
    print(f"{'path':<28}{'seconds':>9}{'reports/s':>16}{'x pyarrow floor':>17}")
    for label, key, res in [
        ("pyarrow iter_batches (floor)", "pyarrow", floor),
        ("engine local", "local", local),
        ("engine dask, 1 worker", "dask1", dask1),
        ("engine dask, 2 workers", "dask2", dask2),
    ]:
        print(f"{label:<28}{res['seconds']:>9.2f}{rate[key]:>16,.0f}{rate[key] / rate['pyarrow']:>17.2f}")
    print(
        f"local engine peak RSS {local['peak_rss_mib']:,.0f} MiB (process after imports: "
        f"{local['rss_before_mib']:,.0f} MiB; pyarrow-only reader peak {floor['peak_rss_mib']:,.0f} MiB); "
        f"target < 1024 MiB: {'met' if local['peak_rss_mib'] < 1024 else 'NOT met'}"
    )
    print(
        f"dask 2 workers / 1 worker: {rate['dask2'] / rate['dask1']:.2f}x (target >= 1.6); the same numpy job "
        f"in 2 processes vs 1 during this run: {machine:.2f}x (how much parallelism the shared machine offered)"
    )
    cpu1, cpu2 = dask1["worker_cpu"], dask2["worker_cpu"]
    print(
        f"worker CPU seconds: 1 worker {sum(cpu1):.2f}; 2 workers {' + '.join(f'{c:.2f}' for c in cpu2)}; "
        f"if each worker had a core of its own: 2w/1w ~ {sum(cpu1) / max(cpu2):.2f}x (projection, not measured)"
    )
    print(f"local and dask states identical (sha256 of counts): {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
