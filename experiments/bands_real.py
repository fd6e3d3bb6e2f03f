"""Pointwise bands on real data: the ECDF's ``confidence_interval`` and the ROC curve's
``details["curve_ci"]``, at every threshold of the curve, and the frequencies' and range counts'
intervals entry by entry (issue 26).

The coverage table (coverage_real.py) scores a vector statistic by its intervals' coverage averaged over
the entries; a band a user plots must hold at each point.  Per cell (the data sets and corners of that
table, all five corners; the ECDF on its 64 grid points, the ROC curve on the release's own grid) this prints the mean
coverage over the interior points (exact value strictly inside (0, 1)), the worst point's, how many
points fall below 0.9, and the mean width.  At 200 seeds a point whose coverage is 0.95 reads below
0.90 about one time in 860 (binomial sd 0.0154), and the worst of 50-2,000 such points reads
0.88-0.925 by chance alone.

    privstats experiment bands_real --out DIR --runs 200 --jobs 2 --md experiments/bands_real.md
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import coverage_real as cr

NAME = "bands_real"
CORNERS = cr.CORNERS  # the table's five: n in {300, 5,000} x eps in {0.5, 2}, and (1,000, 1)
DATASETS = ("fair", "anes96", "breast_cancer", "randhie")
CURVES = ("ecdf", "roc_curve", "frequencies", "range_counts")
MODELS = ("central", "secure", "shuffle", "local")
CURVE_MODELS = {c: cr.MODELS.get(c, ()) for c in CURVES}  # every model the library offers each
SHUFFLE_RUNS = 100  # the shuffled counts take ~0.3 s a release


def _points(curve: str, d: dict, model: str, eps: float, seed: int, counts: dict | None = None):
    """(lows, highs, exacts) of one release: one array per curve of the band (ECDF: one; ROC: fpr, tpr);
    ``counts``: the frequencies' or range counts' ``coverage_real.spec``."""
    import privstats as P

    if counts is not None:  # counts over n: "inside" is strictly within (0, n)
        lo, hi = counts["call"](model, eps, seed).ci(0.95)
        n = d["y"].size
        return [(np.asarray(lo) / n, np.asarray(hi) / n, np.asarray(counts["exact"]) / n)]
    if curve == "ecdf":
        x, (lo, hi) = d["x"], d["xb"]
        t = lo + (hi - lo) * np.arange(1, cr.ECDF_GRID + 1) / cr.ECDF_GRID
        F = P.ecdf(x, epsilon=eps, bounds=d["xb"], grid=cr.ECDF_GRID, model=model, rng=seed)
        band = F.confidence_interval(0.95)
        exact = np.searchsorted(np.sort(x), t, side="right") / x.size
        return [(band.low.probabilities, band.high.probabilities, exact)]
    y, p = d["y"], d["p"]
    _, _, thresholds, est = P.roc_curve(y, p, epsilon=eps, model=model, rng=seed)
    fpr_lo, fpr_hi, tpr_lo, tpr_hi = est.details["curve_ci"](0.95)
    t = thresholds[1:-1, None]  # "positive when score > threshold"; the ends are exact
    rate = [np.r_[0.0, (p[y == cls] > t).mean(axis=1), 1.0] for cls in (0, 1)]
    return [(fpr_lo, fpr_hi, rate[0]), (tpr_lo, tpr_hi, rate[1])]


def run_cell(cell: dict, runs: int, first: int = 0) -> dict:
    """One cell's row over seeds ``first`` … ``first + runs − 1`` (past the cell's own seed base)."""
    data, resampled = cr.subsample(cr.load(cell["data"]), cell["n"], seed=cell["n"])
    base = int.from_bytes(hashlib.sha256(repr(cr._key(cell)).encode()).digest()[:4], "little") * 1000
    counts = (
        cr.spec(cell["stat"], data, cell["n"]) if cell["stat"] in ("frequencies", "range_counts") else None
    )
    hits: list[list[np.ndarray]] = []
    widths, exacts = [], None
    for r in range(first, first + runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = _points(cell["stat"], data, cell["model"], cell["eps"], base + r, counts)
        hits.append([(lo <= ex + 1e-12) & (ex <= hi + 1e-12) for lo, hi, ex in parts])
        widths.append(np.mean([np.mean(hi - lo) for lo, hi, _ in parts]))
        exacts = [ex for _, _, ex in parts]
    assert exacts is not None
    per_point = np.concatenate(
        [np.mean([h[j] for h in hits], axis=0)[(ex > 0) & (ex < 1)] for j, ex in enumerate(exacts)]
    )
    return {
        **cell,
        "runs": runs,
        "first_seed": first,
        "resampled": resampled,
        "points": int(per_point.size),
        "coverage": float(per_point.mean()),
        "worst_point": float(per_point.min()),
        "points_below_0.9": int((per_point < 0.9).sum()),
        "width": float(np.mean(widths)),
    }


def table(rows: list[dict]) -> str:
    head = "| curve | model | data | n | ε | seeds | points | coverage (mean) | worst point | points < 0.9 | width |"
    out = [head, "|" + "---|" * 11]
    order = {m: i for i, m in enumerate(MODELS)}
    for r in sorted(rows, key=lambda r: (r["stat"], order[r["model"]], r["data"], r["n"], r["eps"])):
        out.append(
            f"| {r['stat']} | {r['model']} | {r['data']} | {r['n']}{'*' if r['resampled'] else ''} | {r['eps']:g} "
            f"| {r['runs']} | {r['points']} | {r['coverage']:.3f} | {r['worst_point']:.3f} "
            f"| {r['points_below_0.9']} | {r['width']:.3g} |"
        )
    return "\n".join(out) + "\n"


def _job(args):
    cell, runs, first = args
    return run_cell(cell, runs, first)


def main(argv=None) -> int:
    ap = C.parser(NAME, __doc__, runs=200, runs_help="seeds per cell")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--md", type=Path, default=None, help="also write the markdown table here")
    ap.add_argument("--data", nargs="*", default=list(DATASETS), help="data sets (default: the four)")
    args = ap.parse_args(argv)
    out = C.prepare(args)
    corners = [(300, 1.0)] if args.smoke else CORNERS
    datasets = args.data[:1] if args.smoke else args.data
    runs = 2 if args.smoke else args.runs
    todo = [
        {"data": ds, "n": n, "eps": eps, "stat": curve, "model": model}
        for curve in CURVES
        for model in MODELS
        if model in CURVE_MODELS[curve]
        for n, eps in corners
        for ds in datasets
    ]
    path = out / "cells.jsonl"
    done = {}
    if path.exists():  # resumable: finished cells at these seeds are kept
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if (
                r["runs"] >= min(runs, SHUFFLE_RUNS if r["model"] == "shuffle" else runs)
                and r["first_seed"] == args.seed
            ):
                done[cr._key(r)] = r
    todo = [c for c in todo if cr._key(c) not in done]
    with C.Progress(len(todo), NAME) as prog, path.open("a") as f:
        jobs = [(c, min(runs, SHUFFLE_RUNS) if c["model"] == "shuffle" else runs, args.seed) for c in todo]
        with ProcessPoolExecutor(max(args.jobs, 1)) as pool:  # workers start only when jobs > 1 uses them
            for r in pool.map(_job, jobs) if args.jobs > 1 else map(_job, jobs):
                done[cr._key(r)] = r
                f.write(json.dumps(r) + "\n")
                f.flush()
                prog.advance()
    text = table(list(done.values()))
    C.publish(out, text, args.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
