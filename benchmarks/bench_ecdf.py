"""ECDF / quantile benchmark: privstats vs OpenDP's consistent b-ary tree, cvxopt and diffprivlib.

Same data in one run: X_pois(3) with N = 2^15 (about 98k records), ε in {1, 0.1}, both
neighbouring relations (OpenDP d_in = 2 is replace-one, d_in = 1 add/remove);
Eq. 3 L2 smoothing vs cvxopt's QP (best of several, same process); ECDF of 10^7 values vs
np.sort; 5 quantiles of 10^5 Beta(2, 5) values vs diffprivlib and OpenDP.  Prints ratios;
never asserted in tests.

diffprivlib 0.6.6 does not import with scikit-learn >= 1.9 (``sklearn.tree._tree.DOUBLE``
was removed), so the benchmark creates (once) a virtualenv under /tmp with diffprivlib
and the newest compatible scikit-learn (1.8.0), and runs ``diffprivlib.tools.quantile``
on the same data file in a subprocess (its import time is not counted).  OpenDP's
``make_private_quantile`` (Smith's mechanism on a candidate grid) runs in this process.

    python benchmarks/bench_ecdf.py [--runs 5] [--venv DIR]   (default: privstats-bench-diffprivlib in the temp dir)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
    hist = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=int)),
        dp.symmetric_distance(),
        categories=list(range(N - 1)),
        null_category=True,
        MO=dp.L1Distance[int],
    )
    tree = hist >> dp.t.then_b_ary_tree(leaf_count=N, branching_factor=b)
    meas = dp.binary_search_chain(lambda s: tree >> dp.m.then_laplace(s), d_in=d_in, d_out=eps)
    cons, cdf = dp.t.make_consistent_b_ary_tree(branching_factor=b), dp.t.make_cdf()
    return np.array(cdf(cons(meas(x.tolist()))))


DIFFPRIVLIB_PINS = ["diffprivlib==0.6.6", "scikit-learn==1.8.0"]
DIFFPRIVLIB_RUNNER = r"""
import json, sys, time
import numpy as np
from diffprivlib.tools import quantile
import diffprivlib, sklearn
x = np.load(sys.argv[1]); qs = json.loads(sys.argv[2]); runs = int(sys.argv[3])
vals, times = [], []
for r in range(runs):
    t = time.perf_counter()
    v = quantile(x, qs, epsilon=1.0, bounds=(0, 1), random_state=r)
    times.append(time.perf_counter() - t)
    vals.append(np.asarray(v).tolist())
print(json.dumps({"values": vals, "times": times, "versions": [diffprivlib.__version__, sklearn.__version__]}))
"""


def diffprivlib_python(venv: str) -> str | None:
    """The venv's python with diffprivlib importable (created on first use), or None."""
    py = os.path.join(venv, "bin", "python")
    check = [py, "-c", "import diffprivlib.tools"]
    if os.path.exists(py) and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
        subprocess.run(
            [py, "-m", "pip", "install", "-q", *DIFFPRIVLIB_PINS],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as e:
        print(f"  (could not create the diffprivlib virtualenv: {e})")
        return None
    return py if subprocess.run(check, capture_output=True).returncode == 0 else None


def diffprivlib_quantiles(x, qs, runs, venv):
    py = diffprivlib_python(venv)
    if py is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "beta.npy")
        np.save(path, x)
        out = subprocess.run(
            [py, "-c", DIFFPRIVLIB_RUNNER, path, json.dumps(list(qs)), str(runs)],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    if out.returncode != 0:
        print("  (diffprivlib run failed: " + out.stderr.strip().splitlines()[-1] + ")")
        return None
    return json.loads(out.stdout)


def opendp_quantiles(x, qs, epsilon, candidates=4097):
    """OpenDP's own measurement (make_private_quantile), ε/m per quantile, replace-one (d_in = 2)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    dom = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=x.size)
    cands = np.linspace(0, 1, candidates).tolist()
    meas = [
        dp.binary_search_chain(
            lambda s, q=q: dp.m.make_private_quantile(
                dom, dp.symmetric_distance(), dp.max_divergence(), candidates=cands, alpha=q, scale=s
            ),
            d_in=2,
            d_out=epsilon / len(qs),
        )
        for q in qs
    ]
    assert abs(sum(m.map(2) for m in meas) - epsilon) < 1e-6 * epsilon
    return meas


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--venv",
        default=os.path.join(tempfile.gettempdir(), "privstats-bench-diffprivlib"),
        help="virtualenv for diffprivlib (created on first use)",
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    N = 2**15
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
                res = privstats.ecdf(
                    x, epsilon=eps, bounds=(0, N - 1), grid=N, smoothing="none", neighbours=nb, rng=r
                )
                ours_t.append(time.perf_counter() - t)
                ours_err.append(((res.probabilities - F) ** 2).sum())
                try:
                    t = time.perf_counter()
                    out = opendp_cdf(x, N, eps, d_in)
                    ref_t.append(time.perf_counter() - t)
                    ref_err.append(((out - F) ** 2).sum())
                except ImportError:
                    pass
            line = (
                f"  eps={eps:<4} {nb:<10} ours {np.mean(ours_err):.4g} ({res.estimate.params['mechanism']}, "
                f"b={res.estimate.params['branching']}) in {np.median(ours_t):.3f}s"
            )
            if ref_err:
                line += (
                    f" | OpenDP {np.mean(ref_err):.4g} in {np.median(ref_t):.3f}s | error ratio "
                    f"{np.mean(ours_err) / np.mean(ref_err):.2f}, time ratio {np.median(ours_t) / np.median(ref_t):.2f}"
                )
            print(line)
    paper = BinaryTreeMechanism(N, 1.0)
    print(f"  paper's binary tree (replace, eps=1): exact SSE {paper.count_variance().sum() / x.size**2:.4g}")

    print("Eq. 3 smoothing at N = 2^15 (eps = 1, paper's tree), best of 7, runs interleaved in one process")
    Fh = paper.release(np.cumsum(cnt), rng=1) / x.size
    try:
        t_ours = t_cvx = np.inf
        for _ in range(7):  # alternate so both see the same load on a shared machine
            t, S = _best(lambda: smooth(Fh, "l2"), repeat=1)
            t_ours = min(t_ours, t)
            t, S_ref = _best(lambda: smooth(Fh, "l2", solver="cvxopt"), repeat=1)
            t_cvx = min(t_cvx, t)
        print(
            f"  L2: ours {t_ours:.3f}s, cvxopt {t_cvx:.3f}s, speed-up {t_cvx / t_ours:.1f}x, "
            f"max |difference| {np.abs(S - S_ref).max():.1e}"
        )
    except ImportError:
        t_ours, S = _best(lambda: smooth(Fh, "l2"), repeat=7)
        print(f"  L2: ours {t_ours:.3f}s (cvxopt not installed)")
    t_l1, _ = _best(lambda: smooth(Fh, "l1"), repeat=1)
    t_iso, _ = _best(lambda: smooth(Fh, "isotonic"))
    print(f"  L1 (HiGHS) {t_l1:.3f}s, isotonic {t_iso:.4f}s")

    big = np.random.default_rng(2).uniform(0, 1, 10**7)
    t_sort, _ = _best(lambda: np.sort(big), repeat=2)
    t_ecdf, _ = _best(lambda: privstats.ecdf(big, epsilon=1.0, bounds=(0, 1), rng=0), repeat=2)
    print(f"ECDF of 1e7 values: {t_ecdf:.3f}s vs np.sort {t_sort:.3f}s (ratio {t_ecdf / t_sort:.2f})")

    xb = np.random.default_rng(3).beta(2, 5, 10**5)
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    true = np.quantile(xb, qs)
    print("5 quantiles of 1e5 Beta(2,5), eps = 1: MAE (mean ± s.e. over runs), best and median time per call")
    runs_q = max(args.runs, 20)
    rows = {}

    def record(name, values, times):
        err = np.abs(np.asarray(values) - true).mean(axis=1)
        rows[name] = (err.mean(), err.std(ddof=1) / np.sqrt(err.size), min(times), float(np.median(times)))

    for method in ("auto", "independent", "joint", "tree"):
        vals, ts = [], []
        for r in range(runs_q):
            t = time.perf_counter()
            est = privstats.quantiles(xb, qs, epsilon=1.0, bounds=(0, 1), method=method, rng=r)
            ts.append(time.perf_counter() - t)
            vals.append(est.value)
        record(f"ours:{method}" + (f"={est.params['method']}" if method == "auto" else ""), vals, ts)
    vals, ts = [], []
    for _ in range(runs_q):  # production path: OS CSPRNG (rng=None)
        t = time.perf_counter()
        vals.append(privstats.quantiles(xb, qs, epsilon=1.0, bounds=(0, 1)).value)
        ts.append(time.perf_counter() - t)
    record("ours:auto CSPRNG", vals, ts)
    dpl = diffprivlib_quantiles(xb, qs, runs_q, args.venv)
    if dpl is not None:
        record(
            f"diffprivlib {dpl['versions'][0]} (sklearn {dpl['versions'][1]})", dpl["values"], dpl["times"]
        )
    try:
        meas = opendp_quantiles(xb, qs, 1.0)
        data = xb.tolist()
        vals, ts = [], []
        for _ in range(runs_q):
            t = time.perf_counter()
            vals.append([m(data) for m in meas])
            ts.append(time.perf_counter() - t)
        record("OpenDP make_private_quantile (4097 candidates)", vals, ts)
    except ImportError:
        print("  (OpenDP not installed)")
    base = next((v for k, v in rows.items() if k.startswith("diffprivlib")), None)
    for k, (e, se, tb, tm) in rows.items():
        extra = (
            f" | MAE ratio {e / base[0]:.2f}, speed-up {base[2] / tb:.1f}x (best) {base[3] / tm:.1f}x (median)"
            if base and not k.startswith("diffprivlib")
            else ""
        )
        print(f"  {k:<46} MAE {e:.3g} ± {se:.2g} in {tb:.4f}s / {tm:.4f}s{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
