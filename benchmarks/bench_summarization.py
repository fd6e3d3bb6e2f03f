"""Benchmark: a 500-point private summary from 5 owners × 10^4 points, d = 512 features.

For the default (discrete-Gaussian, no summary release), the Gaussian sketch released every
round, and the paper's MWEM sketch: total time, time per round, the share spent in owners /
curator / sketches, and
the ratio to the non-private greedy baseline measured in the same run (same data,
fewer rounds, scaled per round).  Target: the private run under 30 s.

    python benchmarks/bench_summarization.py [--owners 5 --points 10000 --size 500 --features 512]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privstats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--owners", type=int, default=5)
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--size", type=int, default=500)
    ap.add_argument("--features", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    owners = [rng.normal(loc=0.3 * i, size=(args.points, args.dim)) for i in range(args.owners)]
    target = rng.normal(loc=0.6, size=(1000, args.dim))
    kw = dict(n_features=args.features, gamma=1.0 / args.dim, rng=args.seed + 1)

    greedy_rounds = max(args.size // 10, 1)
    t0 = time.perf_counter()
    greedy = privstats.summarize(owners, target, size=greedy_rounds, method="greedy", **kw)
    t_greedy = time.perf_counter() - t0

    for label, extra in (
        ("gaussian (default)", {}),
        ("gaussian, release every round", {"release_every": 1}),
        ("mwem (paper)", {"sketch": "mwem"}),
    ):
        t0 = time.perf_counter()
        res = privstats.summarize(owners, target, size=args.size, epsilon=1.0, delta=1e-5, **kw, **extra)
        wall = time.perf_counter() - t0
        tm = res.timings
        print(
            f"private summary, {label}: {args.size} points from {args.owners} owners x {args.points}, "
            f"d={args.features}"
        )
        print(f"  total {wall:.2f} s (target < 30 s)   per round {1e3 * tm['per_round']:.1f} ms")
        for part, name in (("owners", "owners"), ("curator", "curator"), ("mwem", "sketches")):
            print(f"  {name:8s} {tm[part]:7.2f} s  ({100 * tm[part] / tm['total']:4.1f} %)")
        print(
            f"  accessed {res.accessed} source points (+{res.accessed_target} target), "
            f"{res.accessed / args.size:.2f} per selected point"
        )
        print(f"  privacy: target {res.privacy['target']}, owners {res.privacy['owners']}")
    g_round = greedy.timings["per_round"]
    print(f"non-private greedy ({greedy_rounds} rounds): {t_greedy:.2f} s, per round {1e3 * g_round:.1f} ms")
    print(f"ratio private/greedy per round: {tm['per_round'] / g_round:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
