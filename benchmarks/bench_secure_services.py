"""Secure (leader/helper) deployment: cost split and end-to-end reports/s for N = 1024 grid points.

    PYTHONPATH=src python benchmarks/bench_secure_services.py [--reports 4000] [--grid 1024] [--no-e2e]

Part 1 (in process, one core): per-report cost of each step for a batch of ``--reports`` reports
with N + 1 = 1025 cells — client sharing + proof, HPKE sealing (2 per report), the leader's and
the helper's HPKE opening, both servers' validity check, aggregation — and the reports/s the
server pair can sustain if each server runs on its own core (bounded by the slower server).

Part 2 (real processes on 127.0.0.1, SQLite): ``privstats serve leader`` and ``helper``; the time
from the first upload until every report is verified and aggregated (end-to-end reports/s), then
the collection latency.  A collection's cost does not grow with the batch: the batch total is a
vector of N + 1 field elements, so the 10^6-report figure is the same computation (printed from
part 1 with a total of 10^6 reports).

Figures depend on the machine's load; ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np


def _t(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def part1(n_reports: int, grid: int) -> dict:
    from privstats.secure.leader_helper import BatchTotal, SecureAggregator, SecureSpec, decode_shares, encode
    from privstats.services.security import generate_keypair, hpke_info, hpke_open, hpke_seal

    spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=grid)
    x = np.random.default_rng(0).uniform(size=n_reports)
    reps, t_share = _t(encode, spec, x)
    (skl, pkl), (skh, pkh) = generate_keypair(), generate_keypair()
    tid = bytes(16)

    def seal_all():
        return [
            (
                hpke_seal(pkl, r.leader_share, hpke_info("secure-leader", tid, r.report_id)),
                hpke_seal(pkh, r.helper_seed, hpke_info("secure-helper", tid, r.report_id)),
            )
            for r in reps
        ]

    cts, t_seal = _t(seal_all)
    lshares, t_open_l = _t(
        lambda: [
            hpke_open(skl, c[0], hpke_info("secure-leader", tid, r.report_id))
            for c, r in zip(cts, reps, strict=True)
        ]
    )
    seeds, t_open_h = _t(
        lambda: [
            hpke_open(skh, c[1], hpke_info("secure-helper", tid, r.report_id))
            for c, r in zip(cts, reps, strict=True)
        ]
    )
    sh0, t_dec_l = _t(decode_shares, spec, lshares, 0)
    sh1, t_dec_h = _t(decode_shares, spec, seeds, 1)
    ids = [r.report_id for r in reps]
    agg = [SecureAggregator(spec, p, bytes(32), tid) for p in (0, 1)]
    s0, t_prep_l = _t(agg[0].prepare, ids, sh0, b"job")
    s1, t_prep_h = _t(agg[1].prepare, ids, sh1, b"job")
    w1, t_chk_h = _t(agg[1].check, s1, s0.d_share)
    w0, t_chk_l = _t(agg[0].check, s0, s1.d_share)
    ok = agg[0].decide(w0, w1)
    assert ok.all()
    tot = [BatchTotal.empty(spec), BatchTotal.empty(spec)]
    _, t_add_l = _t(tot[0].add, sh0, ok)
    _, t_add_h = _t(tot[1].add, sh1, ok)
    big = BatchTotal(tot[0].total, 10**6, 0)
    _, t_partial = _t(agg[0].partial, big)
    leader = t_open_l + t_dec_l + t_prep_l + t_chk_l + t_add_l
    helper = t_open_h + t_dec_h + t_prep_h + t_chk_h + t_add_h
    per = 1e6 / n_reports
    print(f"\n== secure leader/helper, N = {spec.n_cells} cells, {n_reports} reports (in process) ==")
    print(
        f"client: shares + proof {t_share * per:8.1f} us/report, HPKE seal x2 {t_seal * per:8.1f} us/report"
    )
    print(
        f"leader: HPKE open {t_open_l * per:7.1f}  decode {t_dec_l * per:6.1f}  "
        f"verify {(t_prep_l + t_chk_l) * per:6.1f}"
        f"  aggregate {t_add_l * per:5.1f}  = {leader * per:7.1f} us/report -> {n_reports / leader:8.0f} reports/s"
    )
    print(
        f"helper: HPKE open {t_open_h * per:7.1f}  seeds  {t_dec_h * per:6.1f}  "
        f"verify {(t_prep_h + t_chk_h) * per:6.1f}"
        f"  aggregate {t_add_h * per:5.1f}  = {helper * per:7.1f} us/report -> {n_reports / helper:8.0f} reports/s"
    )
    share = {
        "hpke": (t_open_l + t_open_h) / (leader + helper),
        "verify": (t_prep_l + t_chk_l + t_prep_h + t_chk_h) / (leader + helper),
    }
    print(
        f"server-pair bound (one core each): {n_reports / max(leader, helper):8.0f} reports/s; "
        f"HPKE {100 * share['hpke']:.0f}% and verification {100 * share['verify']:.0f}% of server CPU"
    )
    print(f"collection (one server's partial, batch of 10^6 reports): {1e3 * t_partial:.1f} ms")
    return {"pair_bound": n_reports / max(leader, helper), "partial_ms": 1e3 * t_partial}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def part2(n_reports: int, grid: int) -> None:
    import httpx

    from privstats.cli import main as cli
    from privstats.client import Client

    tmp = tempfile.mkdtemp(prefix="privstats-bench-secure-")
    lp, hp = _port(), _port()
    task = os.path.join(tmp, "task.json")
    assert (
        cli(
            [
                "task",
                "new",
                "--statistic",
                "ecdf",
                "--model",
                "secure",
                "--bounds",
                "0",
                "1",
                "--grid",
                str(grid),
                "--epsilon",
                "1",
                "--min-batch",
                "100",
                "--leader",
                f"http://127.0.0.1:{lp}",
                "--helper",
                f"http://127.0.0.1:{hp}",
                "--out",
                task,
            ]
        )
        == 0
    )
    procs = []
    for role, port in (("helper", hp), ("leader", lp)):
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "privstats",
                    "serve",
                    role,
                    "--task",
                    task,
                    "--db",
                    f"sqlite:///{tmp}/{role}.sqlite",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
    try:
        with Client(None, task) as c:
            reps = c.encode(np.random.default_rng(1).uniform(size=n_reports))
            t0 = time.perf_counter()
            c.upload(reps)
            t_up = time.perf_counter() - t0
            # exact progress is read from the leader's database (the HTTP status serves no counts)
            from privstats.services.aggregators import operator_progress

            while operator_progress(f"sqlite:///{tmp}/leader.sqlite", c.task).get("2", 0) < n_reports:
                time.sleep(0.1)
            t_all = time.perf_counter() - t0
            t1 = time.perf_counter()
            c.collect_secure()
            t_col = time.perf_counter() - t1
        print(
            f"end to end ({n_reports} reports, real processes, SQLite): uploads acknowledged in {t_up:.1f} s "
            f"({n_reports / t_up:.0f} reports/s); all verified and aggregated after {t_all:.1f} s "
            f"({n_reports / t_all:.0f} reports/s); collection {1e3 * t_col:.0f} ms"
        )
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=4000)
    ap.add_argument("--grid", type=int, default=1024)
    ap.add_argument("--no-e2e", action="store_true")
    a = ap.parse_args()
    part1(a.reports, a.grid)
    if not a.no_e2e:
        part2(a.reports, a.grid)


if __name__ == "__main__":
    main()
