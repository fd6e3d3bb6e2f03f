"""Ghazi et al. (multiple anonymous messages): experiments E1-E10 of the research note, with fitted slopes.

The paper has no experiments; E1-E10 test the asymptotics it proves.  All protocols are calibrated
to the same (ε, δ) (replace-one, n public).  Error = max over the B items of |estimate − count|
(counts, the paper's ℓ∞ metric), on two heavy items holding n/2 users each (D2; the worst case for
k-RR).  Every run is a point of the fitted log-log slope; slopes carry 95 % confidence intervals.

Simulation (exact sufficient statistics, vectorized): single-message k-RR (binomial keep +
multinomial) and RAPPOR (per-column binomials), local oracles and Count-Min (the whole table) use
the library's ``simulate``.  The Hadamard protocol's message-level simulation costs n(k+ρ) messages,
so for large n each count is drawn from its exact marginal c_j = x_j + Bin(n(k+ρ) − x_j, 2^−τ)
(independently across j; the true counts are pairwise uncorrelated); E6 checks this against the
message-level simulation with a two-sample KS test.

E1 error vs n; E2 vs B; E3 vs ε; E4 vs δ; E5 communication–accuracy; E6 accounting (exact vs
Chernoff ρ) and the simulation check; E7 range counting (tree vs flat sums) vs range length;
E8 quantiles (rank error vs n); E9 heavy hitters (prefix tree, precision / recall); E10 analyzer
runtime vs B.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

NAME = "shuffle_error"
PREDICTED = {  # E1 slope vs n, E2 slope vs B (log-log), E3 slope vs ε
    "E1": {
        "S1-RAPPOR": 0.25,
        "MM-Had exact": 0.0,
        "MM-Had Chernoff": 0.0,
        "local": 0.5,
        "central": 0.0,
        "MM-CountMin": 0.0,
    },
    "E3": {
        "S1-RAPPOR": -0.5,
        "MM-Had exact": -1.0,
        "MM-Had Chernoff": -1.0,
        "local": -1.0,
        "central": -1.0,
        "S1-RR": -1.0,
    },
}


def two_heavy(n: int, B: int) -> np.ndarray:
    x = np.zeros(n, dtype=np.int64)
    x[n // 2 :] = B - 1
    return x


_CALIBRATION: dict = {}


def hadamard(B: int, n: int, eps: float, delta: float, k: int = 1, calibration: str = "exact"):
    """The Hadamard protocol; its blanket size ρ depends on (n, ε, δ, k) only, so it is computed once."""
    from privstats.shuffle import HadamardMultiMessage

    key = ("had", n, eps, delta, k, calibration)
    if key not in _CALIBRATION:
        p = HadamardMultiMessage(B, n=n, epsilon=eps, delta=delta, k=k, calibration=calibration)
        _CALIBRATION[key] = (p.rho, p.tau)
        return p
    rho, tau = _CALIBRATION[key]
    return HadamardMultiMessage(B, n=n, epsilon=eps, delta=delta, k=k, rho=rho, tau=tau)


def rappor(B: int, n: int, eps: float, delta: float):
    """Shuffled RAPPOR; its local ε₀ depends on (n, ε, δ) only, so it is computed once."""
    from privstats.shuffle import ShuffledRAPPOR

    key = ("rappor", n, eps, delta)
    if key not in _CALIBRATION:
        p = ShuffledRAPPOR(B, n=n, epsilon=eps, delta=delta)
        _CALIBRATION[key] = p.epsilon0
        return p
    return ShuffledRAPPOR(B, n=n, epsilon=eps, delta=delta, epsilon0=_CALIBRATION[key])


def hadamard_marginal(
    proto, counts: np.ndarray, g: np.random.Generator, users: int | None = None
) -> np.ndarray:
    """Estimates of the Hadamard protocol with each count drawn from its exact marginal law."""
    N = (proto.n if users is None else users) * (proto.k + proto.rho)
    p = 2.0**-proto.tau
    c = counts + g.binomial(N - counts, p)
    return (c - N * p) / (1 - p)


class Runner:
    """Builds each protocol at (n, B, ε, δ) and returns one run's estimate vector (or None if invalid)."""

    def __init__(self, delta: float):
        self.delta = delta
        self._cache: dict = {}

    def build(self, name, n, B, eps, delta):
        key = (name, n, B, eps, delta)
        if key not in self._cache:
            from privstats.local import best_oracle
            from privstats.shuffle import (
                CountMinMultiMessage,
                ShuffledKRR,
            )

            try:
                self._cache[key] = {
                    "S1-RR": lambda: ShuffledKRR(B, n=n, epsilon=eps, delta=delta),
                    "S1-RAPPOR": lambda: rappor(B, n, eps, delta),
                    "MM-Had exact": lambda: hadamard(B, n, eps, delta),
                    "MM-Had Chernoff": lambda: hadamard(B, n, eps, delta, calibration="chernoff"),
                    "MM-CountMin": lambda: CountMinMultiMessage(B, n=n, epsilon=eps, delta=delta),
                    "local": lambda: best_oracle(B, eps),
                    "central": lambda: None,
                }[name]()
            except ValueError:
                self._cache[key] = "invalid"
        return self._cache[key]

    def run(self, name, x, counts, B, eps, delta, g):
        proto = self.build(name, x.size, B, eps, delta)
        if isinstance(proto, str):
            return None, None
        if name == "central":
            import privstats

            est = privstats.frequencies(x, domain=B, epsilon=eps, model="central", rng=g).value
            return est, (0.0, 0.0)
        if name.startswith("MM-Had"):
            return hadamard_marginal(proto, counts, g), (proto.messages_per_user, proto.bits_per_user)
        e = proto.estimate(proto.simulate(x, g))
        return e.value, (float(e.messages_per_user or 0), float(e.bits_per_user or 0))


def main(argv=None) -> int:
    ap = C.parser(NAME, __doc__, runs=20)
    ap.add_argument("--delta", type=float, default=1e-8, help="δ of every protocol (default 1e-8)")
    args = ap.parse_args(argv)
    out = C.prepare(args)
    t0 = time.perf_counter()
    smoke = args.smoke
    runs = 2 if smoke else args.runs
    delta = args.delta
    g = np.random.default_rng(args.seed)
    R = Runner(delta)
    if smoke:
        ns, B1 = [2**10, 2**12, 2**14], 2**6
        Bs, n2 = [2**4, 2**6, 2**8], 2**12
        epss, deltas, n3, B3 = [0.5, 1.0, 2.0], [1e-4, 1e-8, 1e-12], 2**12, 2**6
        cm_max_n, B7, n7, n8s, B9, n9 = 2**12, 2**8, 2**12, [2**10, 2**12, 2**14], 2**6, 2**12
        B10s = [2**6, 2**7, 2**8]
    else:
        ns, B1 = [2**k for k in range(12, 25, 2)], 2**16
        Bs, n2 = [2**k for k in range(4, 17, 2)], 2**22
        epss, deltas, n3, B3 = [0.25, 0.5, 1.0, 2.0, 4.0], [1e-4, 1e-6, 1e-8, 1e-10, 1e-12], 2**20, 2**10
        cm_max_n, B7, n7, n8s, B9, n9 = 2**18, 2**16, 2**20, [2**k for k in range(14, 25, 2)], 2**20, 2**20
        B10s = [2**k for k in range(8, 15, 2)]  # E10: n = B on the diagonal
    protos = ["S1-RR", "S1-RAPPOR", "MM-Had exact", "MM-Had Chernoff", "MM-CountMin", "local", "central"]
    rows: list[dict] = []
    fidelity: list[dict] = []
    n_steps = (
        (len(ns) + len(Bs) + len(epss) + len(deltas)) * len(protos) * runs
        + 3 * runs
        + len(B10s)
        + (len(n8s) + 4) * runs
        + 6
    )
    with C.Progress(n_steps, NAME) as bar:

        def sweep(exp, settings):
            for n, B, eps, dl in settings:
                x = two_heavy(n, B)
                counts = np.bincount(x, minlength=B)
                for p in protos:
                    if p == "MM-CountMin" and n > cm_max_n:
                        bar.advance(runs)
                        continue
                    for r in range(runs):
                        est, cost = R.run(p, x, counts, B, eps, dl, g)
                        bar.advance()
                        if est is None:
                            bar.advance(runs - 1 - r)
                            break
                        rows.append(
                            {
                                "exp": exp,
                                "protocol": p,
                                "n": n,
                                "B": B,
                                "epsilon": eps,
                                "delta": dl,
                                "run": r,
                                "max_error": float(np.abs(est - counts).max()),
                                "messages_per_user": cost[0],
                                "bits_per_user": cost[1],
                            }
                        )

        sweep("E1", [(n, B1, 1.0, delta) for n in ns])
        sweep("E2", [(n2, B, 1.0, delta) for B in Bs])
        sweep("E3", [(n3, B3, e, delta) for e in epss])
        sweep("E4", [(n3, B3, 1.0, d) for d in deltas])

        # E6: accounting and the simulation check

        acc_rows = []
        for n in ns:
            ex = hadamard(B1, n, 1.0, delta)
            ch = hadamard(B1, n, 1.0, delta, calibration="chernoff")
            acc_rows.append(
                {"n": n, "tau": ex.tau, "rho_exact": ex.rho, "rho_chernoff": ch.rho, "ratio": ch.rho / ex.rho}
            )
        n6, B6 = (2**10, 2**6) if smoke else (2**12, 2**10)
        proto6 = hadamard(B6, n6, 1.0, delta)
        x6 = two_heavy(n6, B6)
        c6 = np.bincount(x6, minlength=B6)
        msg, marg = [], []
        for _ in range(3 * runs):
            msg.append(float(np.abs(proto6.estimate(proto6.simulate(x6, g)).value - c6).max()))
            marg.append(float(np.abs(hadamard_marginal(proto6, c6, g) - c6).max()))
        bar.advance(3 * runs)
        from scipy import stats

        ks = stats.ks_2samp(msg, marg)

        # E7: range counting, tree (Section 5) vs flat sums of point estimates, marginal simulation
        from privstats.shuffle.ranges import range_terms

        L7 = int(math.log2(B7))
        x7 = np.minimum((g.beta(2, 5, n7) * B7).astype(np.int64), B7 - 1)
        leaf = np.bincount(x7, minlength=B7)
        tree_proto = hadamard(B7, n7, 1.0, delta, k=L7 + 1)
        flat_proto = hadamard(B7, n7, 1.0, delta)
        node_counts = _tree_counts(leaf)
        lengths = [2**k for k in range(0, L7 + 1, max(1, L7 // 8))]
        e7 = []
        for r in range(runs):
            tree_est = hadamard_marginal(tree_proto, node_counts, g)
            flat_est = hadamard_marginal(flat_proto, leaf, g)
            for ln in lengths:
                for _ in range(4):
                    lo = int(g.integers(0, B7 - ln + 1))
                    truth = leaf[lo : lo + ln].sum()
                    t_est = sum(c * tree_est[node] for node, c in range_terms(lo, lo + ln, B7).items())
                    e7.append(
                        {
                            "run": r,
                            "length": ln,
                            "tree_err": abs(t_est - truth),
                            "flat_err": abs(flat_est[lo : lo + ln].sum() - truth),
                        }
                    )
            bar.advance()
        # E8: quantiles from the tree's prefix counts (bins = B7), rank error vs n
        e8 = []
        for n8 in n8s:
            B8 = min(B7, n8)
            x8 = np.minimum((g.beta(2, 5, n8) * B8).astype(np.int64), B8 - 1)
            leaf8 = np.bincount(x8, minlength=B8)
            tp = hadamard(B8, n8, 1.0, delta, k=int(math.log2(B8)) + 1)
            nc = _tree_counts(leaf8)
            cum = np.cumsum(leaf8)
            for r in range(runs):
                est = hadamard_marginal(tp, nc, g)
                prefix = _prefix_from_tree(est, B8)
                for q in (0.25, 0.5, 0.75):
                    hit = prefix >= q * n8
                    j = int(np.argmax(hit)) if hit.any() else B8 - 1
                    e8.append({"n": n8, "q": q, "run": r, "rank_error": abs(cum[j] - q * n8)})
                bar.advance()
        # E9: heavy hitters by the prefix tree, users split over the levels (marginal simulation per level)
        e9 = _heavy_hitters(n9, B9, delta, runs, g, bar)
        # E10: analyzer runtime of the message-level Hadamard protocol vs B (kernel enumeration)
        e10 = []
        for B10 in B10s:
            p10 = hadamard(B10, B10, 1.0, delta)
            x10 = g.integers(0, B10, B10)
            msgs = p10.sample_messages(p10._indices(x10), x10.size * p10.rho, g)
            t = time.perf_counter()
            p10.estimate(p10.aggregate(msgs))
            e10.append(
                {"B": B10, "n": B10, "messages": int(msgs.shape[0]), "seconds": time.perf_counter() - t}
            )
            bar.advance()

    # ------------------------------------------------------------------ tables, slopes, figures
    C.write_rows(out, "shuffle_runs", rows)
    plt = C.pyplot()
    slope_rows = []
    for exp, key in (("E1", "n"), ("E2", "B"), ("E3", "epsilon"), ("E4", "delta")):
        for p in protos:
            pts = [r for r in rows if r["exp"] == exp and r["protocol"] == p]
            if len({r[key] for r in pts}) < 3:
                continue
            xs = [math.log(1 / r["delta"]) if exp == "E4" else r[key] for r in pts]
            s, lo, hi = C.fit_slope(xs, [r["max_error"] for r in pts])
            slope_rows.append(
                {
                    "exp": exp,
                    "x": "log(1/δ)" if exp == "E4" else key,
                    "protocol": p,
                    "slope": s,
                    "ci_lo": lo,
                    "ci_hi": hi,
                    "points": len({r[key] for r in pts}),
                    "range": f"{min(r[key] for r in pts):g}..{max(r[key] for r in pts):g}",
                }
            )
    C.write_rows(out, "shuffle_slopes", slope_rows)
    C.show(
        "fitted log-log slopes (95 % CI; every run a point)",
        slope_rows,
        [
            ("exp", "exp"),
            ("x", "vs"),
            ("protocol", "protocol"),
            ("slope", "slope"),
            ("ci_lo", "lo"),
            ("ci_hi", "hi"),
            ("range", "range"),
        ],
    )

    def agg(exp, key):
        res = {}
        for p in protos:
            pts = [r for r in rows if r["exp"] == exp and r["protocol"] == p]
            xs = sorted({r[key] for r in pts})
            res[p] = [(x, *C.mean_ci([r["max_error"] for r in pts if r[key] == x])) for x in xs]
        return res

    markers = dict(zip(protos, "os^vDxP", strict=False))
    f, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    for ax, (exp, key, title) in zip(
        axes,
        (
            ("E1", "n", f"E1: error vs n (B = {B1})"),
            ("E2", "B", f"E2: error vs B (n = {n2})"),
            ("E3", "epsilon", f"E3: error vs ε (n = {n3}, B = {B3})"),
            ("E4", "delta", f"E4: error vs δ (n = {n3}, B = {B3})"),
        ),
        strict=False,
    ):
        for p, pts in agg(exp, key).items():
            if not pts:
                continue
            x, m, lo, hi = map(np.array, zip(*pts, strict=False))
            sl = next((s for s in slope_rows if s["exp"] == exp and s["protocol"] == p), None)
            lab = p + (f" ({sl['slope']:+.2f})" if sl else "")
            (line,) = ax.plot(x, m, marker=markers[p], label=lab)
            ax.fill_between(x, lo, hi, alpha=0.2, color=line.get_color(), linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel({"n": "n", "B": "B", "epsilon": "ε", "delta": "δ"}[key])
        ax.set_ylabel("max |error| (counts)")
        ax.set_title(title)
        ax.legend(fontsize=6)
    C.savefig(f, out / "shuffle_E1_E4.png")

    # E5 frontier: at the E3 point ε = 1
    e5 = []
    for p in protos:
        pts = [r for r in rows if r["exp"] == "E3" and r["protocol"] == p and r["epsilon"] == 1.0]
        if pts:
            m, lo, hi = C.mean_ci([r["max_error"] for r in pts])
            e5.append(
                {
                    "protocol": p,
                    "bits_per_user": pts[0]["bits_per_user"],
                    "messages_per_user": pts[0]["messages_per_user"],
                    "shuffler_messages": pts[0]["messages_per_user"] * n3,
                    "max_error": m,
                }
            )
    C.show(
        f"E5: communication vs accuracy (n = {n3}, B = {B3}, ε = 1)",
        e5,
        [
            ("protocol", "protocol"),
            ("bits_per_user", "bits/user"),
            ("messages_per_user", "msgs/user"),
            ("shuffler_messages", "shuffler msgs"),
            ("max_error", "max |err|"),
        ],
    )
    C.write_rows(out, "shuffle_E5", e5)
    C.show(
        "E6: Hadamard blanket size ρ per user, exact vs Chernoff (ε = 1)",
        acc_rows,
        [
            ("n", "n"),
            ("tau", "τ"),
            ("rho_exact", "ρ exact"),
            ("rho_chernoff", "ρ Chernoff"),
            ("ratio", "ratio"),
        ],
    )
    C.write_rows(out, "shuffle_E6", acc_rows)
    f, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    ax = axes[0]
    for r in e5:
        if r["bits_per_user"] > 0:
            ax.scatter(
                r["bits_per_user"], r["max_error"], marker=markers[r["protocol"]], label=r["protocol"], s=30
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bits per user")
    ax.set_ylabel("max |error|")
    ax.set_title(f"E5: frontier (n = {n3}, B = {B3}, ε = 1)")
    ax.legend(fontsize=6)
    ax = axes[1]
    ax.plot([r["n"] for r in acc_rows], [r["rho_exact"] for r in acc_rows], "o-", label="ρ exact")
    ax.plot(
        [r["n"] for r in acc_rows], [r["rho_chernoff"] for r in acc_rows], "s-", label="ρ Chernoff (paper)"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("blanket messages per user")
    ax.set_title(f"E6: accounting (KS sim. check p = {ks.pvalue:.2f})")
    ax.legend(fontsize=6)
    ax = axes[2]
    t_sl = C.fit_slope([r["length"] for r in e7], [max(r["tree_err"], 1e-9) for r in e7])
    f_sl = C.fit_slope([r["length"] for r in e7], [max(r["flat_err"], 1e-9) for r in e7])
    for k, lab, mk in (
        ("tree_err", f"tree (§5) ({t_sl[0]:+.2f})", "o"),
        ("flat_err", f"flat sums ({f_sl[0]:+.2f})", "s"),
    ):
        m = [C.mean_ci([r[k] for r in e7 if r["length"] == ln]) for ln in lengths]
        (line,) = ax.plot(lengths, [v[0] for v in m], marker=mk, label=lab)
        ax.fill_between(
            lengths, [v[1] for v in m], [v[2] for v in m], alpha=0.2, color=line.get_color(), linewidth=0
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("range length")
    ax.set_ylabel("|error| (counts)")
    ax.set_title(f"E7: range counts (n = {n7}, B = {B7})")
    ax.legend(fontsize=6)
    ax = axes[3]
    q_sl = C.fit_slope([r["n"] for r in e8], [max(r["rank_error"], 0.5) for r in e8])
    m8 = [C.mean_ci([r["rank_error"] / r["n"] for r in e8 if r["n"] == n]) for n in n8s]
    (line,) = ax.plot(n8s, [v[0] for v in m8], "o-", label=f"rank error / n (error slope {q_sl[0]:+.2f})")
    ax.fill_between(
        n8s, [max(v[1], 1e-9) for v in m8], [v[2] for v in m8], alpha=0.2, color=line.get_color(), linewidth=0
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("|rank(q̂) − qn| / n")
    ax.set_title("E8: quantiles q ∈ {¼, ½, ¾}, Beta(2, 5)")
    ax.legend(fontsize=6)
    C.savefig(f, out / "shuffle_E5_E8.png")
    C.show(
        f"E9: heavy hitters (prefix tree, n = {n9}, B = {B9}, Zipf(1.3))",
        e9,
        [
            ("threshold", "threshold"),
            ("true_heavy", "true"),
            ("precision", "precision"),
            ("recall", "recall"),
        ],
    )
    C.show(
        "E10: Hadamard analyzer time (n = B)",
        e10,
        [("B", "B"), ("messages", "messages"), ("seconds", "seconds")],
    )
    C.write_rows(out, "shuffle_E7", e7)
    C.write_rows(out, "shuffle_E8", e8)
    C.write_rows(out, "shuffle_E9", e9)
    C.write_rows(out, "shuffle_E10", e10)

    # ------------------------------------------------------------------ fidelity
    def sl(exp, p):
        return next((s for s in slope_rows if s["exp"] == exp and s["protocol"] == p), None)

    def check(exp, p, pred, tol=0.06):
        s = sl(exp, p)
        if s is None:
            return None, "not run"
        ok = s["ci_lo"] - tol <= pred <= s["ci_hi"] + tol
        return ok, f"{p} {s['slope']:+.3f} [{s['ci_lo']:+.3f}, {s['ci_hi']:+.3f}] (pred. {pred:+.2f})"

    for exp, desc, claim, preds in (
        (
            "E1",
            f"error vs n (B = {B1}, n = {ns[0]}..{ns[-1]})",
            "single-message error grows like n^{1/4} (RAPPOR) while multi-message stays flat; local √n",
            PREDICTED["E1"],
        ),
        (
            "E3",
            f"error vs ε (n = {n3}, B = {B3})",
            "MM-Had ∝ 1/ε, RAPPOR ∝ (e^ε − 1)^{-1/2}, RR and local ∝ 1/ε",
            PREDICTED["E3"],
        ),
    ):
        res = [(p, *check(exp, p, v)) for p, v in preds.items()]
        res = [r for r in res if r[1] is not None]
        n_ok = sum(r[1] for r in res)
        causes = {
            "MM-Had exact": "exact ρ is ∝ 1/ε² only asymptotically (the Chernoff ρ, which is, gives ≈ −1)",
            "S1-RAPPOR": "the amplified ε₀(ε) is not in its small-ε regime on this grid",
            "local": "OUE's variance e^ε/(e^ε − 1)² falls faster than 1/ε² above ε ≈ 1",
        }
        why = [causes[p] for p, ok, _ in res if not ok and p in causes]
        fidelity.append(
            {
                "figure": f"{exp}: {desc}",
                "claim": claim,
                "ours": "shuffle_E1_E4.png",
                "verdict": ("reproduced" if n_ok == len(res) else "partly" if n_ok else "disagrees")
                + (": " + "; ".join(why) if why else ""),
                "evidence": "; ".join(r[2] + ("" if r[1] else " ✗") for r in res),
            }
        )
    rr_valid = max([r["B"] for r in rows if r["exp"] == "E2" and r["protocol"] == "S1-RR"], default=0)
    rr2, had2, rap2 = sl("E2", "S1-RR"), sl("E2", "MM-Had exact"), sl("E2", "S1-RAPPOR")
    ok2 = rr2 is not None and had2 is not None and rr2["slope"] > 0.35 and had2["slope"] < 0.15
    fidelity.append(
        {
            "figure": f"E2: error vs B (n = {n2}, B = {Bs[0]}..{Bs[-1]})",
            "claim": "k-RR ∝ √B where valid; RAPPOR and Hadamard polylog in B",
            "ours": "shuffle_E1_E4.png",
            "verdict": C.verdict(ok2, no="partly"),
            "evidence": "; ".join(
                f"{s['protocol']} {s['slope']:+.3f} [{s['ci_lo']:+.3f}, {s['ci_hi']:+.3f}]"
                for s in (rr2, rap2, had2)
                if s
            )
            + f" (k-RR valid only for B ≤ {rr_valid})",
        }
    )
    had4, rap4 = sl("E4", "MM-Had exact"), sl("E4", "S1-RAPPOR")
    ok4 = (
        had4 is not None
        and abs(had4["slope"] - 0.5) < 0.25
        and rap4 is not None
        and rap4["slope"] < had4["slope"]
    )
    fidelity.append(
        {
            "figure": "E4: error vs δ",
            "claim": "MM-Had ∝ √log(1/δ), RAPPOR ∝ (log 1/δ)^{1/4}",
            "ours": "shuffle_E1_E4.png",
            "verdict": C.verdict(ok4, no="partly"),
            "evidence": "slopes vs log(1/δ): "
            + "; ".join(
                f"{s['protocol']} {s['slope']:+.3f} [{s['ci_lo']:+.3f}, {s['ci_hi']:+.3f}]"
                for s in (had4, rap4)
                if s
            )
            + " (pred. 0.5, 0.25)",
        }
    )
    best_mm = min(
        (r for r in e5 if r["protocol"].startswith("MM")), key=lambda r: r["max_error"], default=None
    )
    rap5 = next((r for r in e5 if r["protocol"] == "S1-RAPPOR"), None)
    fidelity.append(
        {
            "figure": "E5: communication–accuracy",
            "claim": "multi-message: polylog error with polylog messages; single-message pays in error",
            "ours": "shuffle_E5_E8.png",
            "verdict": C.verdict(
                best_mm is not None and rap5 is not None and best_mm["max_error"] < rap5["max_error"],
                no="partly",
            ),
            "evidence": "; ".join(
                f"{r['protocol']}: {r['bits_per_user']:.0f} bits, {r['max_error']:.0f}" for r in e5
            ),
        }
    )
    fidelity.append(
        {
            "figure": "E6: accounting",
            "claim": "the Chernoff ρ is sufficient; exact accounting needs fewer blanket messages",
            "ours": "shuffle_E5_E8.png",
            "verdict": C.verdict(
                all(r["rho_exact"] <= r["rho_chernoff"] for r in acc_rows) and ks.pvalue > 0.01, no="partly"
            )
            + " (audit: tests/audit/test_audit_shuffle.py)",
            "evidence": f"ρ exact/Chernoff at n={acc_rows[-1]['n']}: {acc_rows[-1]['rho_exact']}/"
            f"{acc_rows[-1]['rho_chernoff']}; marginal vs message-level max error: KS p = "
            f"{ks.pvalue:.2f} ({3 * runs} + {3 * runs} runs, n={n6}, B={B6})",
        }
    )
    fidelity.append(
        {
            "figure": "E7: range counting",
            "claim": "tree error polylog(B), independent of the range length; flat sums grow like √length",
            "ours": "shuffle_E5_E8.png",
            "verdict": C.verdict(abs(t_sl[0]) < 0.1 and f_sl[0] > 0.3, no="partly"),
            "evidence": f"slope vs length: tree {t_sl[0]:+.3f} [{t_sl[1]:+.3f}, {t_sl[2]:+.3f}], flat "
            f"{f_sl[0]:+.3f} [{f_sl[1]:+.3f}, {f_sl[2]:+.3f}] (n={n7}, B={B7})",
        }
    )
    fidelity.append(
        {
            "figure": "E8: quantiles",
            "claim": "rank error polylog(n)/ε, so error/n → 0",
            "ours": "shuffle_E5_E8.png",
            "verdict": C.verdict(q_sl[2] < 0.5, no="partly"),
            "evidence": f"slope of rank error vs n {q_sl[0]:+.3f} [{q_sl[1]:+.3f}, {q_sl[2]:+.3f}]; "
            f"error/n {m8[0][0]:.2g} → {m8[-1][0]:.2g}",
        }
    )
    hh = e9[0]
    fidelity.append(
        {
            "figure": "E9: heavy hitters",
            "claim": "prefix-tree decoding finds the heavy hitters",
            "ours": "",
            "verdict": C.verdict(hh["recall"] > 0.9 and hh["precision"] > 0.9, no="partly")
            + f" (B = 2^{int(math.log2(B9))}, not 2^32)",
            "evidence": f"precision {hh['precision']:.2f}, recall {hh['recall']:.2f} at threshold "
            f"{hh['threshold']:.0f} ({hh['true_heavy']} true heavy, {runs} runs)",
        }
    )
    t10 = C.fit_slope([r["B"] for r in e10], [max(r["seconds"], 1e-6) for r in e10])
    fidelity.append(
        {
            "figure": "E10: analyzer runtime",
            "claim": "kernel enumeration Õ((n + B)(k + ρ)), not n(k + ρ)B",
            "ours": "",
            "verdict": "reproduced"
            if t10[0] < 1.25
            else "disagrees"
            if t10[0] > 1.75
            else "inconclusive: the slope lies between the kernel (1) and naive (2) bounds; "
            "one timing per point on a shared machine",
            "evidence": f"analyzer time on the diagonal n = B: slope {t10[0]:+.2f} (kernel enumeration ≈ 1, "
            "naive decoding 2) (" + ", ".join(f"B={r['B']}: {r['seconds']:.2f} s" for r in e10) + ")",
        }
    )
    C.finish(
        out,
        NAME,
        paper="Shuffle (Ghazi et al.)",
        fidelity=fidelity,
        runs=runs,
        seed=args.seed,
        t0=t0,
        smoke=smoke,
    )
    return 0


def _tree_counts(leaf: np.ndarray) -> np.ndarray:
    """Counts of the retained tree nodes (ids in [0, B), as privstats.shuffle.ranges numbers them)."""
    from privstats.shuffle.ranges import support

    B = leaf.size
    ids = support(np.arange(B), B)  # (B, L+1) retained-node ids on each leaf's path, -1 padded
    ok = ids >= 0
    out = np.zeros(B, dtype=np.int64)
    np.add.at(out, ids[ok], np.broadcast_to(leaf[:, None], ids.shape)[ok])
    return out


def _prefix_from_tree(est: np.ndarray, B: int) -> np.ndarray:
    """All prefix counts #{x < j}, j = 1..B, from node estimates (vectorized prefix_terms)."""
    L = int(math.log2(B))
    j = np.arange(1, B + 1, dtype=np.int64)
    out = np.zeros(B)
    for r in range(L):
        bit = ((j >> r) & 1).astype(bool)
        start = (j >> (r + 1)) << (r + 1)
        node = ((B + start) >> r) // 2
        out[bit] += est[node[bit]]
    out[-1] = est[0]
    return out


def _heavy_hitters(n, B, delta, runs, g, bar) -> list[dict]:
    """Prefix tree over log2 B levels, users split across levels, Hadamard per level (marginal simulation)."""

    L = int(math.log2(B))
    x = np.minimum(g.zipf(1.3, n), B) - 1
    true = np.bincount(x, minlength=B)
    found_all = []
    thr = None
    # one calibration per level, at the expected n / L users of that level (n public, the split is public)
    protos = [hadamard(2 ** (lv + 1), max(n // L, 2), 1.0, delta) for lv in range(L)]
    for _ in range(runs):
        level = g.integers(0, L, n)  # level l + 1 prefixes (2^(l+1) of them)
        cand = np.arange(2)
        for l in range(L):
            users = x[level == l] >> (L - l - 1)
            m = users.size
            p = protos[l]
            c = np.bincount(users, minlength=2 ** (l + 1))
            est = hadamard_marginal(p, c, g, users=m) * (n / max(m, 1))
            se = math.sqrt(m * (p.k + p.rho) * 2.0**-p.tau / (1 - 2.0**-p.tau)) * (n / max(m, 1))
            t = 5 * se
            keep = cand[est[cand] >= t]
            cand = np.unique(np.concatenate([2 * keep, 2 * keep + 1])) if l < L - 1 else keep
            thr = t
        found_all.append(set(cand.tolist()))
        bar.advance()
    heavy = set(np.flatnonzero(true >= 2 * thr).tolist())
    prec = np.mean(
        [len(f & set(np.flatnonzero(true >= thr / 2).tolist())) / max(len(f), 1) for f in found_all]
    )
    rec = np.mean([len(f & heavy) / max(len(heavy), 1) for f in found_all])
    return [
        {"threshold": float(thr), "true_heavy": len(heavy), "precision": float(prec), "recall": float(rec)}
    ]


if __name__ == "__main__":
    raise SystemExit(main())
