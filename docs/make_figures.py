"""Regenerate the figures of the statistics pages: ``python docs/make_figures.py``.

Every figure is a simulation with a fixed seed (data generated here, nothing downloaded), drawn with
matplotlib's Agg backend into ``docs/figures/`` as a small PNG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import privstats

OUT = Path(__file__).resolve().parent / "figures"
STYLE = {
    "local": ("tab:red", "o", "-"),
    "shuffle": ("tab:orange", "s", "--"),
    "secure": ("tab:green", "^", "-."),
    "central": ("tab:blue", "D", ":"),
}
EPS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _save(fig, name: str) -> None:
    OUT.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=72)
    plt.close(fig)
    print(name, (OUT / name).stat().st_size // 1024, "KB")


def _error_vs_eps(name, title, ylabel, models, run, exact, reps=3):
    """Mean |private − exact| over ``reps`` seeds against ε, one line per model."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for model in models:
        color, marker, ls = STYLE[model]
        err = [np.mean([abs(run(model, e, r) - exact) for r in range(reps)]) for e in EPS]
        ax.plot(EPS, err, color=color, marker=marker, ls=ls, label=model)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(EPS, [f"{e:g}" for e in EPS])
    ax.minorticks_off()
    ax.set_xlabel("ε")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(title="trust model", loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, name)


def frequencies() -> None:
    x = np.random.default_rng(0).zipf(1.5, 200_000) % 64
    truth = np.bincount(x, minlength=64)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.bar(np.arange(16), truth[:16], color="lightgrey", label="exact")
    for k, model in enumerate(("local", "shuffle", "central")):
        color, marker, _ = STYLE[model]
        est = privstats.frequencies(x, domain=64, epsilon=1.0, delta=1e-6, model=model, rng=1)
        ax.errorbar(
            np.arange(16) + 0.25 * (k - 1),
            est.value[:16],
            yerr=1.96 * np.asarray(est.stderr)[:16],
            ls="none",
            marker=marker,
            color=color,
            ms=4,
            capsize=2,
            label=f"{model} (95% CI)",
        )
    ax.set_yscale("log")
    ax.set_ylim(bottom=100)
    ax.set_xlabel("item")
    ax.set_ylabel("count")
    ax.set_title("frequencies of a Zipf(1.5) sample, n = 200,000, ε = 1", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "frequencies.png")


def range_counts() -> None:
    x = np.random.default_rng(0).binomial(63, 0.3, 100_000)
    exact = np.cumsum(np.bincount(x, minlength=64)) / x.size
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.step(np.arange(1, 65), exact, where="post", color="black", label="exact")
    for model in ("local", "shuffle", "central"):
        color, marker, ls = STYLE[model]
        est = privstats.range_counts(x, domain=64, epsilon=1.0, delta=1e-6, model=model, rng=1)
        ax.plot(np.arange(1, 65), est.value / x.size, color=color, ls=ls, marker=marker, ms=3, label=model)
    ax.set_xlabel("j")
    ax.set_ylabel("share of users with x < j")
    ax.set_title("prefix counts (all ranges [0, j)), n = 100,000, ε = 1", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "range_counts.png")


def heavy_hitters() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.zipf(1.3, 100_000) % 4096])
    truth = np.bincount(x, minlength=4096)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    top = np.argsort(-truth)[:40]
    ax.plot(np.arange(40), truth[top], color="black", marker=".", label="exact count (top 40)")
    for k, model in enumerate(("shuffle", "central")):
        color, marker, _ = STYLE[model]
        est = privstats.heavy_hitters(x, domain=4096, epsilon=1.0, delta=1e-6, model=model, rng=1)
        found = set(est.value.tolist())
        idx = [i for i, item in enumerate(top) if item in found]
        ax.plot(
            idx,
            truth[top][idx] * (1.08 + 0.08 * k),
            ls="none",
            marker=marker,
            color=color,
            label=f"found by {model}",
        )
    ax.set_yscale("log")
    ax.set_xlabel("rank of item")
    ax.set_ylabel("count")
    ax.set_title("heavy hitters, Zipf(1.3) over 4096 items, n = 100,000, ε = 1", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "heavy_hitters.png")


def ecdf() -> None:
    x = np.random.default_rng(0).lognormal(3.5, 0.6, 20_000).clip(0, 256)
    grid = np.linspace(0, 256, 257)[1:]
    exact = np.searchsorted(np.sort(x), grid, side="right") / x.size
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.step(grid, exact, where="post", color="black", label="exact")
    for model in ("local", "secure", "central"):
        color, _marker, ls = STYLE[model]
        F = privstats.ecdf(x, epsilon=0.5, bounds=(0, 256), model=model, rng=1)
        ax.plot(grid, F.evaluate(grid), color=color, ls=ls, label=model)
    ax.set_xlim(0, 150)
    ax.set_xlabel("income (thousands)")
    ax.set_ylabel("F(x)")
    ax.set_title("private ECDF, n = 20,000, ε = 0.5", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "ecdf.png")


def quantiles() -> None:
    x = np.random.default_rng(0).lognormal(3.5, 0.6, 20_000).clip(0, 256)
    exact = float(np.quantile(x, 0.5, method="inverted_cdf"))

    def run(model, eps, rep):
        kw = {"delta": 1e-6} if model == "shuffle" else {}
        return float(
            privstats.quantiles(
                x, [0.5], epsilon=eps, bounds=(0, 256), model=model, rng=10 * rep + 1, **kw
            ).value[0]
        )

    _error_vs_eps(
        "quantiles.png",
        "median of 20,000 incomes: |error| vs ε (mean of 3 runs)",
        "|private − exact| (thousands)",
        ("local", "shuffle", "secure", "central"),
        run,
        exact,
    )


def _scores(n):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    return y, np.clip(rng.normal(0.4 + 0.2 * y, 0.15), 0, 1)


def auc() -> None:
    from scipy.stats import mannwhitneyu

    y, s = _scores(20_000)
    exact = mannwhitneyu(s[y == 1], s[y == 0]).statistic / ((y == 1).sum() * (y == 0).sum())

    def run(model, eps, rep):
        return float(privstats.auc(y, s, epsilon=eps, model=model, bounds=(0, 1), rng=10 * rep + 1).value)

    _error_vs_eps(
        "auc.png",
        "AUC, n = 20,000: |error| vs ε (mean of 3 runs)",
        "|private − exact|",
        ("local", "secure", "central"),
        run,
        exact,
    )


def roc_curve() -> None:
    y, s = _scores(20_000)
    order = np.argsort(-s)
    tpr0 = np.r_[0, np.cumsum(y[order]) / y.sum()]
    fpr0 = np.r_[0, np.cumsum(1 - y[order]) / (1 - y).sum()]
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.plot(fpr0, tpr0, color="black", label="exact")
    for model in ("local", "central"):
        color, _, ls = STYLE[model]
        fpr, tpr, _, est = privstats.roc_curve(y, s, epsilon=0.5, model=model, rng=1)
        ax.plot(fpr, tpr, color=color, ls=ls, label=f"{model} (AUC {est.value:.3f})")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("private ROC curve, n = 20,000, ε = 0.5", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "roc_curve.png")


def hosmer_lemeshow() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(2, 5, 50_000)
    y_cal = (rng.random(p.size) < p).astype(int)
    y_mis = (rng.random(p.size) < np.clip(1.3 * p, 0, 1)).astype(int)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for label, y, color, marker in (
        ("calibrated", y_cal, "tab:blue", "o"),
        ("miscalibrated (×1.3)", y_mis, "tab:red", "s"),
    ):
        pv = [
            privstats.hosmer_lemeshow(y, p, epsilon=e, rng=1, bootstrap=500).details["p_value"] for e in EPS
        ]
        ax.plot(EPS, pv, color=color, marker=marker, label=label)
    ax.axhline(0.05, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(EPS, [f"{e:g}" for e in EPS])
    ax.minorticks_off()
    ax.set_xlabel("ε")
    ax.set_ylabel("noise-aware p-value")
    ax.set_title("Hosmer–Lemeshow test, n = 50,000 (central)", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "hosmer_lemeshow.png")


def kendall_tau() -> None:
    from scipy.stats import kendalltau

    z = np.random.default_rng(0).multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], 10_000)
    a, b = np.clip(z[:, 0], -3, 3), np.clip(z[:, 1], -3, 3)
    exact = kendalltau(a, b).statistic

    def run(model, eps, rep):
        return float(
            privstats.kendall_tau(a, b, epsilon=eps, model=model, bounds=(-3, 3), rng=10 * rep + 1).value
        )

    _error_vs_eps(
        "kendall_tau.png",
        "Kendall's tau-b, n = 10,000: |error| vs ε (mean of 3 runs)",
        "|private − exact|",
        ("local", "secure", "central"),
        run,
        exact,
    )


def gini() -> None:
    x = np.random.default_rng(0).lognormal(3.5, 0.6, 20_000).clip(0, 256)
    xs = np.sort(x)
    n = xs.size
    exact = 2.0 * np.sum((2 * np.arange(n) - n + 1) * xs) / (n * (n - 1))

    def run(model, eps, rep):
        return float(
            privstats.gini_mean_difference(
                x, epsilon=eps, model=model, bounds=(0, 256), rng=10 * rep + 1
            ).value
        )

    _error_vs_eps(
        "gini.png",
        "Gini mean difference, n = 20,000: |error| vs ε (mean of 3 runs)",
        "|private − exact|",
        ("local", "secure", "central"),
        run,
        exact,
    )


def ustatistic() -> None:
    x = np.random.default_rng(0).zipf(1.5, 50_000) % 16
    c = np.bincount(x, minlength=16).astype(float)
    exact = float(np.sum(c * (c - 1)) / (x.size * (x.size - 1)))

    def run(model, eps, rep):
        return float(
            privstats.collision_probability(
                x, epsilon=eps, domain_size=16, model=model, rng=10 * rep + 1
            ).value
        )

    _error_vs_eps(
        "collision_probability.png",
        "collision probability, n = 50,000: |error| vs ε",
        "|private − exact|",
        ("local", "secure", "central"),
        run,
        exact,
    )


def summarize() -> None:
    rng = np.random.default_rng(0)
    owners = [rng.normal(mu, 1.0, (400, 2)) for mu in ((-3, 0), (0, 0), (3, 0))]
    target = rng.normal((0, 0), 1.0, (200, 2))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for k, o in enumerate(owners):
        ax.scatter(o[:, 0], o[:, 1], s=3, color="lightgrey", label="owners' rows" if k == 0 else None)
    ax.scatter(target[:, 0], target[:, 1], s=6, color="black", marker="x", label="buyer's target")
    res = privstats.summarize(owners, target, size=30, epsilon=2.0, delta=1e-6, rng=1)
    pts = res.points(owners)
    ax.scatter(
        pts[:, 0],
        pts[:, 1],
        s=30,
        color="tab:green",
        marker="^",
        label=f"private summary (MMD² {res.mmd2:.3g})",
    )
    ax.set_xlabel("feature 1")
    ax.set_ylabel("feature 2")
    ax.set_title("a 30-row summary from 3 owners, ε = 2 per owner", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    _save(fig, "summarize.png")


FIGURES = [
    frequencies,
    range_counts,
    heavy_hitters,
    ecdf,
    quantiles,
    auc,
    roc_curve,
    hosmer_lemeshow,
    kendall_tau,
    gini,
    ustatistic,
    summarize,
]

if __name__ == "__main__":
    import sys

    wanted = set(sys.argv[1:])
    for f in FIGURES:
        if not wanted or f.__name__ in wanted:
            f()
