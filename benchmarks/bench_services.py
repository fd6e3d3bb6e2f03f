"""Services throughput: one collector process ingesting batched uploads, and the shuffler -> analyzer path.

Measured in one run, on this machine:

* **floor** — a raw SQLAlchemy Core bulk insert (``conn.execute(insert(table), rows)``, one
  transaction per 1000 rows, the same schema and pragmas: WAL, ``synchronous=FULL``) of the same rows;
* **collector** — a real ``privstats serve collector`` process, uploads of 1000 reports per request
  over HTTP on 127.0.0.1 (parsing, validation, replay-protected insert, incremental aggregation,
  commit before the answer): reports/s and p50/p99 request latency, on SQLite and, when the
  PostgreSQL binaries are present, on a throwaway PostgreSQL cluster;
* **shuffler -> analyzer** — k-RR messages HPKE-encrypted by the clients (not timed), uploaded to a
  shuffler, shuffled, forwarded and decrypted + aggregated by the analyzer: messages/s until the
  analyzer has them all.

Usage::

    python benchmarks/bench_services.py [--reports 200000] [--clients 2] [--messages 30000] [--no-postgres]

Prints ratios against the floor measured in the same run; no thresholds are asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "services"))

BATCH = 1000
MIN_BATCH = 5000  # the shuffle task's minimum batch


def floor(db_url: str, ids: list[bytes], payloads: list[bytes], task_id: bytes) -> float:
    """Raw SQLAlchemy bulk insert of the same rows, one transaction per batch: rows/s."""
    from sqlalchemy import insert

    from privstats.services.storage import Storage, reports

    st = Storage(db_url)
    t0 = time.perf_counter()
    for i in range(0, len(ids), BATCH):
        rows = [
            {"task_id": task_id, "report_id": r, "body": b}
            for r, b in zip(ids[i : i + BATCH], payloads[i : i + BATCH], strict=True)
        ]
        with st.transaction() as conn:
            conn.execute(insert(reports), rows)
    dt = time.perf_counter() - t0
    st.close()
    return len(ids) / dt


def upload_all(
    url: str, task_id: str, token: str, bodies: list[bytes], clients: int
) -> tuple[float, np.ndarray]:
    """POST every body (``clients`` concurrent connections): (reports/s, latencies in s)."""
    import httpx

    lat: list[float] = []
    lock = threading.Lock()
    nxt = iter(range(len(bodies)))

    def worker() -> None:
        with httpx.Client(timeout=120) as http:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                t = time.perf_counter()
                r = http.post(
                    f"{url}/tasks/{task_id}/reports",
                    content=bodies[i],
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream"},
                )
                r.raise_for_status()
                with lock:
                    lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t0
    return len(bodies) * BATCH / dt, np.array(lat)


def bench_collector(tmp: Path, db_url: str, floor_db: str, n: int, clients: int, label: str) -> dict:
    from conftest import Server, free_port, make_task

    from privstats.client import Client
    from privstats.services.tasks import load_secrets

    port = free_port()
    task = make_task(
        tmp,
        "--statistic",
        "frequencies",
        "--model",
        "local",
        "--protocol",
        "grr",
        "--domain-size",
        "64",
        "--epsilon",
        "1",
        "--min-batch",
        "1000",
        "--collector",
        f"http://127.0.0.1:{port}",
        name=f"task-{label}.json",
    )
    client = Client(None, task)
    reports = client.encode(np.random.default_rng(0).integers(0, 64, n), rng=1)
    bodies = [client.upload_body(reports[i : i + BATCH]) for i in range(0, n, BATCH)]
    fl = floor(floor_db, [r.report_id for r in reports], [r.payload for r in reports], client.task.id_bytes)
    srv = Server("collector", task, db_url, port).start()
    try:
        rate, lat = upload_all(
            srv.url, client.task.task_id, load_secrets(task, "client").token("upload"), bodies, clients
        )
    finally:
        code = srv.stop()
    return {
        "label": label,
        "floor": fl,
        "rate": rate,
        "p50": float(np.percentile(lat, 50)),
        "p99": float(np.percentile(lat, 99)),
        "exit": code,
    }


def bench_shuffle(tmp: Path, n: int) -> dict:
    from conftest import Server, free_port, make_task

    from privstats.client import Client
    from privstats.services.tasks import load_secrets

    sp, ap = free_port(), free_port()
    task = make_task(
        tmp,
        "--statistic",
        "frequencies",
        "--model",
        "shuffle",
        "--protocol",
        "single-rr",
        "--domain-size",
        "64",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--min-batch",
        str(MIN_BATCH),
        "--shuffler",
        f"http://127.0.0.1:{sp}",
        "--analyzer",
        f"http://127.0.0.1:{ap}",
        name="task-shuffle.json",
    )
    client = Client(None, task)
    t = time.perf_counter()
    reports = client.encode(np.random.default_rng(2).integers(0, 64, n), rng=3)
    enc = n / (time.perf_counter() - t)
    bodies = [client.upload_body(reports[i : i + BATCH]) for i in range(0, n, BATCH)]
    an = Server("analyzer", task, f"sqlite:///{tmp / 'a.sqlite'}", ap).start()
    sh = Server("shuffler", task, f"sqlite:///{tmp / 's.sqlite'}", sp).start()
    try:
        t0 = time.perf_counter()
        up, _ = upload_all(
            sh.url, client.task.task_id, load_secrets(task, "client").token("upload"), bodies, 1
        )
        # the shuffler forwards batches of >= min_batch reports: the last < min_batch wait for more
        while True:
            got, pending = (
                client.status("analyzer")["n_reports"],
                client.status("shuffler")["pending_reports"],
            )
            if got + pending >= n and pending < MIN_BATCH:
                break
            time.sleep(0.05)
        rate = got / (time.perf_counter() - t0)
    finally:
        sh.stop()
        an.stop()
    # the decrypt-bound core of the analyzer, in process
    from privstats.services.security import hpke_info, hpke_open_many

    sk = load_secrets(task, "analyzer").private_key_bytes
    cts = [r.payload[:] for r in reports[:5000]]
    t = time.perf_counter()
    hpke_open_many(sk, cts, hpke_info("shuffle", client.task.id_bytes))
    dec = len(cts) / (time.perf_counter() - t)
    return {"messages_per_s": rate, "upload_per_s": up, "client_encrypt_per_s": enc, "decrypt_per_s": dec}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=200_000)
    ap.add_argument("--clients", type=int, default=2, help="concurrent upload connections")
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="privstats-bench-"))
    rows = [
        bench_collector(
            tmp,
            f"sqlite:///{tmp / 'c.sqlite'}",
            f"sqlite:///{tmp / 'floor.sqlite'}",
            args.reports,
            args.clients,
            "sqlite",
        )
    ]
    pg = None
    if not args.no_postgres:
        pg = _postgres(tmp)
        if pg is not None:
            rows.append(
                bench_collector(tmp, pg[0]("c"), pg[0]("floor"), args.reports, args.clients, "postgres")
            )
    print(
        f"collector, {args.reports} reports in uploads of {BATCH}, {args.clients} concurrent clients "
        f"(cpu count {os.cpu_count()}, load {os.getloadavg()[0]:.1f})"
    )
    print(f"{'db':<10}{'floor rows/s':>14}{'reports/s':>12}{'ratio':>8}{'p50 ms':>9}{'p99 ms':>9}{'exit':>6}")
    for r in rows:
        print(
            f"{r['label']:<10}{r['floor']:>14,.0f}{r['rate']:>12,.0f}{r['rate'] / r['floor']:>8.2f}"
            f"{1e3 * r['p50']:>9.1f}{1e3 * r['p99']:>9.1f}{r['exit']:>6}"
        )
    s = bench_shuffle(tmp, args.messages)
    print(
        f"shuffler -> analyzer, {args.messages} k-RR messages: {s['messages_per_s']:,.0f} msgs/s end to end "
        f"(upload {s['upload_per_s']:,.0f}/s; analyzer HPKE decrypt alone {s['decrypt_per_s']:,.0f}/s; "
        f"client encrypt {s['client_encrypt_per_s']:,.0f}/s)"
    )
    if pg is not None:
        pg[1]()
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _postgres(tmp: Path):
    """(createdb(name) -> url, stop()) of a throwaway cluster, or None without the binaries."""
    import glob

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if not bins and shutil.which("initdb") is None:
        print("PostgreSQL binaries not found: skipping the PostgreSQL collector")
        return None
    bindir = os.path.dirname(bins[0] if bins else shutil.which("initdb"))
    from conftest import free_port

    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = tmp / "pg"
    root.mkdir()
    os.chmod(tmp, 0o755)
    data = root / "data"
    data.mkdir()
    if as_pg:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        [*as_pg, f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "bench"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_pg,
            f"{bindir}/pg_ctl",
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-w",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )

    def createdb(name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={port} user=bench dbname=postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return f"postgresql+psycopg://bench@127.0.0.1:{port}/{name}"

    def stop() -> None:
        subprocess.run(
            [*as_pg, f"{bindir}/pg_ctl", "-D", str(data), "-m", "fast", "stop"], capture_output=True
        )

    return createdb, stop


if __name__ == "__main__":
    sys.exit(main())
