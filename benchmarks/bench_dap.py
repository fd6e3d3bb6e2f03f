"""DAP-09 / VDAF-08 throughput: Prio3Histogram client sharding and the aggregators' preparation.

    PYTHONPATH=src python benchmarks/bench_dap.py [--reports 400] [--length 1024] [--chunk-length 32]

VDAF part (in process, CPU time of this process, one core): per-report cost of

* client sharding (``shard_encoded``: measurement share, joint randomness, proof),
* leader preparation (``prep_init_batch`` with agg_id 0, from the encoded input shares),
* helper preparation (``prep_init_batch`` with agg_id 1: seed expansion, then the same check),
* combining the prep shares into the prep message (``prep_shares_to_prep_batch``, done by the
  helper in DAP's one-round flow), and the output-share aggregation,

each also as a ratio to the floor: TurboSHAKE128 expanding the same number of field elements as one
report's measurement and proof (MEAS_LEN + PROOF_LEN Field128 elements), measured in the same run.
The server pair's CPU bound is the reports/s when each aggregator has its own core (bounded by the
slower one); the single-core figure adds both.

Figures depend on the machine's load; ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import os
import time

# Small matrix products: threads only add overhead (and CPU time is what is measured).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from collections.abc import Callable
from typing import Any


def _cpu(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """Result of fn and the smallest CPU time of ``repeat`` runs (seconds)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return out, best


def vdaf_reports(vdaf: Any, n: int, seed: int = 0) -> list[tuple[bytes, bytes, list[bytes]]]:
    """``n`` sharded reports (nonce, public share, input shares) with bucket indices from ``seed``."""
    import numpy as np

    buckets = np.random.default_rng(seed).integers(0, vdaf.flp.OUTPUT_LEN, size=n)
    out = []
    for b in buckets.tolist():
        nonce = os.urandom(vdaf.NONCE_SIZE)
        public, shares = vdaf.shard_encoded(b, nonce, os.urandom(vdaf.RAND_SIZE))
        out.append((nonce, public, shares))
    return out


def floor_per_report(vdaf: Any, n: int) -> float:
    """CPU seconds per report for TurboSHAKE128 to expand MEAS_LEN + PROOF_LEN field elements."""
    from privstats.secure.vdaf.xof import XofTurboShake128

    n_bytes = (vdaf.flp.MEAS_LEN + vdaf.flp.PROOF_LEN) * vdaf.field.ENCODED_SIZE
    seeds = [os.urandom(16) for _ in range(n)]

    def run() -> None:
        for s in seeds:
            XofTurboShake128(s, b"floor", b"").next(n_bytes)

    return _cpu(run)[1] / n


def bench_vdaf(n_reports: int = 400, length: int = 1024, chunk_length: int = 32) -> dict[str, float]:
    """Per-report CPU seconds of each VDAF step for Prio3Histogram(length, chunk_length)."""
    from privstats.secure.vdaf import Prio3Histogram

    vdaf = Prio3Histogram(length, chunk_length)
    vdaf.shard_encoded(0, bytes(16), bytes(vdaf.RAND_SIZE))  # build the cached tables
    reports, t_shard = _cpu(lambda: vdaf_reports(vdaf, n_reports), repeat=1)
    key = os.urandom(vdaf.VERIFY_KEY_SIZE)
    nonces = [r[0] for r in reports]
    publics = [r[1] for r in reports]

    def prep(agg_id: int) -> list[Any]:
        return vdaf.prep_init_batch(key, agg_id, None, nonces, publics, [r[2][agg_id] for r in reports])

    leader, t_leader = _cpu(lambda: prep(0))
    helper, t_helper = _cpu(lambda: prep(1))
    pairs = [[lead[1], help_[1]] for lead, help_ in zip(leader, helper, strict=True)]
    msgs, t_combine = _cpu(lambda: vdaf.prep_shares_to_prep_batch(None, pairs))
    if any(not isinstance(m, bytes) for m in msgs):
        raise RuntimeError("an honest report was rejected")
    outs = [vdaf.prep_next(h[0], m) for h, m in zip(helper, msgs, strict=True)]
    _, t_agg = _cpu(lambda: vdaf.aggregate(None, outs))
    n = n_reports
    return {
        "floor": floor_per_report(vdaf, n),
        "client shard": t_shard / n,
        "leader prep_init": t_leader / n,
        "helper prep_init": t_helper / n,
        "prep_shares_to_prep": t_combine / n,
        "aggregate": t_agg / n,
    }


def report_vdaf(res: dict[str, float]) -> dict[str, float]:
    """Print the VDAF table and return the server-pair bounds (reports/s)."""
    floor = res["floor"]
    print(f"{'step':<22}{'us/report':>11}{'reports/s':>12}{'x floor':>9}")
    for name, sec in res.items():
        print(f"{name:<22}{sec * 1e6:>11.1f}{1 / sec:>12.0f}{sec / floor:>9.1f}")
    leader = res["leader prep_init"] + res["aggregate"]
    helper = res["helper prep_init"] + res["prep_shares_to_prep"] + res["aggregate"]
    bounds = {"pair (one core each)": 1 / max(leader, helper), "pair (one core)": 1 / (leader + helper)}
    for name, rate in bounds.items():
        print(f"server {name:<22}{rate:>10.0f} reports/s")
    return bounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reports", type=int, default=400)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--chunk-length", type=int, default=32)
    args = ap.parse_args()
    print(f"Prio3Histogram(length={args.length}, chunk_length={args.chunk_length}), {args.reports} reports")
    report_vdaf(bench_vdaf(args.reports, args.length, args.chunk_length))


if __name__ == "__main__":
    main()
