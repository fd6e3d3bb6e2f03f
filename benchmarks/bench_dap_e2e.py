"""DAP-09 throughput, one table: Prio3Histogram(length 1024) from the client to the collection.

    PYTHONPATH=src python benchmarks/bench_dap_e2e.py [--reports 2000] [--connections 32] [--db sqlite|URL]

In one run: the floor (TurboSHAKE128 expanding one report's MEAS_LEN + PROOF_LEN Field128 elements,
CPU time), the VDAF steps in process (``bench_dap.py``: client sharding, the leader's and the
helper's preparation), then the deployment through real processes: ``privstats dap serve leader``
and ``... helper`` on 127.0.0.1 (SQLite files in a temporary folder, or two databases at a
PostgreSQL URL prefix); ``--reports`` reports sharded and sealed by privstats' client (CPU time per
report), uploaded over ``--connections`` keep-alive connections (one ``PUT`` per report, as DAP
clients do), aggregated by the leader's driver and the helper, collected.  Each server's CPU seconds
per report come from /proc, counted once both servers are idle after their start (the leader's driver
process imports and loads the compiled kernels after /healthz answers); the leader's splits into its
server process (the uploads, the collector's routes) and its driver process (aggregation jobs,
collections).  Their maximum bounds the pair's throughput when each has its own core, their mean
when both share this machine's two cores (work split evenly).  The servers run with the CLI's
defaults (two jobs in flight; BENCH_DAP_JOB_SIZE / _WORKERS / _DRIVER override).
End to end = first upload to collection done, wall clock; it splits into the uploads and the tail
(aggregating what was not aggregated while the uploads ran, then the collection); the share
aggregated by the end of the uploads and the load generator's own CPU are printed too.  The
collector's post-processing is imported and run once before the timed window (its first call costs
~1-2 s of SciPy imports, which earlier runs counted in the tail).  Every row
is printed as µs/report, reports/s and × floor.  The machine's load moves the wall-clock rows; CPU
rows and ratios are steadier.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from privstats.ustat.mpc.wire import free_port

sys.path.insert(0, str(Path(__file__).parent))


def _cpu_seconds(pid: int, children: bool = True) -> float:
    """CPU seconds of a process and (``children``) its children alive now (the leader's driver process)."""
    total = 0.0
    for p in [pid, *(_children(pid) if children else [])]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    try:
        kids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []
    return [k for c in kids for k in (c, *_children(c))]


def _wait_idle(pids: list[int], timeout: float = 120.0) -> None:
    """Wait until the servers' process trees are idle (each under 20 ms of CPU in 0.5 s): their
    start-up (the leader's driver process imports and warms up the VDAF kernels after /healthz
    answers) must not be counted as work per report."""
    end = time.perf_counter() + timeout
    before = [_cpu_seconds(p) for p in pids]
    while time.perf_counter() < end:
        time.sleep(0.5)
        now = [_cpu_seconds(p) for p in pids]
        if all(b - a < 0.02 for a, b in zip(before, now, strict=True)):
            return
        before = now


def _start(role: str, task: Path, db: str, port: int) -> subprocess.Popen:
    import httpx

    cmd = [sys.executable, "-m", "privstats", "dap", "serve", role, "--task", str(task), "--db", db]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    if role == "leader":
        cmd += ["--job-size", os.environ.get("BENCH_DAP_JOB_SIZE", "1024")]
        # BENCH_DAP_JOB_SIZE: reports per job (1024); BENCH_DAP_JOB_WORKERS: jobs run at once (2)
        # BENCH_DAP_DRIVER: process (the default, the driver in its own process) or thread
        cmd += ["--driver", os.environ.get("BENCH_DAP_DRIVER", "process")]
        if os.environ.get("BENCH_DAP_JOB_WORKERS"):
            cmd += ["--job-workers", os.environ["BENCH_DAP_JOB_WORKERS"]]
    # the servers run as deployed: without this process's OPENBLAS_NUM_THREADS=1 (bench_dap sets it)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{role} did not start")


async def _upload_all(port: int, path: str, bodies: list[bytes], conns: int) -> None:
    """PUT every body over ``conns`` keep-alive HTTP/1.1 connections (one request in flight each).

    A bare asyncio client with the requests' bytes built beforehand, so the load generator's own
    CPU (which shares the machine's cores with the servers) stays small."""
    import asyncio

    from privstats.services.dap.codec import REPORT

    todo = iter(bodies)
    head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {REPORT}\r\nContent-Length: "

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for body in todo:
            writer.write(f"{head}{len(body)}\r\n\r\n".encode() + body)
            lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
            length = next(
                (int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length:")), 0
            )
            answer = await reader.readexactly(length)
            if lines[0].split(b" ")[1] != b"201":
                raise RuntimeError(f"upload refused: {lines[0]!r} {answer[:200]!r}")
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(worker() for _ in range(conns)))


def _aggregated(url: str) -> int:
    """Reports the leader has finished aggregating (SQLite: read-only peek; -1 elsewhere)."""
    import sqlite3

    if not url.startswith("sqlite:///"):
        return -1
    with sqlite3.connect(f"file:{url[len('sqlite:///') :]}?mode=ro", uri=True, timeout=5) as conn:
        q = "SELECT count(*) FROM privstats_dap_reports WHERE state IN ('done', 'failed')"
        return int(conn.execute(q).fetchone()[0])


def _warm_collector(dap) -> None:
    """Import and run the collector's post-processing once (SciPy's sparse solvers and the tree
    smoothing: ~1-2 s of imports on a first call), so the timed collection pays only its own work."""
    from privstats.services.dap.dp import open_noisy

    modulus = int(dap.vdaf().field.MODULUS)
    zeros = [0] * len(dap.spec.mechanism.statistic(__import__("numpy").zeros(dap.spec.n_cells - 1)))
    open_noisy(dap.spec, zeros * dap.spec.n_parts, zeros * dap.spec.n_parts, modulus, 1)


def run(n: int, conns: int, db: str) -> dict[str, float]:
    """One end-to-end run: seconds per report of the client, each server's CPU, uploads, end to end."""
    import asyncio

    import numpy as np

    from privstats.services.dap.client import DapClient, collect
    from privstats.services.dap.task import new_dap_task
    from privstats.services.tasks import write_task

    tmp = Path(tempfile.mkdtemp(prefix="bench-dap-"))
    ports = {"leader": free_port(), "helper": free_port()}
    urls = {r: f"http://127.0.0.1:{p}" for r, p in ports.items()}
    task, secrets = new_dap_task(
        "ecdf", bounds=(0, 1), grid=1023, epsilon=1.0, min_batch=100, urls=urls, chunk_length=32
    )
    path = tmp / "task.json"
    write_task(task, secrets, path)
    dbs = {r: (f"sqlite:///{tmp}/{r}.db" if db == "sqlite" else f"{db}_{r}") for r in ports}
    procs = {r: _start(r, path, dbs[r], ports[r]) for r in ("helper", "leader")}
    try:
        client = DapClient(path)
        x = np.random.default_rng(0).beta(2, 5, size=n)
        tp = client.dap.time_precision
        now = int(time.time()) // tp * tp
        t0 = time.process_time()
        bodies = [client.report(c, now).encode() for c in client.spec.cells(x)[:, 0].tolist()]
        t_client = (time.process_time() - t0) / n
        _warm_collector(client.dap)
        _wait_idle([p.pid for p in procs.values()])
        cpu0 = {r: _cpu_seconds(p.pid) for r, p in procs.items()}
        server0 = _cpu_seconds(procs["leader"].pid, children=False)
        start, gen0 = time.perf_counter(), time.process_time()
        asyncio.run(_upload_all(ports["leader"], f"/tasks/{client.dap.task_id_b64}/reports", bodies, conns))
        uploaded, t_gen = time.perf_counter(), (time.process_time() - gen0) / n
        done_at_upload_end = _aggregated(dbs["leader"])
        collect(path, timeout=3600)
        done = time.perf_counter()
        cpu = {r: (_cpu_seconds(p.pid) - cpu0[r]) / n for r, p in procs.items()}
        server = (_cpu_seconds(procs["leader"].pid, children=False) - server0) / n
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(60)
    return {
        "aggregated during uploads": done_at_upload_end / n,
        "load generator": t_gen,
        "client": t_client,
        "leader": cpu["leader"],
        "leader server": server,
        "helper": cpu["helper"],
        "uploads": (uploaded - start) / n,
        "e2e": (done - start) / n,
    }


def table(vdaf: dict[str, float], e2e: dict[str, float]) -> list[tuple[str, float]]:
    """The rows ``(what, seconds per report)`` of the one table, in print order."""
    return [
        ("client sharding (VDAF shard)", vdaf["client shard"]),
        ("client report (shard + 2 HPKE seals)", e2e["client"]),
        ("leader preparation (VDAF)", vdaf["leader prep_init"] + vdaf["aggregate"]),
        (
            "helper preparation (VDAF)",
            vdaf["helper prep_init"] + vdaf["prep_shares_to_prep"] + vdaf["aggregate"],
        ),
        ("leader process CPU (all work)", e2e["leader"]),
        ("  of which uploads (server process)", e2e["leader server"]),
        ("  of which jobs (driver process)", e2e["leader"] - e2e["leader server"]),
        ("helper process CPU (all work)", e2e["helper"]),
        ("server pair CPU bound (core each)", max(e2e["leader"], e2e["helper"])),
        ("server pair CPU bound (2 cores shared)", (e2e["leader"] + e2e["helper"]) / 2),
        ("upload load generator CPU (same cores)", e2e["load generator"]),
        ("uploads, wall clock", e2e["uploads"]),
        ("aggregation tail after uploads + collect", e2e["e2e"] - e2e["uploads"]),
        ("end to end, wall clock", e2e["e2e"]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reports", type=int, default=2000)
    ap.add_argument("--vdaf-reports", type=int, default=200)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--db", default="sqlite", help="sqlite, or a postgresql+psycopg://... URL prefix")
    args = ap.parse_args()
    from bench_dap import bench_vdaf

    vdaf = bench_vdaf(args.vdaf_reports, 1024, 32)
    e2e = run(args.reports, args.connections, args.db)
    floor = vdaf["floor"]
    print(
        f"Prio3Histogram(1024, 32): {args.reports} reports through real processes ({args.db}, "
        f"{args.connections} upload connections), {args.vdaf_reports} in process; load {os.getloadavg()[0]:.1f}"
    )
    print(f"floor: TurboSHAKE128 expanding one report's field elements, {floor * 1e6:.1f} us")
    print(f"{'step':<41}{'us/report':>11}{'reports/s':>11}{'x floor':>9}")
    for name, sec in table(vdaf, e2e):
        print(f"{name:<41}{sec * 1e6:>11.1f}{1 / sec:>11.0f}{sec / floor:>9.1f}")
    if e2e["aggregated during uploads"] >= 0:
        print(
            f"aggregated by the time the uploads ended: {e2e['aggregated during uploads']:.0%} of the reports"
        )


if __name__ == "__main__":
    main()
