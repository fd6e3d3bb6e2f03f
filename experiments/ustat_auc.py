"""Reproduction of Bell et al. (2020) Figures 3, 5, 6 and 7: LDP AUC by the tree (Protocol B) and by
quantise-then-randomize (Protocol A), error against the domain size d for several ε.

* Figures 5 (tree) and 6 (Protocol A, k-RR with k = d; OUE shown as well): the synthetic sets
  ``auc_one`` (positives at (d−1)/d, negatives at 0), ``ur`` (scores i/d, i uniform in [0, d),
  independent of the class) and ``ithdigit`` (positives at 1e−4, negatives at 0), 10^6 points
  per class, quantised by floor(s·d).
* Figures 3 (tree) and 7 (Protocol A): the paper's Diabetes readmission scores cannot be
  downloaded; the stand-in is a logistic-regression score (5-fold cross-validated, so every row is
  scored out of sample) for "digit ≥ 5" on scikit-learn's bundled digits (1,797 rows, 896
  positives — the paper's smallest class had 693), or ``--csv PATH`` with columns label,score
  (scores in [0, 1]).

Every point: mean ± std over ``--runs`` runs of |estimate − AUC|, the AUC being scikit-learn's
``roc_auc_score`` on the unquantised scores (ties ½), so quantisation error is part of the error
(that is what makes ``ithdigit`` fail for d ≤ 2^13).  Choices the paper leaves open: tree with
users split across levels (pure ε, one report per user), main algorithm (discarded nodes count ½),
a from Corollary 4 with the corrected constant C = ((e^ε+1)/(e^ε−1))², ties ½ (the leaf term,
see README); Protocol A's k-RR with corrected probabilities and the average kernel (diagonal ½).

    python experiments/ustat_auc.py [--smoke] [--out DIR] [--seed 0] [--runs 20] [--csv PATH]
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

import privstats

SYNTHETIC = ("auc_one", "ur", "ithdigit")


def synthetic(name: str, d: int, n: int, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores in [0, 1] of a synthetic set (n per class) for domain size d."""
    y = np.r_[np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)]
    if name == "auc_one":
        s = np.r_[np.full(n, (d - 1) / d), np.zeros(n)]
    elif name == "ur":
        s = g.integers(0, d, 2 * n) / d
    else:
        s = np.r_[np.full(n, 1e-4), np.zeros(n)]
    return y, s


def standin_scores(csv_path: str | None, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(labels, scores, description) of the Figure 3/7 dataset."""
    if csv_path:
        rows = np.genfromtxt(csv_path, delimiter=",", names=True)
        return rows["label"].astype(int), np.clip(rows["score"], 0, 1), f"CSV {csv_path}"
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, digit = load_digits(return_X_y=True)
    y = (digit >= 5).astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1e-3, max_iter=2000))
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    s = cross_val_predict(model, X, y, cv=folds, method="predict_proba")[:, 1]
    return y, s, "digits: LR(C=1e-3) score for 'digit >= 5', 5-fold out-of-sample"


def run_point(y, s, truth, *, method, d, eps, runs, seed, oracle="grr"):
    errs = []
    for r in range(runs):
        kw = {"oracle": oracle} if method == "quantized" else {}
        est = privstats.auc(y, s, epsilon=eps, method=method, domain_size=d, rng=seed * 100003 + r, **kw)
        errs.append(abs(est.value - truth))
    return float(np.mean(errs)), float(np.std(errs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    ap.add_argument("--out", default="experiments/out/ustat_auc")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--csv", default=None, help="labels and scores for Figures 3/7 (columns label,score)")
    args = ap.parse_args(argv)
    from sklearn.metrics import roc_auc_score

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    g = np.random.default_rng(args.seed)
    if args.smoke:
        n_syn, runs = 2000, 2
        d_tree, d_quant, eps_syn = [2**4, 2**8], [2**2, 2**4], [1.0]
        d_real, d_real_q, eps_real = [2**4, 2**8], [2**2, 2**4], [1.0]
    else:
        n_syn, runs = 10**6, args.runs
        d_tree, d_quant, eps_syn = [2**4, 2**8, 2**12, 2**13, 2**14, 2**16], [2**2, 2**4, 2**6, 2**8, 2**10], [1.0, 4.0]
        d_real, d_real_q, eps_real = [2**4, 2**6, 2**8, 2**12, 2**16], [2**2, 2**3, 2**4, 2**6, 2**8], [0.5, 1, 2, 4, 8]

    rows: list[dict] = []
    t0 = time.time()
    for name in SYNTHETIC:
        for d in sorted(set(d_tree) | set(d_quant)):
            y, s = synthetic(name, d, n_syn, g)
            truth = roc_auc_score(y, s)
            for eps in eps_syn:
                series = ([("5", "tree", "tree", "grr")] if d in d_tree else []) + (
                    [("6", "quantized", "A k-RR", "grr"), ("6", "quantized", "A OUE", "oue")] if d in d_quant else [])
                for fig, method, label, orc in series:
                    m, sd = run_point(y, s, truth, method=method, d=d, eps=eps, runs=runs, seed=args.seed, oracle=orc)
                    rows.append({"figure": fig, "dataset": name, "protocol": label, "d": d, "epsilon": eps,
                                 "true_auc": truth, "mean_abs_err": m, "std_abs_err": sd, "runs": runs})
    y, s, desc = standin_scores(args.csv, args.seed)
    truth = roc_auc_score(y, s)
    for eps in eps_real:
        for fig, method, ds, orc in (("3", "tree", d_real, "grr"), ("7", "quantized", d_real_q, "grr")):
            for d in ds:
                m, sd = run_point(y, s, truth, method=method, d=d, eps=eps, runs=runs, seed=args.seed, oracle=orc)
                rows.append({"figure": fig, "dataset": "standin", "protocol": "tree" if method == "tree" else "A k-RR",
                             "d": d, "epsilon": eps, "true_auc": truth, "mean_abs_err": m, "std_abs_err": sd,
                             "runs": runs})
    elapsed = time.time() - t0
    write_tables(rows, out)
    plot(rows, out)
    print(f"ustat_auc: {len(rows)} points in {elapsed:.0f} s; stand-in: {desc} (n={y.size}, "
          f"positives={int(y.sum())}, AUC={truth:.4f}); outputs in {out}")
    for r in rows:
        if r["figure"] in ("5", "3") and r["epsilon"] in (1.0, eps_real[-1]):
            print(f"  fig {r['figure']} {r['dataset']:8s} {r['protocol']:7s} d=2^{int(np.log2(r['d'])):<2d} "
                  f"eps={r['epsilon']:<4g} |err| {r['mean_abs_err']:.4f} ± {r['std_abs_err']:.4f}")
    return 0


def write_tables(rows: list[dict], out: Path) -> None:
    keys = list(rows[0])
    with open(out / "ustat_auc.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    with open(out / "ustat_auc.md", "w") as fh:
        fh.write("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
        for r in rows:
            fh.write("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r.values()) + " |\n")


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for fig in ("3", "5", "6", "7"):
        sub = [r for r in rows if r["figure"] == fig]
        if not sub:
            continue
        datasets = sorted({r["dataset"] for r in sub}, key=lambda n: (SYNTHETIC + ("standin",)).index(n))
        f, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.6), squeeze=False)
        for ax, ds in zip(axes[0], datasets):
            for (proto, eps) in sorted({(r["protocol"], r["epsilon"]) for r in sub if r["dataset"] == ds}):
                pts = sorted((r for r in sub if r["dataset"] == ds and r["protocol"] == proto and r["epsilon"] == eps),
                             key=lambda r: r["d"])
                ax.errorbar([np.log2(r["d"]) for r in pts], [r["mean_abs_err"] for r in pts],
                            yerr=[r["std_abs_err"] for r in pts], marker="o", capsize=3, label=f"{proto}, ε={eps:g}")
            ax.set_yscale("symlog", linthresh=1e-3)
            ax.set_xlabel("log2 domain size d")
            ax.set_ylabel("absolute error")
            ax.set_title(f"Figure {fig}: {ds}")
            ax.legend(fontsize=7)
        f.tight_layout()
        f.savefig(out / f"figure{fig}.png", dpi=110)
        plt.close(f)


if __name__ == "__main__":
    raise SystemExit(main())
