"""Figures for the demo report (matplotlib, the optional ``plot`` extra; Agg backend).

Each function takes plain arrays, writes one PNG and returns its path, so they
work with any protocol's output.

>>> import numpy as np, tempfile, pathlib
>>> t = np.linspace(0, 1, 11)
>>> p = plot_ecdf(pathlib.Path(tempfile.mkdtemp()) / "ecdf.png", t, exact=t, private={"central": t})
>>> p.suffix
'.png'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["matplotlib_available", "plot_ecdf", "plot_error_vs_epsilon", "plot_roc", "series_styles"]

_MODEL_STYLE = {
    "local": ("tab:red", "o"),
    "shuffle": ("tab:orange", "s"),
    "secure": ("tab:green", "^"),
    "central": ("tab:blue", "D"),
}
_MODEL_DASH = {"local": "-", "shuffle": "--", "secure": "-.", "central": ":"}


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path, *, layout: bool = True) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if layout:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def plot_ecdf(
    path: Path,
    grid,
    *,
    exact,
    private: Mapping[str, Sequence[float]],
    bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    title: str = "ECDF: private vs exact",
    xlabel: str = "x",
) -> Path:
    """Exact ECDF (step) and each model's private ECDF on ``grid`` with its confidence band (left),
    and the difference private − exact with the band around it (right), where the band is visible."""
    plt = _pyplot()
    fig, (ax, dx) = plt.subplots(1, 2, figsize=(11, 4.8))
    grid = np.asarray(grid, dtype=float)
    exact = np.asarray(exact, dtype=float)
    ax.step(grid, exact, where="post", color="black", lw=1.5, label="exact")
    dx.axhline(0.0, color="black", lw=1.0)
    styles = series_styles(list(private))
    for model, curve in private.items():
        color = styles[model][0]
        values = np.asarray(curve, dtype=float)
        ax.plot(grid, values, color=color, lw=1.2, ls=_MODEL_DASH.get(model, "-"), label=f"private ({model})")
        dx.plot(grid, values - exact, color=color, lw=1.0, ls=_MODEL_DASH.get(model, "-"))
        if bands and model in bands:
            lo, hi = (np.asarray(b, dtype=float) for b in bands[model])
            ax.fill_between(grid, lo, hi, color=color, alpha=0.2, lw=0, label=f"95% band ({model})")
            dx.fill_between(grid, lo - exact, hi - exact, color=color, alpha=0.2, lw=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("F(x)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title)
    dx.set_xlabel(xlabel)
    dx.set_ylabel("private − exact")
    dx.set_title("error and 95% confidence band")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return _save(fig, path, layout=False)


def plot_roc(
    path: Path,
    *,
    exact: tuple[Sequence[float], Sequence[float]],
    private: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    title: str = "ROC: private vs exact",
) -> Path:
    """Exact ROC curve ``(fpr, tpr)`` and each model's private curve."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.4, 5.0))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.plot(*exact, color="black", lw=1.5, drawstyle="steps-post", label="exact (scikit-learn)")
    styles = series_styles(list(private))
    for model, (fpr, tpr) in private.items():
        ax.plot(
            fpr,
            tpr,
            color=styles[model][0],
            lw=1.2,
            ls=_MODEL_DASH.get(model, "-"),
            label=f"private ({model})",
        )
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    return _save(fig, path)


_CYCLE_COLORS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:gray",
    "tab:olive",
    "tab:cyan",
)
_CYCLE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def series_styles(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A distinct (colour, marker) per series: the trust models keep their fixed style, any other
    series (e.g. one per frequency oracle) gets the next unused colour and marker.

    >>> styles = series_styles(["GRR", "OUE", "local"])
    >>> len(set(styles.values())) == 3 and styles["local"] == _MODEL_STYLE["local"]
    True
    """
    used = {style for name, style in _MODEL_STYLE.items() if name in names}
    out: dict[str, tuple[str, str]] = {}
    k = 0
    for name in dict.fromkeys(names):
        if name in _MODEL_STYLE:
            out[name] = _MODEL_STYLE[name]
            continue
        while (_CYCLE_COLORS[k % len(_CYCLE_COLORS)], _CYCLE_MARKERS[k % len(_CYCLE_MARKERS)]) in used:
            k += 1
        out[name] = (_CYCLE_COLORS[k % len(_CYCLE_COLORS)], _CYCLE_MARKERS[k % len(_CYCLE_MARKERS)])
        used.add(out[name])
        k += 1
    return out


def _panel(statistic: str) -> str:
    """The panel of a row: a row run on a subset ("median, first 10000 users") joins its statistic's panel.

    >>> _panel("median, first 10000 users"), _panel("median")
    ('median', 'median')
    """
    head, sep, tail = statistic.rpartition(", first ")
    return head if sep and tail.endswith(" users") else statistic


def plot_error_vs_epsilon(
    path: Path,
    rows: Sequence[Mapping],
    *,
    title: str = "absolute error vs ε per trust model",
    ylabel: str = "|private − exact| (markers), std. error (dashed)",
    legend_title: str = "trust model",
) -> Path:
    """One panel per statistic: |error| (markers) and standard error (dashed lines) against ε, per series.

    ``rows`` are demo rows with keys ``statistic``, ``model`` (the series), ``epsilon``, ``abs_error``,
    ``stderr``.  Every series has its own colour and marker; the legend sits outside the panels.
    """
    plt = _pyplot()
    stats = list(dict.fromkeys(_panel(r["statistic"]) for r in rows))
    styles = series_styles([r["model"] for r in rows])
    ncols = min(3, max(1, len(stats)))
    nrows = max(1, -(-len(stats) // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.9 * ncols + 2.0, 3.0 * nrows + 0.6), squeeze=False)
    handles: dict[str, object] = {}
    for ax, stat in zip(axes.ravel(), stats, strict=False):
        sub = [r for r in rows if _panel(r["statistic"]) == stat]
        positive = [v for r in sub for v in (r["abs_error"], r.get("stderr")) if v]
        floor = 0.5 * min(positive) if positive else 1e-12  # an exact hit is drawn at the panel's floor
        for model in dict.fromkeys(r["model"] for r in sub):
            pts = sorted((r for r in sub if r["model"] == model), key=lambda r: r["epsilon"])
            color, marker = styles[model]
            eps = [r["epsilon"] for r in pts]
            err = [max(r["abs_error"], floor) for r in pts]
            (line,) = ax.plot(
                eps,
                err,
                ls="none",
                marker=marker,
                color=color,
                ms=6,
                markeredgecolor="black",
                markeredgewidth=0.4,
            )
            handles.setdefault(model, line)
            se = [(r["epsilon"], r["stderr"]) for r in pts if r.get("stderr")]
            if se:
                ax.plot(*zip(*se, strict=False), color=color, lw=1, ls="--")
        ax.set_xscale("log")
        if positive and max(positive) / floor > 20:
            ax.set_yscale("log")
        ticks = sorted({r["epsilon"] for r in sub})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        subsets = sorted(
            {f"{r['model']}: {r['statistic'][len(stat) + 2 :]}" for r in sub if r["statistic"] != stat}
        )
        ax.set_title("\n".join([stat, *subsets]), fontsize=9)
        ax.set_xlabel("ε")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    for ax in axes.ravel()[len(stats) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.legend(
        list(handles.values()),
        list(handles),
        title=legend_title,
        loc="center right",
        fontsize=8,
        title_fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0, 1 - 1.9 / fig.get_figwidth(), 0.97))
    return _save(fig, path, layout=False)
