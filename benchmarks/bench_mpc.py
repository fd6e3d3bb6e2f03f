"""Throughput of the SPU pairs backend beside SPU's raw comparison, in the same run.

Two local party processes (Cheetah 2PC over TCP on 127.0.0.1).  Method, applied alike to every
configuration, raw ``a<b`` included:

* **warm-up**: two batches of every configuration before any timing (compile this batch shape, and
  Cheetah's lazy OT setup);
* **interleaved**: each batch of pairs goes through every configuration in turn (the order rotates
  from batch to batch), and each configuration's time is summed over the batches of a repeat, so
  that a shared machine's load swings hit all of them alike;
* **median of repeats**: ``--repeat`` timed repeats (one above 10^5 pairs); each configuration's
  rate is the median over the repeats, and its ratio is that median over raw ``a<b``'s median.
  Cheetah refills its silent-OT pool when it runs low and charges the refill (seconds) to whichever
  job triggers it, so a single timing of a path can swing by ±30%; the median over repeats removes
  most of that, for raw and our paths alike.

The configurations:

* ``raw a<b``     — SPU's plain secret comparison of two int64 (one comparison, not exact for floats);
* ``exact >``     — the kernel with no noise (exact for all finite floats: one comparison + a one-bit AND);
* ``noisy RR``    — AUC's ``greater`` kernel with randomized response drawn inside the 2PC (the exact
  comparison, and the coin as a tree of ANDs on joint random bits, bit-sliced 64 pairs per word with
  the comparison's top-bit fix in its first level: no second comparison, no conversion);
* ``Laplace``     — ``greater_half`` (one comparison; ``[a = b]`` from a bit-sliced AND tree on the
  full words, no equality test) with the discrete Laplace drawn inside the 2PC (its coins are trees
  of ANDs on joint random bits, bit-sliced; kernel + noise mod 2^(J+1) by a boolean adder, released
  as a boolean-shared word: 124 ANDs in 9 levels per pair at ε = 1);
* ``Laplace shares`` — ``greater_half`` with each party adding its own discrete Laplace share (free).

Run in the mpc virtualenv (see .ci/mpc)::

    python benchmarks/bench_mpc.py --sizes 1e4,1e5,1e6 --laplace-max 1e5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

CONFIGS = (
    ("raw a<b", "raw_less", "none"),
    ("exact >", "greater", "none"),
    ("noisy RR", "greater", "rr"),
    ("Laplace", "greater_half", "laplace"),
    ("Laplace shares", "greater_half", "laplace-shares"),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1e4,1e5", help="pairs per run, comma separated")
    p.add_argument("--repeat", type=int, default=3, help="timed repeats (median) up to 10^5 pairs")
    p.add_argument("--batch", type=int, default=50_000, help="pairs per SPU job")
    p.add_argument("--verbose", action="store_true", help="print every repeat's rates")
    p.add_argument("--laplace-max", type=float, default=1e5, help="largest size for the Laplace path")
    args = p.parse_args(argv)

    from privstats.ustat.mpc import SpuSession, SpuTwoParty, spu_available

    if not spu_available():
        print("spu not importable: run in the mpc virtualenv (see .ci/mpc)")
        return 1
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    g = np.random.default_rng(0)
    a, b = g.normal(size=max(sizes)) * 3, g.normal(size=max(sizes)) * 3  # mixed signs
    sess = SpuSession()
    try:
        print(f"load average at start: {os.getloadavg()[0]:.2f}; batch {args.batch:,} pairs per job")
        print(f"{'pairs':>9} " + " ".join(f"{name:>20}" for name, _, _ in CONFIGS))
        for m in sizes:
            backends = {
                name: SpuTwoParty(
                    k, pair_epsilon=1.0, mechanism=mech, session=sess, batch_size=min(args.batch, m)
                )
                for name, k, mech in CONFIGS
                if not (name == "Laplace" and m > args.laplace_max)
            }
            for _ in range(2):  # warm-up: compile this batch shape; Cheetah's first runs set up lazily
                for be in backends.values():
                    be.raw(a[: min(args.batch, m)], b[: min(args.batch, m)])
            bs = min(args.batch, m)
            runs: dict[str, list[float]] = {name: [] for name in backends}
            for rep in range(args.repeat if m <= 100_000 else 1):
                spent = dict.fromkeys(backends, 0.0)
                names = list(backends)
                for i, s in enumerate(range(0, m, bs), start=rep):
                    for name in names[i % len(names) :] + names[: i % len(names)]:  # rotate the order
                        t = time.perf_counter()
                        backends[name].raw(a[s : s + bs], b[s : s + bs])
                        spent[name] += time.perf_counter() - t
                for name in backends:
                    runs[name].append(m / spent[name])
            rates = {name: float(np.median(r)) for name, r in runs.items()}
            if args.verbose:
                for name, r in runs.items():
                    print(f"    {name:>16}: " + ", ".join(f"{x:,.0f}/s" for x in r))
            raw = rates["raw a<b"]
            cells = [
                f"{rates[name]:>10,.0f}/s ({rates[name] / raw:.2f}x)" if name in rates else f"{'-':>20}"
                for name, _, _ in CONFIGS
            ]
            print(f"{m:>9,} " + " ".join(cells), flush=True)
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
    finally:
        sess.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
