"""Benchmark: what the k-RR blanket-pair accounting buys at fixed (ε, δ) (issue 22, item 8).

For shuffled k-ary randomized response, k = 3..256, n = 1e4..1e6, ε ∈ {0.5, 1}, δ = 1e-6, it prints

* the local ε0 the previous calibration allowed (the smaller of the revealed-residual clone pair
  ``krr_revealed_delta`` and the generic clone bounds — the old ``krr_exact_delta``) and the new one
  (``ShuffledKRR``'s calibration, which now uses the blanket pair of ``privstats.privacy.krr_shuffle``);
* the standard error of a count (a value held by 10% of the users) under both, and their ratio
  (new/old < 1: the same guarantee with less noise);
* the lower bound on ε at the new calibration (a concrete pair of datasets: the claim is within
  this factor of exact) and the CPU time of one new calibration;

then the time of ``shuffled_epsilon`` at n = 1e9.  A first table gives ε at fixed ε0 (n = 1e4, 1e6):
the previous bound, the new one and the lower bound, with their ratios to the lower bound (hence
upper bounds on their ratios to the exact curve).  A second one does the same for k = 2 (binary RR,
n = 1e4, 1e5, 1e6), where the accountant now uses the minority-coins block bound of
``privstats.privacy.binary_shuffle`` instead of the blanket pair (for n ≤ 5000 the exact curve).
(For small n — n ≤ 40 at k = 3, 20 at k = 4, 9 at k = 8 — the accountant enumerates the exact
curve: see ``privstats.privacy.krr_exact``; not shown here.)

Run: ``python benchmarks/bench_amplification.py``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from privstats.privacy.amplification import krr_revealed_delta, shuffled_epsilon, tightest_delta
from privstats.privacy.clone_pairs import smallest_eps
from privstats.privacy.krr_shuffle import krr_shuffle_delta
from privstats.privacy.variation_ratio import shuffled_epsilon_lower
from privstats.shuffle.single import ShuffledKRR


def _old_delta(eps: float, gamma: float, k: int, n: int) -> float:
    d = krr_revealed_delta(eps, gamma, k, n)
    if d > 0 and 0 < gamma < 1:
        d = min(d, tightest_delta(eps, math.log(k / gamma - k + 1), n))
    return d


def _old_gamma(k: int, n: int, eps: float, delta: float) -> float:
    if _old_delta(eps, 1.0, k, n) > delta:
        return math.inf
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _old_delta(eps, mid, k, n) <= delta else (mid, hi)
    return hi


def _row(n: int, eps: float, k: int, delta: float) -> str:
    g_old = _old_gamma(k, n, eps, delta)
    t0 = time.process_time()
    try:
        new = ShuffledKRR(k, n=n, epsilon=eps, delta=delta)
    except ValueError:
        return f"{n:>9} {eps:>4} {k:>4} | cannot reach (eps, delta)"
    dt = time.process_time() - t0
    if g_old >= 1:
        return (
            f"{n:>9} {eps:>4} {k:>4} | old calibration cannot reach (eps, delta); new eps0 {new.epsilon0:.3f}"
        )
    old = ShuffledKRR(k, n=n, epsilon=eps, delta=delta, gamma=g_old)
    counts = np.full(k, (0.9 * n) / (k - 1))
    counts[0] = 0.1 * n
    se_old = math.sqrt(float(old.variance(counts)[0]))
    se_new = math.sqrt(float(new.variance(counts)[0]))
    lb = new.epsilon_lower_bound or 0.0
    return (
        f"{n:>9} {eps:>4} {k:>4} | {old.epsilon0:>8.3f} {new.epsilon0:>8.3f} | "
        f"{se_old:>9.1f} {se_new:>9.1f} {se_new / se_old:>7.3f} | {lb:>9.4f} {eps / lb:>7.3f} | {dt:>5.2f}"
    )


def _fixed_eps0_table(delta: float) -> None:
    """ε at fixed ε0: previous tightest bound, new bound, and a lower bound (a concrete pair of datasets)."""
    head = f"{'eps old':>8} {'eps new':>8} {'eps lower':>9} | {'old/lb':>6} {'new/lb':>6}"
    print(f"{'n':>9} {'k':>4} {'eps0':>5} | {head}")
    old_ratio: dict[int, list[float]] = {}
    for n in (10_000, 1_000_000):
        for k in (3, 4, 8, 16, 100):
            for e0 in (1.0, 2.0, 4.0):
                g = k / (math.exp(e0) + k - 1)
                old = smallest_eps(lambda e, g=g, e0=e0: _old_delta(e, g, k, n), delta, e0, 1e-7)
                new = shuffled_epsilon(e0, n, delta, k=k, randomizer="krr")
                lb = shuffled_epsilon_lower(e0, n, delta, "krr", k=k) or 0.0
                old_ratio.setdefault(k, []).append(old / lb)
                print(
                    f"{n:>9} {k:>4} {e0:>5} | {old:>8.4f} {new:>8.4f} {lb:>9.4f} | {old / lb:>6.3f} {new / lb:>6.3f}"
                )
    print("median old/lb by k:", {k: round(float(np.median(v)), 3) for k, v in old_ratio.items()})
    print()


def _binary_table(delta: float) -> None:
    """k = 2: ε of the blanket pair alone, of the accountant and a lower bound (all others hold 0)."""
    print(
        f"{'n':>9} {'eps0':>5} | {'blanket':>8} {'now':>8} {'lower':>8} | {'blk/lb':>6} {'now/lb':>6} | cpu s"
    )
    for n in (10_000, 100_000, 1_000_000):
        for e0 in (1.0, 3.0, 5.0):
            blanket = smallest_eps(
                lambda e, e0=e0: krr_shuffle_delta(e, e0, n, 2, exact=True), delta, e0, 1e-7
            )
            t0 = time.process_time()
            now = shuffled_epsilon(e0, n, delta, k=2, randomizer="krr")
            dt = time.process_time() - t0
            lb = shuffled_epsilon_lower(e0, n, delta, "krr", k=2) or 0.0
            print(
                f"{n:>9} {e0:>5} | {blanket:>8.4f} {now:>8.4f} {lb:>8.4f} | "
                f"{blanket / lb:>6.3f} {now / lb:>6.3f} | {dt:>5.2f}"
            )
    print()


def main() -> int:
    delta = 1e-6
    _fixed_eps0_table(delta)
    _binary_table(delta)
    print(
        f"{'n':>9} {'eps':>4} {'k':>4} | {'eps0 old':>8} {'eps0 new':>8} | "
        f"{'SE old':>9} {'SE new':>9} {'new/old':>7} | {'eps lower':>9} {'claim/lb':>7} | cpu s"
    )
    for n in (10_000, 100_000, 1_000_000):
        for eps in (0.5, 1.0):
            for k in (3, 4, 8, 16, 64, 256):
                print(_row(n, eps, k, delta), flush=True)
    print()
    for kw in ({}, {"randomizer": "krr", "k": 16}, {"randomizer": "krr", "k": 2}):
        t0 = time.process_time()
        e = shuffled_epsilon(2.0, 10**9, 1e-6, **kw)  # type: ignore[arg-type]
        print(f"shuffled_epsilon(2.0, 10**9, 1e-6, {kw}) = {e:.6f} in {time.process_time() - t0:.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
