"""DAP-09 end to end through real processes: Prio3Histogram(length 1024) uploads, aggregation, collection.

    PYTHONPATH=src python benchmarks/bench_dap_e2e.py [--reports 2000] [--threads 8] [--db sqlite|URL]

Starts ``privstats dap serve leader`` and ``... helper`` on 127.0.0.1 (SQLite files in a temporary
folder, or two databases at a PostgreSQL URL prefix), shards and seals ``--reports`` reports in
process (privstats' client), uploads them from ``--threads`` threads (one ``PUT`` per report, as DAP
clients do), then collects.  Prints wall-clock rates (uploads, aggregation after the last upload,
end to end = reports / (first upload → collection done)) and each server's CPU seconds per report
(from /proc), whose maximum bounds the pair's throughput when each has its own core; the floor is
TurboSHAKE128 expanding one report's MEAS_LEN + PROOF_LEN field elements (``bench_dap.py``).
The machine's load moves the wall-clock figures; the CPU figures and ratios are steadier.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(role: str, task: Path, db: str, port: int) -> subprocess.Popen:
    import httpx

    cmd = [sys.executable, "-m", "privstats", "dap", "serve", role, "--task", str(task), "--db", db]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--job-size", "512"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{role} did not start")


def run(n: int, threads: int, db: str) -> dict[str, float]:
    """One end-to-end run; returns the measured rates and CPU costs."""
    import httpx
    import numpy as np

    from privstats.services.dap.client import DapClient, collect
    from privstats.services.dap.codec import REPORT
    from privstats.services.dap.task import new_dap_task
    from privstats.services.tasks import write_task

    tmp = Path(tempfile.mkdtemp(prefix="bench-dap-"))
    ports = {"leader": _free_port(), "helper": _free_port()}
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
        t0 = time.perf_counter()
        bodies = [client.report(c, now).encode() for c in client.spec.cells(x)[:, 0].tolist()]
        t_client = (time.perf_counter() - t0) / n
        cpu0 = {r: _cpu_seconds(p.pid) for r, p in procs.items()}
        url = f"{urls['leader']}/tasks/{client.dap.task_id_b64}/reports"

        def upload(part: list[bytes]) -> None:
            with httpx.Client(timeout=60) as h:
                for b in part:
                    r = h.put(url, content=b, headers={"Content-Type": REPORT})
                    assert r.status_code == 201, r.text

        start = time.perf_counter()
        ths = [threading.Thread(target=upload, args=(bodies[i::threads],)) for i in range(threads)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        uploaded = time.perf_counter()
        collect(path, timeout=3600)
        done = time.perf_counter()
        cpu = {r: (_cpu_seconds(p.pid) - cpu0[r]) / n for r, p in procs.items()}
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(60)
    return {
        "client shard+seal s/report": t_client,
        "upload reports/s": n / (uploaded - start),
        "aggregation after last upload s": done - uploaded,
        "end to end reports/s": n / (done - start),
        "leader CPU s/report": cpu["leader"],
        "helper CPU s/report": cpu["helper"],
        "pair CPU bound reports/s": 1 / max(cpu["leader"], cpu["helper"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reports", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--db", default="sqlite", help="sqlite, or a postgresql+psycopg://... URL prefix")
    args = ap.parse_args()
    from bench_dap import floor_per_report

    from privstats.secure.vdaf import Prio3Histogram

    floor = floor_per_report(Prio3Histogram(1024, 32), 200)
    res = run(args.reports, args.threads, args.db)
    print(f"Prio3Histogram(1024, 32), {args.reports} reports, {args.threads} upload threads, {args.db}")
    print(f"floor (TurboSHAKE128, one report's field elements): {floor * 1e6:.1f} us")
    for k, v in res.items():
        extra = f"  ({v / floor:.1f} x floor)" if k.endswith("s/report") else ""
        print(f"{k:<34}{v:>12.4g}{extra}")


if __name__ == "__main__":
    main()
