"""ECDF / quantile benchmark: privstats vs OpenDP's consistent b-ary tree, cvxopt and diffprivlib.

Same data in one run: X_pois(3) with N = 2^15 (about 98k records), ε in {1, 0.1}, both
neighbouring relations (OpenDP d_in = 2 is replace-one, d_in = 1 add/remove);
Eq. 3 L2 smoothing vs cvxopt's QP; ECDF of 10^7 values vs np.sort; 5 quantiles of
10^5 Beta(2, 5) values vs diffprivlib.  Prints ratios; never asserted in tests.

    python benchmarks/bench_ecdf.py [--runs 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privstats
from privstats.cdf.smoothing import smooth
from privstats.cdf.tree import BinaryTreeMechanism


def _best(f, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def opendp_cdf(x, N, eps, d_in):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    b = dp.t.choose_branching_factor(N)
    hist = dp.t.make_count_by_categories(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance(),
                                         categories=list(range(N - 1)), null_category=True, MO=dp.L1Distance[int])
    tree = hist >> dp.t.then_b_ary_tree(leaf_count=N, branching_factor=b)
    meas = dp.binary_search_chain(lambda s: tree >> dp.m.then_laplace(s), d_in=d_in, d_out=eps)
    cons, cdf = dp.t.make_consistent_b_ary_tree(branching_factor=b), dp.t.make_cdf()
    return np.array(cdf(cons(meas(x.tolist()))))


def diffprivlib_style_quantiles(x, qs, epsilon, bounds, rng):
    """diffprivlib's documented algorithm (tools.quantile): per quantile, sort, clip, exponential
    mechanism over the intervals between order statistics with ε/m, uniform inside (used when
    diffprivlib cannot be imported, e.g. with scikit-learn >= 1.8)."""
    out = []
    for q in qs:
        z = np.sort(np.clip(np.concatenate([x, list(bounds)]), *bounds))
        k = np.arange(z.size - 1)
        util = -np.abs(k - q * (z.size - 2))
        with np.errstate(divide="ignore"):
            logw = np.log(np.diff(z)) + epsilon / len(qs) * util / 2
        w = np.exp(logw - logw.max())
        i = rng.choice(k, p=w / w.sum())
        out.append(rng.uniform(z[i], z[i + 1]))
    return np.array(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    N = 2 ** 15
    cnt = rng.poisson(3, N)
    x = np.repeat(np.arange(N), cnt)
    F = np.cumsum(cnt) / x.size
    print(f"X_pois(3): N = {N}, n = {x.size}")
    print("ECDF summed squared error (mean over runs) and time per release")
    for eps in (1.0, 0.1):
        for nb, d_in in (("replace", 2), ("add-remove", 1)):
            ours_err, ours_t, ref_err, ref_t = [], [], [], []
            for r in range(args.runs):
                t = time.perf_counter()
                res = privstats.ecdf(x, epsilon=eps, bounds=(0, N - 1), grid=N, smoothing="none", neighbours=nb,
                                     rng=r)
                ours_t.append(time.perf_counter() - t)
                ours_err.append(((res.probabilities - F) ** 2).sum())
                try:
                    t = time.perf_counter()
                    out = opendp_cdf(x, N, eps, d_in)
                    ref_t.append(time.perf_counter() - t)
                    ref_err.append(((out - F) ** 2).sum())
                except ImportError:
                    pass
            line = (f"  eps={eps:<4} {nb:<10} ours {np.mean(ours_err):.4g} ({res.estimate.params['mechanism']}, "
                    f"b={res.estimate.params['branching']}) in {np.median(ours_t):.3f}s")
            if ref_err:
                line += (f" | OpenDP {np.mean(ref_err):.4g} in {np.median(ref_t):.3f}s | error ratio "
                         f"{np.mean(ours_err) / np.mean(ref_err):.2f}, time ratio {np.median(ours_t) / np.median(ref_t):.2f}")
            print(line)
    paper = BinaryTreeMechanism(N, 1.0)
    print(f"  paper's binary tree (replace, eps=1): exact SSE {paper.count_variance().sum() / x.size ** 2:.4g}")

    print("Eq. 3 smoothing at N = 2^15 (eps = 1, paper's tree), best of 3")
    Fh = paper.release(np.cumsum(cnt), rng=1) / x.size
    t_ours, S = _best(lambda: smooth(Fh, "l2"))
    try:
        t_cvx, S_ref = _best(lambda: smooth(Fh, "l2", solver="cvxopt"), repeat=2)
        print(f"  L2: ours {t_ours:.3f}s, cvxopt {t_cvx:.3f}s, speed-up {t_cvx / t_ours:.1f}x, "
              f"max |difference| {np.abs(S - S_ref).max():.1e}")
    except ImportError:
        print(f"  L2: ours {t_ours:.3f}s (cvxopt not installed)")
    t_l1, _ = _best(lambda: smooth(Fh, "l1"), repeat=1)
    t_iso, _ = _best(lambda: smooth(Fh, "isotonic"))
    print(f"  L1 (HiGHS) {t_l1:.3f}s, isotonic {t_iso:.4f}s")

    big = np.random.default_rng(2).uniform(0, 1, 10 ** 7)
    t_sort, _ = _best(lambda: np.sort(big), repeat=2)
    t_ecdf, _ = _best(lambda: privstats.ecdf(big, epsilon=1.0, bounds=(0, 1), rng=0), repeat=2)
    print(f"ECDF of 1e7 values: {t_ecdf:.3f}s vs np.sort {t_sort:.3f}s (ratio {t_ecdf / t_sort:.2f})")

    xb = np.random.default_rng(3).beta(2, 5, 10 ** 5)
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    true = np.quantile(xb, qs)
    print("5 quantiles of 1e5 Beta(2,5), eps = 1: MAE (mean over runs), time per call")
    rows = {}
    for method in ("independent", "joint", "tree"):
        errs, ts = [], []
        for r in range(args.runs):
            t = time.perf_counter()
            v = privstats.quantiles(xb, qs, epsilon=1.0, bounds=(0, 1), method=method, rng=r).value
            ts.append(time.perf_counter() - t)
            errs.append(np.abs(v - true).mean())
        rows[method] = (np.mean(errs), np.median(ts))
    try:
        from diffprivlib.tools import quantile as dpl_quantile

        errs, ts = [], []
        for r in range(args.runs):
            t = time.perf_counter()
            v = dpl_quantile(xb, qs, epsilon=1.0, bounds=(0, 1), random_state=r)
            ts.append(time.perf_counter() - t)
            errs.append(np.abs(np.asarray(v) - true).mean())
        rows["diffprivlib"] = (np.mean(errs), np.median(ts))
    except ImportError:
        errs, ts = [], []
        for r in range(args.runs):
            t = time.perf_counter()
            v = diffprivlib_style_quantiles(xb, qs, 1.0, (0, 1), np.random.default_rng(r))
            ts.append(time.perf_counter() - t)
            errs.append(np.abs(v - true).mean())
        rows["diffprivlib"] = (np.mean(errs), np.median(ts))
        print("  (diffprivlib does not import here; its documented algorithm is reimplemented)")
    base = rows.get("diffprivlib")
    for k, (e, t) in rows.items():
        extra = f" | error ratio {e / base[0]:.2f}, speed-up {base[1] / t:.1f}x vs diffprivlib" if base and k != "diffprivlib" else ""
        print(f"  {k:<12} MAE {e:.3g} in {t:.4f}s{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
