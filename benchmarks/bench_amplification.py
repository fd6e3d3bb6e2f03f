"""Benchmark: what the variation-ratio / strong-clone accounting buys at fixed (ε, δ).

Prints, for n ∈ {1e4, 1e6}, ε ∈ {0.5, 1}, δ = 1e-6:

* the local ε0 a shuffle protocol may use under the previous default (``"fmt-numeric"``) and the
  new one (``"tightest"``), and the gain;
* shuffled k-ary randomized response (k = 2, 16, 256): the blanket probability γ under the
  previous calibration (k-RR's own blanket only) and the new one (the minimum with the generic
  clone bounds), and the standard error of a count (at a value held by 10% of the users) under
  both, with their ratio;
* the lower bound on ε at the new calibration (how far from tight the claim is);
* the time of one calibration.

Run: ``python benchmarks/bench_amplification.py``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from privstats.privacy.amplification import krr_blanket_delta, local_epsilon_for
from privstats.shuffle.single import ShuffledKRR


def _old_gamma(k: int, n: int, eps: float, delta: float) -> float:
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if krr_blanket_delta(eps, mid, k, n) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def main() -> int:
    delta = 1e-6
    print(f"{'n':>9} {'eps':>4} | {'eps0 fmt-numeric':>16} {'eps0 tightest':>13} {'gain':>6} | time (s)")
    for n in (10_000, 1_000_000):
        for eps in (0.5, 1.0):
            old = local_epsilon_for(eps, n, delta, "fmt-numeric")
            t0 = time.perf_counter()
            new = local_epsilon_for(eps, n, delta)
            dt = time.perf_counter() - t0
            print(f"{n:>9} {eps:>4} | {old:>16.4f} {new:>13.4f} {new - old:>6.3f} | {dt:.2f}")
    print()
    print(
        f"{'n':>9} {'eps':>4} {'k':>4} | {'gamma old':>9} {'gamma new':>9} | "
        f"{'SE old':>8} {'SE new':>8} {'new/old':>7} | {'eps lower':>9}"
    )
    for n in (10_000, 1_000_000):
        for eps in (0.5, 1.0):
            for k in (2, 16, 256):
                try:
                    g_old = _old_gamma(k, n, eps, delta)
                    new = ShuffledKRR(k, n=n, epsilon=eps, delta=delta)
                except ValueError:
                    print(f"{n:>9} {eps:>4} {k:>4} | cannot reach (eps, delta)")
                    continue
                if g_old >= 1:
                    print(f"{n:>9} {eps:>4} {k:>4} | old calibration cannot reach (eps, delta)")
                    continue
                old = ShuffledKRR(k, n=n, epsilon=eps, delta=delta, gamma=g_old)
                counts = np.full(k, (0.9 * n) / max(k - 1, 1))
                counts[0] = 0.1 * n
                se_old = math.sqrt(float(old.variance(counts)[0]))
                se_new = math.sqrt(float(new.variance(counts)[0]))
                lb = new.epsilon_lower_bound
                print(
                    f"{n:>9} {eps:>4} {k:>4} | {g_old:>9.4f} {new.gamma:>9.4f} | "
                    f"{se_old:>8.1f} {se_new:>8.1f} {se_new / se_old:>7.3f} | {lb:>9.4f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
