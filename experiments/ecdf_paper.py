"""Reproduction of Barczewski, Mawass & Ramon (DP ECDFs): Figures 2-7 and the ROC figures.

Fig 2: smoothing error ratio ||F - F'||^2 / ||F - F^||^2 vs epsilon (X_pois(3), N = 2^15);
Fig 3: the same vs lambda (epsilon = 1); Fig 4: MSE of F, F^-1 (raw) and F^-1 (smoothed) vs
epsilon; Fig 5: ROC error (area between true and smoothed DP ROC) vs epsilon on a Bank-like
stand-in; Fig 6: Hosmer-Lemeshow relative MSE vs epsilon; Fig 7: smoothing runtime vs N
(ours vs cvxopt, same run); Fig 1/8: a DP ROC curve.  The paper's binary tree is used
throughout (method="binary"), as in the paper; the default b-ary tree is reported beside it.

Stand-ins (no downloads): "bank-like" = make_classification(n=45211, 16 features, 11.7 %
positives); "breast-cancer" = sklearn's load_breast_cancer (n = 569).

    python experiments/ecdf_paper.py --smoke
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np


def _xpois(lam, N, rng):
    cnt = rng.poisson(lam, N)
    return np.repeat(np.arange(1, N + 1), cnt).astype(float), np.cumsum(cnt)


def _ratio_rows(N, lam, eps_list, runs, rng, methods):
    import privstats
    from privstats.cdf.smoothing import smooth

    rows = []
    for eps in eps_list:
        acc = {m: [] for m in methods}
        raw_b = []
        for r in range(runs):
            x, C = _xpois(lam, N, rng)
            F = C / x.size
            res = privstats.ecdf(x, epsilon=eps, bounds=(0, N), grid=N, method="binary", smoothing="none",
                                 rng=rng)
            base = ((res.raw - F) ** 2).sum()
            for m in methods:
                acc[m].append(((smooth(res.raw, m) - F) ** 2).sum() / base)
            bary = privstats.ecdf(x, epsilon=eps, bounds=(0, N), grid=N, smoothing="none", rng=rng)
            raw_b.append(((bary.raw - F) ** 2).sum() / base)
        rows.append({"lambda": lam, "epsilon": eps, "N": N, **{f"ratio_{m}": float(np.mean(acc[m])) for m in methods},
                     "bary_over_binary_raw": float(np.mean(raw_b))})
    return rows


def _classifier_scores(kind, seed):
    from sklearn.datasets import load_breast_cancer, make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if kind == "breast-cancer":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = make_classification(n_samples=45211, n_features=16, n_informative=6, weights=[0.883],
                                   flip_y=0.05, random_state=seed)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=seed, stratify=y)
    sc = StandardScaler().fit(Xtr)
    clf = LogisticRegression(max_iter=2000).fit(sc.transform(Xtr), ytr)
    return yte, clf.predict_proba(sc.transform(Xte))[:, 1]


def _roc_area_between(f1, t1, f2, t2):
    grid = np.linspace(0, 1, 2001)
    a = np.interp(grid, f1, t1)
    b = np.interp(grid, f2, t2)
    return float(np.trapezoid(np.abs(a - b), grid))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    ap.add_argument("--out", default=os.path.join("experiments", "out", "ecdf_paper"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=None, help="runs per point (paper: 100)")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_auc_score, roc_curve as sk_roc

    import privstats
    from privstats.cdf.smoothing import smooth

    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    smoke = args.smoke
    runs = args.runs or (2 if smoke else 20)
    N = 2 ** (10 if smoke else 15)
    eps_list = [0.1, 1.0] if smoke else [0.05, 0.1, 0.2, 0.5, 1, 2, 5]
    table = []

    # Fig 2 (and L1 only where it is affordable)
    methods = ["l2", "isotonic"] + (["l1"] if (smoke or N <= 2 ** 15) else [])
    fig2 = _ratio_rows(N, 3, eps_list, max(1, runs // (1 if smoke else 4)), rng, methods)
    table += [{"figure": "2", **r} for r in fig2]
    plt.figure()
    for m in methods:
        plt.semilogx([r["epsilon"] for r in fig2], [r[f"ratio_{m}"] for r in fig2], "o-", label=m)
    plt.axhline(1, color="grey", lw=0.5)
    plt.xlabel("epsilon"); plt.ylabel("||F-F'||^2 / ||F-F^||^2"); plt.title(f"Fig 2: X_pois(3), N={N}"); plt.legend()
    plt.savefig(os.path.join(args.out, "fig2_smoothing_vs_eps.png"), dpi=100); plt.close()

    # Fig 3
    lams = [0.3, 3, 100] if smoke else [0.3, 1, 3, 10, 100, 1000]
    N3 = 2 ** (9 if smoke else 12)
    fig3 = []
    for lam in lams:
        fig3 += _ratio_rows(N3, lam, [1.0], runs, rng, ["l1", "l2", "isotonic"])
    table += [{"figure": "3", **r} for r in fig3]
    plt.figure()
    for m in ["l1", "l2", "isotonic"]:
        plt.semilogx(lams, [r[f"ratio_{m}"] for r in fig3], "o-", label=m)
    plt.axhline(1, color="grey", lw=0.5)
    plt.xlabel("lambda"); plt.ylabel("error ratio"); plt.title(f"Fig 3: eps=1, N={N3}"); plt.legend()
    plt.savefig(os.path.join(args.out, "fig3_smoothing_vs_lambda.png"), dpi=100); plt.close()

    # Fig 4: inverse ECDF on the normalised domain
    N4 = 2 ** (10 if smoke else 12)
    ps = np.linspace(0.01, 0.99, 99)
    fig4 = []
    for eps in eps_list:
        e_f, e_inv, e_inv_s = [], [], []
        for r in range(runs):
            x, C = _xpois(3, N4, rng)
            u = x / N4
            res = privstats.ecdf(u, epsilon=eps, bounds=(0, 1), grid=N4, method="binary", smoothing="none", rng=rng)
            F = C / x.size
            true_inv = np.quantile(u, ps, method="inverted_cdf")
            e_f.append(np.mean((res.raw - F) ** 2))
            e_inv.append(np.mean((res.quantile(ps) - true_inv) ** 2))
            sm = privstats.cdf.result.PrivateECDF(res.quantiles, smooth(res.raw, "l2"), None)
            e_inv_s.append(np.mean((sm.quantile(ps) - true_inv) ** 2))
        fig4.append({"figure": "4", "epsilon": eps, "N": N4, "mse_F": float(np.mean(e_f)),
                     "mse_inv_raw": float(np.mean(e_inv)), "mse_inv_smoothed": float(np.mean(e_inv_s))})
    table += fig4
    plt.figure()
    for k in ("mse_F", "mse_inv_raw", "mse_inv_smoothed"):
        plt.loglog([r["epsilon"] for r in fig4], [r[k] for r in fig4], "o-", label=k)
    plt.xlabel("epsilon"); plt.ylabel("MSE"); plt.title("Fig 4: inverse ECDF"); plt.legend()
    plt.savefig(os.path.join(args.out, "fig4_inverse.png"), dpi=100); plt.close()

    # Fig 5 / 6 and ROC figure on the stand-ins
    for kind in (["breast-cancer"] if smoke else ["bank-like", "breast-cancer"]):
        y, s = _classifier_scores(kind, args.seed)
        f_true, t_true, _ = sk_roc(y, s)
        auc_true = roc_auc_score(y, s)
        H_true = privstats.hosmer_lemeshow(y, s, epsilon=1e7, budget="paper", bootstrap=100, rng=rng).value
        for eps in eps_list:
            err = {"l1": [], "l2": [], "isotonic": []}
            aucs, hl = [], []
            for r in range(runs):
                for m in err:
                    fpr, tpr, _, est = privstats.roc_curve(y, s, epsilon=eps, grid=256, smoothing=m, method="binary",
                                                          rng=rng)
                    err[m].append(_roc_area_between(f_true, t_true, fpr, tpr))
                    if m == "l2":
                        aucs.append(est.value)
                hl.append(privstats.hosmer_lemeshow(y, s, epsilon=eps, budget="paper", bootstrap=100, rng=rng).value)
            table.append({"figure": "5/6", "data": kind, "epsilon": eps, "n": int(y.size),
                          **{f"roc_area_err_{m}": float(np.mean(v)) for m, v in err.items()},
                          "auc_true": float(auc_true), "auc_dp_mean": float(np.mean(aucs)),
                          "auc_abs_err": float(np.mean(np.abs(np.array(aucs) - auc_true))),
                          "hl_true": float(H_true), "hl_rel_mse": float(np.mean((np.array(hl) - H_true) ** 2) / H_true ** 2)})
        rows = [r for r in table if r.get("data") == kind]
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
        for m in ("l1", "l2", "isotonic"):
            ax[0].semilogx([r["epsilon"] for r in rows], [r[f"roc_area_err_{m}"] for r in rows], "o-", label=m)
        ax[0].set_xlabel("epsilon"); ax[0].set_ylabel("area between ROC curves"); ax[0].legend(); ax[0].set_title(f"Fig 5: {kind}")
        ax[1].loglog([r["epsilon"] for r in rows], [r["hl_rel_mse"] for r in rows], "o-")
        ax[1].set_xlabel("epsilon"); ax[1].set_ylabel("HL relative MSE"); ax[1].set_title(f"Fig 6: {kind}")
        fig.tight_layout(); fig.savefig(os.path.join(args.out, f"fig5_6_{kind}.png"), dpi=100); plt.close(fig)
        # ROC figure (Fig 1/8 analogue)
        plt.figure(figsize=(4, 4))
        plt.plot(f_true, t_true, "k", label="true")
        for m in ("none", "l2"):
            fpr, tpr, _, _ = privstats.roc_curve(y, s, epsilon=0.5, grid=256, smoothing=m, method="binary", rng=rng)
            plt.plot(fpr, tpr, label=f"DP eps=0.5 ({m})")
        plt.legend(); plt.xlabel("FPR"); plt.ylabel("TPR"); plt.title(f"ROC, {kind}")
        plt.savefig(os.path.join(args.out, f"roc_{kind}.png"), dpi=100); plt.close()

    # Fig 7: runtime vs N, ours and cvxopt in the same run
    sizes = [2 ** 8, 2 ** 10] if smoke else [2 ** 8, 2 ** 10, 2 ** 12, 2 ** 14, 2 ** 15]
    for n_pts in sizes:
        x, C = _xpois(3, n_pts, rng)
        raw = privstats.ecdf(x, epsilon=1.0, bounds=(0, n_pts), grid=n_pts, method="binary", smoothing="none",
                             rng=rng).raw
        row = {"figure": "7", "N": n_pts}
        for label, m, solver in (("ours_l2", "l2", "auto"), ("ours_l1", "l1", "auto"),
                                 ("cvxopt_qp", "l2", "cvxopt"), ("cvxopt_lp", "l1", "cvxopt")):
            try:
                t = time.perf_counter(); smooth(raw, m, solver=solver); row[label] = time.perf_counter() - t
            except ImportError:
                row[label] = float("nan")
        table.append(row)
    rows7 = [r for r in table if r.get("figure") == "7"]
    plt.figure()
    for k in ("ours_l2", "ours_l1", "cvxopt_qp", "cvxopt_lp"):
        plt.loglog(sizes, [r[k] for r in rows7], "o-", label=k)
    plt.xlabel("N"); plt.ylabel("seconds"); plt.title("Fig 7: smoothing runtime"); plt.legend()
    plt.savefig(os.path.join(args.out, "fig7_runtime.png"), dpi=100); plt.close()

    keys = sorted({k for r in table for k in r}, key=lambda k: (k != "figure", k))
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(table)
    with open(os.path.join(args.out, "results.md"), "w") as fh:
        fh.write("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
        for r in table:
            fh.write("| " + " | ".join("" if k not in r else (f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]))
                                      for k in keys) + " |\n")
    for r in table:
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
