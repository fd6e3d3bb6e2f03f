"""Shuffle-model frequency estimation (Ghazi et al., *On the Power of Multiple Anonymous Messages*).

The paper has no experiments; this script runs the separations it proves:
error vs n (single-message grows like n^{1/4}, multi-message stays flat), error vs the
domain size B, error vs ε, and the communication–accuracy frontier, with fitted log-log
slopes.  Error = max over the B items of |estimate − count|, averaged over ``--reps``
runs, on data with two heavy items (n/2 users each; the worst case for k-RR).  Local
(best LDP oracle) and central (discrete Laplace) are shown for reference.

Run: ``python experiments/shuffle_error.py [--smoke] [--out DIR] [--seed S]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np

import privstats

DELTA = 1e-6


def two_heavy(n: int, B: int) -> np.ndarray:
    x = np.zeros(n, dtype=np.int64)
    x[n // 2:] = B - 1
    return x


def run_one(model, protocol, x, B, eps, seed, **kw):
    try:
        est = privstats.frequencies(x, domain=B, epsilon=eps, delta=DELTA, model=model, protocol=protocol,
                                    rng=seed, **kw)
    except ValueError:
        return None
    err = float(np.abs(est.value - np.bincount(x, minlength=B)).max())
    return err, float(est.bits_per_user or 0), float(est.messages_per_user or 0), est.protocol


PROTOCOLS = [("shuffle", "single-rr", {}), ("shuffle", "single-rappor", {}), ("shuffle", "multi-hadamard", {}),
             ("shuffle", "multi-hadamard", {"calibration": "chernoff"}), ("local", None, {}), ("central", None, {})]


def label(model, protocol, kw):
    base = protocol or model
    return base + ("-chernoff" if kw.get("calibration") == "chernoff" else "")


def sweep(name, settings, reps, seed, rows):
    for i, (n, B, eps) in enumerate(settings):
        x = two_heavy(n, B)
        for model, protocol, kw in PROTOCOLS:
            errs, info = [], None
            for r in range(reps):
                out = run_one(model, protocol, x, B, eps, seed + 1000 * i + r, **kw)
                if out is None:
                    break
                errs.append(out[0])
                info = out
            if info is None:
                continue
            rows.append({"sweep": name, "protocol": label(model, protocol, kw), "n": n, "B": B, "epsilon": eps,
                         "max_error": float(np.mean(errs)), "bits_per_user": info[1],
                         "messages_per_user": info[2]})


def slope(rows, sweep_name, protocol, xkey):
    pts = [(r[xkey], r["max_error"]) for r in rows if r["sweep"] == sweep_name and r["protocol"] == protocol]
    if len(pts) < 3:
        return float("nan")
    xs, ys = np.log([p[0] for p in pts]), np.log([max(p[1], 1e-9) for p in pts])
    return float(np.polyfit(xs, ys, 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--out", default=os.path.join("experiments", "out", "shuffle_error"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.smoke:
        ns, Bs, epss, base_n, base_B, reps = [2 ** 10, 2 ** 11, 2 ** 12], [8, 16, 32], [0.5, 1.0], 2 ** 11, 16, 1
    else:
        ns, Bs, epss, base_n, base_B, reps = ([2 ** k for k in range(12, 18)], [2 ** k for k in range(4, 15, 2)],
                                              [0.25, 0.5, 1.0, 2.0], 2 ** 16, 2 ** 10, args.reps)
    t0 = time.time()
    rows: list[dict] = []
    sweep("n", [(n, base_B, 1.0) for n in ns], reps, args.seed, rows)
    sweep("B", [(base_n, B, 1.0) for B in Bs], reps, args.seed + 1, rows)
    sweep("epsilon", [(base_n, base_B, e) for e in epss], reps, args.seed + 2, rows)

    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    protos = sorted({r["protocol"] for r in rows})
    slopes = {p: {k: slope(rows, k, p, key) for k, key in (("n", "n"), ("B", "B"), ("epsilon", "epsilon"))}
              for p in protos}
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("| sweep | protocol | n | B | ε | max error | bits/user | messages/user |\n|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['sweep']} | {r['protocol']} | {r['n']} | {r['B']} | {r['epsilon']} | {r['max_error']:.1f} | "
                    f"{r['bits_per_user']:.0f} | {r['messages_per_user']:.0f} |\n")
        f.write("\n| protocol | slope vs n | slope vs B | slope vs ε |\n|---|---|---|---|\n")
        for p, s in slopes.items():
            f.write(f"| {p} | {s['n']:.3f} | {s['B']:.3f} | {s['epsilon']:.3f} |\n")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for ax, (sw, key) in zip(axes[:3], (("n", "n"), ("B", "B"), ("epsilon", "epsilon"))):
        for p in protos:
            pts = [(r[key], r["max_error"]) for r in rows if r["sweep"] == sw and r["protocol"] == p]
            if pts:
                ax.loglog(*zip(*pts), "o-", label=f"{p} (slope {slopes[p][sw]:.2f})")
        ax.set_xlabel(key)
        ax.set_ylabel("max |error| (counts)")
        ax.set_title(f"error vs {key}")
        ax.legend(fontsize=7)
    ax = axes[3]
    for p in protos:
        pts = [(r["bits_per_user"], r["max_error"]) for r in rows if r["sweep"] == "n" and r["n"] == ns[-1]
               and r["protocol"] == p and r["bits_per_user"] > 0]
        if pts:
            ax.loglog(*zip(*pts), "o", label=p, markersize=9)
    ax.set_xlabel("bits per user")
    ax.set_ylabel("max |error|")
    ax.set_title(f"communication–accuracy (n={ns[-1]}, B={base_B})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "shuffle_error.png"), dpi=110)
    plt.close(fig)
    print(f"{len(rows)} rows in {time.time() - t0:.1f} s -> {args.out}")
    for p, s in slopes.items():
        print(f"  {p:28s} slope vs n {s['n']:+.3f}  vs B {s['B']:+.3f}  vs eps {s['epsilon']:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
