"""Benchmark of the local-DP frequency oracles (d = 1024, ε = 1, Zipf data).

Prints, per oracle: simulate + estimate throughput (users/s), the ratio to a plain
vectorized numpy GRR measured in the same run, the ratio to pure-LDP's per-user
client/server when ``pure_ldp`` is importable, the server path (encode_batch with a
seeded source, then aggregate), the MSE / exact-variance ratio over repetitions,
client encode_batch throughput with the OS CSPRNG, and peak memory at n = 10^7.

    python benchmarks/bench_local.py            # full run (a few minutes on 2 cores)
    python benchmarks/bench_local.py --quick    # smaller n and repetitions
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tracemalloc
import types

import numpy as np

from privstats.local import GRR, OLH, OUE, HadamardResponse

D, EPS = 1024, 1.0


def zipf_counts(n: int, d: int = D, s: float = 1.1, seed: int = 0) -> np.ndarray:
    w = 1.0 / np.arange(1, d + 1) ** s
    return np.random.default_rng(seed).multinomial(n, w / w.sum())


def values_from_counts(counts: np.ndarray, seed: int = 1) -> np.ndarray:
    v = np.repeat(np.arange(counts.size), counts)
    np.random.default_rng(seed).shuffle(v)
    return v


def best_time(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def plain_numpy_grr(values: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """The baseline: k-RR with a resample mask, bincount and debiasing, nothing else."""
    e = math.exp(EPS)
    p, q = e / (e + D - 1), 1 / (e + D - 1)
    out = values.copy()
    mask = gen.random(values.size) < D * q
    out[mask] = gen.integers(0, D, size=int(mask.sum()))
    return (np.bincount(out, minlength=D) - values.size * q) / (p - q)


def load_pure_ldp():
    """pure-LDP's oracles, or None.  Its package __init__ imports statsmodels for RAPPOR only;
    when statsmodels is absent we stub it (RAPPOR is not benchmarked)."""
    try:
        import statsmodels.api  # noqa: F401
    except ImportError:
        stub = types.ModuleType("statsmodels")
        stub.api = types.ModuleType("statsmodels.api")
        sys.modules.setdefault("statsmodels", stub)
        sys.modules.setdefault("statsmodels.api", stub.api)
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient,
            HadamardResponseServer,
        )
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
    except Exception as exc:
        print(f"pure-LDP not available ({type(exc).__name__}: {exc}); ratios to it are omitted")
        return None

    def make(name):
        if name == "grr":
            s = DEServer(EPS, D)
            return DEClient(EPS, D), s
        if name == "oue":
            return UEClient(EPS, D, use_oue=True), UEServer(EPS, D, use_oue=True)
        if name == "olh":
            return LHClient(EPS, D, use_olh=True), LHServer(EPS, D, use_olh=True)
        s = HadamardResponseServer(EPS, D)
        return HadamardResponseClient(EPS, D, s.get_hash_funcs()), s

    return make


def pure_ldp_rate(make, name: str, n: int) -> float:
    """Users/s of pure-LDP's client + server + estimate over the whole domain (its per-user API)."""
    client, server = make(name)
    values = values_from_counts(zipf_counts(n, seed=5), seed=6) + 1  # pure-LDP indexes items from 1
    t = time.perf_counter()
    for v in values:
        server.aggregate(client.privatise(int(v)))
    server.estimate_all(range(1, D + 1), suppress_warnings=True)
    return n / (time.perf_counter() - t)


def mse_ratio(oracle, counts: np.ndarray, reps: int, seed: int) -> float:
    gen = np.random.default_rng(seed)
    sq = np.zeros(D)
    for _ in range(reps):
        sq += (oracle.estimate(oracle.simulate_counts(counts, gen)).value - counts) ** 2
    return float(sq.sum() / reps / oracle.variance(int(counts.sum()), counts).sum())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller n and repetitions")
    ap.add_argument("--no-pure-ldp", action="store_true")
    args = ap.parse_args(argv)
    n_big, n_olh = (10**5, 2 * 10**4) if args.quick else (10**6, 10**5)
    reps = 20 if args.quick else 200
    pure = None if args.no_pure_ldp else load_pure_ldp()
    pure_n = {"grr": 20_000, "oue": 2_000, "olh": 500, "hr": 10_000}
    if args.quick:
        pure_n = {k: v // 4 for k, v in pure_n.items()}

    counts_big = zipf_counts(n_big)
    values_big = values_from_counts(counts_big)
    gen = np.random.default_rng(7)
    t_base = best_time(lambda: plain_numpy_grr(values_big, gen))
    base_rate = n_big / t_base
    print(f"d={D} eps={EPS} Zipf(1.1); plain numpy GRR baseline: {base_rate:.3g} users/s at n={n_big:.0e}\n")

    oracles = {"grr": GRR(D, EPS), "oue": OUE(D, EPS), "olh": OLH(D, EPS), "hr": HadamardResponse(D, EPS)}
    rows = []
    for name, oracle in oracles.items():
        n = n_olh if name == "olh" else n_big
        counts = counts_big if n == n_big else zipf_counts(n)
        values = values_big if n == n_big else values_from_counts(counts)
        g = np.random.default_rng(11)
        t = best_time(lambda: oracle.estimate(oracle.simulate(values, rng=g)))
        rate = n / t
        # server path: real reports (seeded source), then aggregate + estimate
        n_srv = min(n, 10**5 if name != "oue" else 2 * 10**4)
        reports = oracle.encode_batch(values[:n_srv], rng=3)
        t_srv = best_time(lambda: oracle.estimate(oracle.aggregate(reports)), repeat=2)
        # client encode with the OS CSPRNG
        n_enc = min(n, 2 * 10**4 if name == "oue" else 10**5)
        t_enc = best_time(lambda: oracle.encode_batch(values[:n_enc]), repeat=2)
        ratio = mse_ratio(oracle, counts, reps if name != "hr" else max(10, reps // 2), seed=13)
        pure_rate = pure_ldp_rate(pure, name, pure_n[name]) if pure else float("nan")
        rows.append(
            (
                name,
                n,
                rate,
                rate / base_rate,
                rate / pure_rate,
                n_srv / t_srv,
                n_srv / t_srv / pure_rate,
                n_enc / t_enc,
                ratio,
                pure_rate,
            )
        )

    print(
        "| oracle | n | simulate+estimate users/s | vs plain numpy GRR | vs pure-LDP | server encode→aggregate "
        "users/s | server vs pure-LDP | client encode (CSPRNG) users/s | MSE/exact | pure-LDP users/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]:.0e} | {r[2]:.3g} | {r[3]:.2f}x | {r[4]:.0f}x | {r[5]:.3g} | {r[6]:.0f}x | "
            f"{r[7]:.3g} | {r[8]:.3f} | {r[9]:.3g} |"
        )

    # n = 10^7 in bounded memory: GRR from the histogram, HR drawing per user in chunks
    big = zipf_counts(10**7, seed=21)
    for name in ("grr", "hr"):
        oracle = oracles[name]
        tracemalloc.start()
        t = time.perf_counter()
        est = oracle.estimate(oracle.simulate_counts(big, np.random.default_rng(1)))
        dt = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        err = np.max(np.abs(est.value - big) / est.stderr)
        print(
            f"n=1e7 {name}: {dt:.2f} s, peak traced memory {peak / 2**20:.1f} MiB, max |error|/stderr {err:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
