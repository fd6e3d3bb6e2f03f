"""Is the default private summary ever worse than uniform sampling? (issue 15, item 8)

For targets of 60 and 600 rows at ε ∈ {1, 4} (δ = 1e-5), p = 50 summary rows, d = 256 random
features, γ = 1/10: MMD² of the default ``summarize(method="private")`` (the planner's choice: the
Gaussian sketch, or uniform sampling when the target is too small for the budget), of the sketch
forced (``fallback=False``, the old default), of uniform sampling and of non-private greedy.
Two cases from ``summarization_covariate_shift.sized_case``: the covariate shift (target from
state B) and no shift (the target distributed like a uniform sample, where uniform is best).
Mean ± SE over seeds; ``default − uniform`` and ``forced − uniform`` are paired by seed (the
same data, and the same rng, so a fallback run *is* the uniform run).

    privstats experiment summarization_fallback [--smoke] [--out DIR] [--seed 0] [--runs 20]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from summarization_covariate_shift import sized_case

import privstats

SIZE, N_FEATURES, DELTA = 50, 256, 1e-5
TARGETS, EPSILONS = (60, 600), (1.0, 4.0)


def measure(shift: bool, n_target: int, seeds, *, size: int = SIZE, scale: int = 1) -> dict:
    """Per-seed MMD² of greedy, uniform and, per ε, the default and the forced sketch."""
    out: dict = {"greedy": [], "uniform": []}
    for seed in seeds:
        owners, target = sized_case(seed, n_target, shift=shift, scale=scale)
        kw = dict(size=size, n_features=N_FEATURES, rng=10_000 + seed)
        out["greedy"].append(privstats.summarize(owners, target, method="greedy", **kw).mmd2)
        out["uniform"].append(privstats.summarize(owners, target, method="uniform", **kw).mmd2)
        for eps in EPSILONS:
            res = privstats.summarize(owners, target, epsilon=eps, delta=DELTA, **kw)
            out.setdefault(("default", eps), []).append(res.mmd2)
            out[("plan", eps)] = res.params["plan"]
            forced = privstats.summarize(owners, target, epsilon=eps, delta=DELTA, fallback=False, **kw)
            out.setdefault(("forced", eps), []).append(forced.mmd2)
    return {k: (np.array(v) if isinstance(v, list) else v) for k, v in out.items()}


def mean_se(x) -> str:
    x = np.asarray(x, dtype=float)
    return f"{x.mean():.4f} ± {x.std(ddof=1) / np.sqrt(x.size):.4f}"


def rows_for(shift: bool, n_target: int, data: dict) -> list[dict]:
    rows = []
    for eps in EPSILONS:
        plan = data[("plan", eps)]
        rows.append(
            {
                "case": "covariate shift" if shift else "no shift",
                "target": n_target,
                "epsilon": eps,
                "seeds": data["uniform"].size,
                "chosen": plan["choice"],
                "tau/S": f"{plan['bid_noise_sd']:.3f}/{plan['score_spread']:.3f}",
                "default": mean_se(data[("default", eps)]),
                "forced sketch": mean_se(data[("forced", eps)]),
                "uniform": mean_se(data["uniform"]),
                "greedy": mean_se(data["greedy"]),
                "default - uniform": mean_se(data[("default", eps)] - data["uniform"]),
                "forced - uniform": mean_se(data[("forced", eps)] - data["uniform"]),
            }
        )
    return rows


def main(argv=None) -> int:
    ap = C.parser("summarization_fallback", __doc__, runs=20, runs_help="seeds per cell")
    args = ap.parse_args(argv)
    out = C.prepare(args)
    runs = 2 if args.smoke else args.runs
    seeds = list(range(args.seed, args.seed + runs))
    scale = 10 if args.smoke else 1
    t0 = time.perf_counter()
    rows = []
    for shift in (True, False):
        for n_target in TARGETS:
            rows += rows_for(shift, n_target, measure(shift, n_target, seeds, scale=scale))
    cols = [(k, k) for k in rows[0]]
    C.show(f"MMD² of a {SIZE}-row summary: default vs forced sketch, uniform, greedy (mean ± SE)", rows, cols)
    C.write_rows(out, "summarization_fallback", rows, cols)
    print(f"{time.perf_counter() - t0:.0f} s; tables in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
