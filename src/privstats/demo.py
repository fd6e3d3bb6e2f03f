"""``privstats demo``: every statistic under every trust model, on data that ships with the project.

The demo is a list of small *scenarios*.  Each computes the exact (non-private)
value with numpy / SciPy / scikit-learn, runs the private statistic under each trust
model the library offers, and records a row: statistic, trust model, protocol,
ε (δ), private estimate, exact value, absolute error, standard error, bits per
user and time.  A scenario whose function has not landed (not importable yet) or
a model a statistic does not support is skipped with a printed note.

Data: a Zipf sample (frequencies), synthetic log-normal incomes (ECDF, quantiles,
Gini), a logistic-regression score on scikit-learn's bundled breast-cancer data
(AUC, ROC), an ordinal 6×6 pair (Kendall's tau) and scikit-learn's 8×8 digits
(summarization).  Everything is generated from a fixed seed: the run is reproducible.

>>> result = collect(size="tiny", scenarios=["oracles"])
>>> "GRR" in {r["oracle"] for r in result.oracle_rows}
True
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from privstats.estimate import TRUST_MODELS, Estimate

__all__ = [
    "SCENARIOS",
    "SIZES",
    "DemoResult",
    "collect",
    "demo_data",
    "run_demo",
    "scenario_seed",
    "write_report",
]


@dataclass(frozen=True)
class DemoSize:
    """Problem sizes for one demo size."""

    n_freq: int  # users in the frequency scenarios
    domain: int  # frequency domain size
    n_cont: int  # records in the ECDF / quantile / Gini data
    n_pairs: int  # users in the Kendall's tau data
    n_scores: int  # users in the synthetic calibrated-score data (AUC at scale, Hosmer–Lemeshow)
    summary_size: int  # points chosen by summarization
    epsilons: tuple[float, ...]


SIZES = {
    "tiny": DemoSize(
        n_freq=5_000, domain=16, n_cont=1_000, n_pairs=1_000, n_scores=2_000, summary_size=10, epsilons=(1.0,)
    ),
    "small": DemoSize(
        n_freq=20_000,
        domain=64,
        n_cont=4_000,
        n_pairs=4_000,
        n_scores=10_000,
        summary_size=20,
        epsilons=(1.0, 4.0),
    ),
    "full": DemoSize(
        n_freq=1_000_000,
        domain=1024,
        n_cont=50_000,
        n_pairs=20_000,
        n_scores=100_000,
        summary_size=50,
        epsilons=(0.5, 1.0, 2.0),
    ),
}

HEADLINE_EPSILON = 1.0
SHUFFLE_DELTA = 1e-6
INCOME_BOUNDS = (0.0, 256.0)  # public bounds (thousands); 40 lies on the default 1024-point grid
SHUFFLE_RANGE_USERS = 5_000  # users in the shuffle-model range row (see scenario_range_counts)
SHUFFLE_QUANTILE_USERS = 10_000  # users in the shuffle-model quantile row (see scenario_quantiles)
INCOME_THRESHOLD = 40.0  # public point at which the ECDF row evaluates F
QUANTILE_LEVELS = (0.25, 0.5, 0.75)
ORDINAL_LEVELS = 6
# (statistic, model) rows that cost seconds each to simulate: run at the headline ε only
HEADLINE_ONLY = {
    ("frequencies", "shuffle"),
    ("range_counts", "shuffle"),
    ("quantiles", "shuffle"),
    ("roc_curve", "local"),
}

ROW_COLUMNS = [
    ("statistic", "statistic"),
    ("model", "trust model"),
    ("protocol", "protocol"),
    ("privacy", "ε (δ)"),
    ("estimate", "private estimate"),
    ("exact", "exact value"),
    ("abs_error", "abs error"),
    ("stderr", "std error"),
    ("bits_per_user", "bits/user"),
    ("time_s", "time (s)"),
    ("plan", "planner's pick"),
]
ORACLE_COLUMNS = [
    ("oracle", "oracle"),
    ("domain", "d"),
    ("epsilon", "ε"),
    ("max_abs_error", "max abs error"),
    ("mean_abs_error", "mean abs error"),
    ("exact_std", "exact std"),
    ("bits_per_user", "bits/user"),
    ("time_s", "time (s)"),
]


# ----------------------------------------------------------------------------- data
def _zipf(n: int, d: int, rng: np.random.Generator, s: float = 1.1) -> np.ndarray:
    p = 1.0 / np.arange(1, d + 1) ** s
    return rng.choice(d, size=n, p=p / p.sum()).astype(np.int64)


def _breast_cancer_scores() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000))
    score = model.fit(X, y).predict_proba(X)[:, 1]
    return y.astype(np.int64), score


def _digits_owners(rng: np.random.Generator):
    """Five owners by digit pairs and a 70/30 target of 3s and 4s (issue 6's stand-in for MNIST)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    owners = [X[np.isin(y, pair)] for pair in ([0, 1], [3, 4], [5, 6], [7, 8], [9, 2])]
    threes, fours = rng.permutation(np.flatnonzero(y == 3)), rng.permutation(np.flatnonzero(y == 4))
    k = 200  # the consumer's validation set D_v
    target = X[np.concatenate([threes[: int(0.7 * k)], fours[: k - int(0.7 * k)]])]
    return owners, target


def demo_data(name: str, size: str = "full", seed: int = 2024):
    """The demo's data sets, generated from ``seed`` (deterministic)."""
    cfg = SIZES[size]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if name == "zipf":
        return _zipf(cfg.n_freq, cfg.domain, rng)
    if name == "incomes":
        x = rng.lognormal(mean=math.log(40.0), sigma=0.6, size=cfg.n_cont)
        return np.clip(np.round(x, 2), *INCOME_BOUNDS)
    if name == "ordinal":
        z = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.75], [0.75, 1.0]], size=cfg.n_pairs)
        cuts = np.array([-1.2, -0.5, 0.0, 0.5, 1.2])
        return np.searchsorted(cuts, z[:, 0]), np.searchsorted(cuts, z[:, 1])
    if name == "scores":  # a calibrated model: y ~ Bernoulli(p), p ~ Beta(2, 5)
        p = np.round(rng.beta(2.0, 5.0, size=cfg.n_scores), 4)
        return (rng.random(cfg.n_scores) < p).astype(np.int64), p
    if name == "breast_cancer":
        return _breast_cancer_scores()
    if name == "digits":
        return _digits_owners(rng)
    raise ValueError(f"name must be a demo data set, got {name!r}")


def gini_mean_difference_exact(x) -> float:
    """Mean of |x_i − x_j| over pairs i < j, in O(n log n) from the sorted values."""
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    return float(2.0 * np.sum((2 * np.arange(n) - n + 1) * x) / (n * (n - 1)))


# ----------------------------------------------------------------------------- running
def scenario_seed(seed: int, *key) -> int:
    """The simulation seed of one private computation (stable across runs and scenario order)."""
    return (seed * 1_000_003 + zlib.crc32("|".join(map(str, key)).encode())) % 2**32


class _Unsupported(Exception):
    """The statistic does not offer this trust model (or its function has not landed)."""


def _call(fn: Callable, *args, **kwargs):
    """Call ``fn`` passing only the keyword arguments its signature accepts."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


def _public(name: str):
    """A public privstats function, or raise _Unsupported if it has not landed yet."""
    import privstats

    try:
        return getattr(privstats, name)
    except (ImportError, AttributeError) as exc:
        raise _Unsupported(f"privstats.{name} is not available yet ({type(exc).__name__}: {exc})") from None


def _float(x) -> float | None:
    if x is None:
        return None
    try:
        v = float(np.asarray(x, dtype=float))
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _offered_models(statistic: str) -> tuple[str, ...] | None:
    """The trust models ``privstats.<statistic>`` offers (``privstats.plan.SUPPORTED``), None if unknown."""
    try:
        from privstats.plan import SUPPORTED
    except ImportError:
        return None
    return SUPPORTED.get(statistic)


def _caveats_of(statistic: str, model: str, est: Estimate | None) -> list[str]:
    """Caveats an estimate carries about itself (simulation shortcuts, heuristic guarantees)."""
    if est is None:
        return []
    out = []
    simulated = est.details.get("simulated_noise")
    if simulated:
        out.append(
            f"{statistic} [{model}]: the protocol's noise is simulated as {simulated} "
            f"({est.protocol}, a simulation-only path)"
        )
    return out


def _the_estimate(obj) -> Estimate:
    """The Estimate carried by a result that must have one."""
    est = _estimate_of(obj)
    if est is None:
        raise TypeError(f"expected a result carrying an Estimate, got {type(obj).__name__}")
    return est


def _estimate_of(obj) -> Estimate | None:
    """The Estimate carried by a statistic's result, whatever its shape."""
    if isinstance(obj, Estimate):
        return obj
    if isinstance(obj, tuple):
        return next((o for o in obj if isinstance(o, Estimate)), None)
    for attr in ("estimate", "estimate_", "result"):
        e = getattr(obj, attr, None)
        if isinstance(e, Estimate):
            return e
    return None


@dataclass
class DemoResult:
    """Everything the demo computed: tables, notes, curves for the figures, and the report's location."""

    size: str
    seed: int
    epsilons: tuple[float, ...]
    oracle_rows: list[dict] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    curves: dict = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    report: str | None = None
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0

    def to_dict(self) -> dict:
        return {
            "size": self.size,
            "seed": self.seed,
            "epsilons": list(self.epsilons),
            "oracles": self.oracle_rows,
            "rows": self.rows,
            "notes": self.notes,
            "unavailable": self.unavailable,
            "figures": self.figures,
            "report": self.report,
            "wall_time_s": self.wall_time_s,
            "cpu_time_s": self.cpu_time_s,
        }


class _Context:
    def __init__(self, size: str, seed: int, epsilons, log: Callable[[str], None]):
        self.size, self.seed, self.cfg = size, seed, SIZES[size]
        self.epsilons = tuple(SIZES[size].epsilons if epsilons is None else epsilons)
        self.result = DemoResult(size, seed, self.epsilons)
        self.log = log
        self._data: dict[str, Any] = {}
        self._planned: dict[str, str] = {}
        self._picks: dict[tuple[str, float], dict[str, str]] = {}

    def data(self, name: str):
        if name not in self._data:
            self._data[name] = demo_data(name, self.size, self.seed)
        return self._data[name]

    def rng_seed(self, *key) -> int:
        return scenario_seed(self.seed, *key)

    def note(self, text: str) -> None:
        self.result.notes.append(text)
        self.log(f"note: {text}")

    def _planner_pick(self, statistic: str, epsilon: float, params: dict[str, Any]) -> dict[str, str]:
        """Row marks from :func:`privstats.plan` (δ allowed for shuffle rows): "best" for the model it
        predicts most accurate, "best w/o curator" for the most accurate one that trusts no curator."""
        key = (statistic, epsilon)
        if key not in self._picks:
            try:
                from privstats.plan import plan

                options = plan(statistic, epsilon=epsilon, delta=SHUFFLE_DELTA, warn=False, **params)
                marks: dict[str, str] = {}
                for label, pool in (
                    ("best", list(options)),
                    ("best w/o curator", [o for o in options if o.model != "central"]),
                ):
                    if pool and pool[0].model not in marks:  # the plan is sorted by predicted error
                        marks[pool[0].model] = label
                self._picks[key] = marks
            except (ImportError, ValueError, TypeError) as exc:
                self.note(f"privstats.plan({statistic!r}) failed: {type(exc).__name__}: {exc}")
                self._picks[key] = {}
        return self._picks[key]

    def caveat(self, text: str) -> None:
        """A caveat of the run for the report's Notes (each listed once)."""
        if text not in self.result.notes:
            self.result.notes.append(text)

    def measure(
        self,
        statistic: str,
        model: str,
        epsilon: float,
        run: Callable[[int], Any],
        read: Callable[[Any], tuple[float, float | None]],
        exact: float,
        *,
        note: str = "",
        extra: Callable[[Any], dict] | None = None,
    ) -> Any:
        """Run one private computation and record its row; returns its output (None if skipped)."""
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            out = run(self.rng_seed(statistic, model, epsilon))
        except _Unsupported:
            raise
        except NotImplementedError as exc:
            raise _Unsupported(f"not implemented ({exc})") from None
        except ValueError as exc:
            if "model" in str(exc):
                raise _Unsupported(str(exc)) from None
            self.note(f"{statistic} [{model}, ε={epsilon:g}] failed: ValueError: {exc}")
            return None
        except Exception as exc:  # a bug in a landing protocol must not kill the demo
            self.note(f"{statistic} [{model}, ε={epsilon:g}] failed: {type(exc).__name__}: {exc}")
            return None
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        value, stderr = read(out)
        est = _estimate_of(out)
        private = _float(value)
        for caveat in _caveats_of(statistic, model, est):
            self.caveat(caveat)
        eps_spent = est.epsilon if est is not None and est.epsilon is not None else epsilon
        delta = est.delta if est is not None else 0.0
        row: dict[str, Any] = {
            "statistic": statistic,
            "model": model,
            "protocol": (est.protocol if est is not None and est.protocol else "-"),
            "epsilon": float(epsilon),
            "epsilon_spent": float(eps_spent),
            "delta": float(delta),
            "privacy": f"{eps_spent:g}" + (f" ({delta:.0e})" if delta else ""),
            "estimate": private,
            "exact": float(exact),
            "abs_error": None if private is None else abs(private - float(exact)),
            "stderr": _float(stderr),
            "bits_per_user": _float(est.bits_per_user) if est is not None else None,
            "time_s": elapsed,
            "cpu_s": cpu,
            "plan": self._planned.get(model, ""),
            "note": note,
        }
        if extra is not None:
            try:
                row.update(extra(out))
            except Exception as exc:  # extras are decoration only
                row["note"] = (row["note"] + f" (extras failed: {exc})").strip()
        self.result.rows.append(row)
        return out

    def each_model(
        self,
        statistic: str,
        models,
        body: Callable[[str, float], None],
        *,
        plan: dict[str, Any] | None = None,
    ) -> None:
        """Run ``body(model, eps)`` for every model the statistic offers and every ε; a model it does not
        offer (``privstats.plan.SUPPORTED``, or a refusal) is listed once under "not available".

        ``plan``: the public parameters for :func:`privstats.plan`; each row then records whether its
        model is the planner's pick.  The costly rows of :data:`HEADLINE_ONLY` run at the headline ε
        only (a caveat says so)."""
        headline = _headline(self)
        public = statistic.split(" (")[0]
        offered = _offered_models(public)
        for model in models:
            if offered is not None and model not in offered:
                self.result.unavailable.append(f"{statistic} [{model}]: privstats.{public} does not offer it")
                continue
            skipped = (
                [e for e in self.epsilons if e != headline] if (statistic, model) in HEADLINE_ONLY else []
            )
            for eps in self.epsilons:
                if eps in skipped:
                    continue
                self._planned = {} if plan is None else self._planner_pick(public, eps, plan)
                try:
                    body(model, eps)
                except _Unsupported as exc:
                    self.result.unavailable.append(f"{statistic} [{model}]: {exc}")
                    break
            else:
                if skipped:
                    self.caveat(
                        f"{statistic} [{model}] runs at the headline ε = {headline:g} only, not at "
                        f"ε = {', '.join(f'{e:g}' for e in skipped)} (costly to simulate)"
                    )


# ----------------------------------------------------------------------------- scenarios
def _oracle_instances(d: int, eps: float):
    from privstats import local

    for name in ("GRR", "OUE", "OLH", "HadamardResponse"):
        cls = getattr(local, name, None)
        if cls is None:
            yield name, None, f"privstats.local.{name} is not available yet"
            continue
        try:
            yield name, cls(d, eps), ""
        except ValueError as exc:  # e.g. a domain the oracle does not accept
            yield name, None, f"{name}(d={d}) does not apply: {exc}"
    chooser = getattr(local, "best_oracle", None)
    if chooser is None:
        yield "best_oracle", None, "privstats.local.best_oracle is not available yet"
    else:
        chosen = chooser(d, eps)
        chosen = chosen(d, eps) if isinstance(chosen, type) else chosen
        yield f"best_oracle → {type(chosen).__name__}", chosen, ""


def scenario_oracles(ctx: _Context) -> None:
    """Frequency estimation of a Zipf sample under each local frequency oracle."""
    from privstats.local import BinaryRR

    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    true_counts = np.bincount(values, minlength=d)
    seen: set[str] = set()
    for eps in ctx.epsilons:
        cases = list(_oracle_instances(d, eps))
        cases.append(("BinaryRR (item 0 vs rest)", BinaryRR(eps), ""))
        for name, oracle, why in cases:
            if oracle is None:
                if name not in seen:
                    seen.add(name)
                    ctx.result.unavailable.append(f"oracle {name}: {why}")
                continue
            binary = isinstance(oracle, BinaryRR)
            x = (values != 0).astype(np.int64) if binary else values
            truth = np.bincount(x, minlength=2) if binary else true_counts
            t0 = time.perf_counter()
            try:
                est = oracle.estimate(oracle.simulate(x, rng=ctx.rng_seed("oracle", name, eps)))
            except Exception as exc:
                ctx.note(f"oracle {name} at ε={eps:g} failed: {type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - t0
            err = np.abs(np.asarray(est.value, dtype=float) - truth) / n
            exact_std = math.sqrt(float(np.mean(oracle.variance(n, truth)))) / n
            ctx.result.oracle_rows.append(
                {
                    "oracle": name,
                    "domain": int(truth.size),
                    "epsilon": float(eps),
                    "n": int(n),
                    "max_abs_error": float(err.max()),
                    "mean_abs_error": float(err.mean()),
                    "exact_std": exact_std,
                    "bits_per_user": _float(est.bits_per_user),
                    "time_s": elapsed,
                }
            )


def _share_reader(n: int, item: int = 0):
    def read(out):
        est = _the_estimate(out)
        value = np.asarray(est.value, dtype=float)
        se = None if est.stderr is None else np.asarray(est.stderr, dtype=float)[item] / n
        return value[item] / n, se

    return read


def scenario_frequencies(ctx: _Context) -> None:
    """``privstats.frequencies`` of the Zipf sample: share of the most frequent item, per trust model."""
    fn = _public("frequencies")
    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    truth = np.bincount(values, minlength=d) / n

    def max_err(out):
        err = np.abs(np.asarray(_the_estimate(out).value, dtype=float) / n - truth)
        return {
            "max_abs_error_all_items": float(err.max()),
            "note": f"max |error| over all {d} items {err.max():.3g}",
        }

    def body(model, eps):
        kw = dict(domain=d, domain_size=d, epsilon=eps, model=model)
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
        ctx.measure(
            "frequency of item 0",
            model,
            eps,
            lambda seed: _call(fn, values, rng=seed, **kw),
            _share_reader(n),
            float(truth[0]),
            extra=max_err,
        )

    ctx.each_model("frequencies", TRUST_MODELS, body, plan={"n": n, "domain": d})


def scenario_range_counts(ctx: _Context) -> None:
    """``privstats.range_counts`` of the Zipf sample: the share of users in the first eighth of the domain."""
    fn = _public("range_counts")
    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    hi = d // 8

    # the multi-message shuffle range protocol sends (1 + log2 d) Hadamard messages per user plus blanket
    # noise, which is costly to simulate: its row runs on the first SHUFFLE_RANGE_USERS users, with its
    # own exact value, at the headline ε only
    sample = values[:SHUFFLE_RANGE_USERS]

    def body(model, eps):
        kw = dict(domain=d, epsilon=eps, model=model)
        data, label, note = values, "range share [0, d/8)", f"items 0..{hi - 1} of {d}"
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
            if sample.size < n:
                data, label = sample, f"range share [0, d/8), first {sample.size} users"
                note += f"; n = {sample.size} of {n} users"
                ctx.caveat(
                    f"the shuffle-model range row runs on the first {sample.size} of {n} users "
                    "(simulating its multi-message protocol is costly); its exact value is computed on "
                    "the same users"
                )
        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, data, [(0, hi)], rng=seed, **kw),
            _share_reader(data.size),
            float(np.mean(data < hi)),
            note=note,
        )

    ctx.each_model("range_counts", TRUST_MODELS, body, plan={"n": n, "domain": d})


def _ecdf_arrays(res, grid: np.ndarray):
    """(values, lo, hi) of a private ECDF result on ``grid``; the band may be None."""
    F = np.asarray(res.evaluate(grid), dtype=float)
    lo = hi = None
    ci = getattr(res, "confidence_interval", None)
    if callable(ci):
        try:
            band = ci(0.95)
        except TypeError:
            band = ci(confidence_level=0.95)
        low, high = (band.low, band.high) if hasattr(band, "low") else band
        lo = np.asarray(low.evaluate(grid) if hasattr(low, "evaluate") else low, dtype=float)
        hi = np.asarray(high.evaluate(grid) if hasattr(high, "evaluate") else high, dtype=float)
        if lo.shape != grid.shape:  # band given on the mechanism's own grid
            lo = hi = None
    return F, lo, hi


def scenario_ecdf(ctx: _Context) -> None:
    """``privstats.ecdf`` of incomes: F at a public threshold; the curves go to the ECDF figure."""
    fn = _public("ecdf")
    from scipy import stats

    x = ctx.data("incomes")
    # the mechanism's own grid (1024 points, the ecdf default): between grid points a private ECDF is a
    # step function, so comparing off-grid would add discretisation error that the band does not cover
    grid = np.linspace(*INCOME_BOUNDS, 1025)[1:]
    exact_curve = stats.ecdf(x).cdf.evaluate(grid)
    t = INCOME_THRESHOLD
    exact = float(stats.ecdf(x).cdf.evaluate(t))
    curves = ctx.result.curves.setdefault(
        "ecdf", {"grid": grid, "exact": exact_curve, "private": {}, "bands": {}}
    )

    def read(res):
        value = float(np.asarray(res.evaluate(np.array([t])), dtype=float)[0])
        _F, lo, hi = _ecdf_arrays(res, np.array([t]))
        se = None if lo is None else float((hi[0] - lo[0]) / (2 * 1.959964))
        est = _estimate_of(res)
        if se is None and est is not None and est.stderr is not None and np.ndim(est.stderr) == 0:
            se = float(est.stderr)
        return value, se

    def sup_err(res):
        F = np.asarray(res.evaluate(grid), dtype=float)
        return {
            "sup_abs_error": float(np.max(np.abs(F - exact_curve))),
            "note": f"sup |error| over the grid {np.max(np.abs(F - exact_curve)):.3g}",
        }

    def body(model, eps):
        kw = dict(epsilon=eps, bounds=INCOME_BOUNDS, model=model)
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
        res = ctx.measure(
            f"ECDF F({t:g})",
            model,
            eps,
            lambda seed: _call(fn, x, rng=seed, **kw),
            read,
            exact,
            extra=sup_err,
        )
        if res is not None and eps == _headline(ctx):
            F, lo, hi = _ecdf_arrays(res, grid)
            curves["private"][model] = F
            if lo is not None:
                curves["bands"][model] = (lo, hi)

    ctx.each_model("ecdf", TRUST_MODELS, body, plan={"n": x.size, "bounds": INCOME_BOUNDS})


def _headline(ctx: _Context) -> float:
    return HEADLINE_EPSILON if HEADLINE_EPSILON in ctx.epsilons else ctx.epsilons[0]


def scenario_quantiles(ctx: _Context) -> None:
    """``privstats.quantiles`` of incomes: the quartiles for one budget; the row shows the median."""
    fn = _public("quantiles")
    x = ctx.data("incomes")
    exact = np.quantile(x, QUANTILE_LEVELS, method="inverted_cdf")
    mid = QUANTILE_LEVELS.index(0.5)

    def read(out):
        est = _estimate_of(out)
        value = np.asarray(est.value if est is not None else out, dtype=float).ravel()
        se = None
        if est is not None and est.stderr is not None:
            se = np.asarray(est.stderr, dtype=float).ravel()[mid]
        return value[mid], se

    def body(model, eps):
        kw = dict(epsilon=eps, bounds=INCOME_BOUNDS, model=model)
        data, label, truth, note = x, "median", exact, ""
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
            if x.size > SHUFFLE_QUANTILE_USERS:
                data = x[:SHUFFLE_QUANTILE_USERS]
                truth = np.quantile(data, QUANTILE_LEVELS, method="inverted_cdf")
                label, note = f"median, first {data.size} users", f"n = {data.size} of {x.size} users"
                ctx.caveat(
                    f"the shuffle-model quantile row runs on the first {data.size} of {x.size} users "
                    "(its range-count protocol is costly to simulate); its exact value is computed on "
                    "the same users"
                )

        def all_err(out):
            est = _estimate_of(out)
            value = np.asarray(est.value if est is not None else out, dtype=float).ravel()
            err = np.abs(value - truth)
            return {
                "quartile_abs_errors": err.tolist(),
                "note": "; ".join(
                    filter(None, [note, "quartile |errors| " + ", ".join(f"{e:.3g}" for e in err)])
                ),
            }

        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, data, list(QUANTILE_LEVELS), rng=seed, **kw),
            read,
            float(truth[mid]),
            extra=all_err,
        )

    ctx.each_model(
        "quantiles",
        TRUST_MODELS,
        body,
        plan={"n": x.size, "bounds": INCOME_BOUNDS, "q": list(QUANTILE_LEVELS)},
    )


def _scalar_reader(out):
    est = _estimate_of(out)
    if est is None:
        return _float(out), None
    return est.value, est.stderr


def scenario_auc(ctx: _Context) -> None:
    """``privstats.auc`` of a logistic-regression score on breast cancer (569 patients)."""
    fn = _public("auc")
    from sklearn.metrics import roc_auc_score

    y, s = ctx.data("breast_cancer")
    exact = float(roc_auc_score(y, s))

    def body(model, eps):
        ctx.measure(
            "AUC",
            model,
            eps,
            lambda seed: _call(fn, y, s, epsilon=eps, model=model, bounds=(0.0, 1.0), rng=seed),
            _scalar_reader,
            exact,
            note="breast cancer, n=569",
        )

    ctx.each_model("auc", TRUST_MODELS, body, plan={"n": y.size, "n_pos": int(y.sum()), "bounds": (0.0, 1.0)})


def _roc_parts(out):
    if isinstance(out, tuple):
        fpr, tpr = out[0], out[1]
    else:
        fpr, tpr = out.fpr, out.tpr
    fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    order = np.lexsort((tpr, fpr))
    return fpr[order], tpr[order]


def scenario_auc_scale(ctx: _Context) -> None:
    """``privstats.auc`` of a calibrated synthetic score for many users (where the local model pays off)."""
    fn = _public("auc")
    from sklearn.metrics import roc_auc_score

    y, s = ctx.data("scores")
    exact = float(roc_auc_score(y, s))

    def body(model, eps):
        ctx.measure(
            "AUC (synthetic scores)",
            model,
            eps,
            lambda seed: _call(fn, y, s, epsilon=eps, model=model, bounds=(0.0, 1.0), rng=seed),
            _scalar_reader,
            exact,
            note=f"calibrated Beta(2,5) scores, n={y.size}",
        )

    ctx.each_model(
        "auc (synthetic)", TRUST_MODELS, body, plan={"n": y.size, "n_pos": int(y.sum()), "bounds": (0.0, 1.0)}
    )


def hosmer_lemeshow_exact(y, p, groups: int = 10) -> float:
    """Non-private Hosmer–Lemeshow H over groups (t_{q-1}, t_q] cut at the exact q/groups quantiles of p."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    cuts = np.quantile(p, np.arange(1, groups) / groups, method="inverted_cdf")
    g = np.searchsorted(cuts, p, side="left")
    e1, e0 = np.bincount(g, p, groups), np.bincount(g, 1 - p, groups)
    o1, o0 = np.bincount(g, y, groups), np.bincount(g, 1 - y, groups)
    return float(np.sum((o1 - e1) ** 2 / e1 + (o0 - e0) ** 2 / e0))


def scenario_hosmer_lemeshow(ctx: _Context) -> None:
    """``privstats.hosmer_lemeshow`` calibration statistic of the calibrated synthetic score."""
    fn = _public("hosmer_lemeshow")
    y, p = ctx.data("scores")
    exact = hosmer_lemeshow_exact(y, p)

    def body(model, eps):
        if model != "central":
            raise _Unsupported("hosmer_lemeshow takes no model argument (central only)")
        ctx.measure(
            "Hosmer–Lemeshow H",
            model,
            eps,
            lambda seed: _call(fn, y, p, epsilon=eps, rng=seed),
            _scalar_reader,
            exact,
            extra=lambda est: {"note": f"10 groups; private p-value {est.details['p_value']:.3g}"},
        )

    ctx.each_model("hosmer_lemeshow", ["central"], body, plan={"n": y.size})


def scenario_roc(ctx: _Context) -> None:
    """``privstats.roc_curve`` on breast cancer: the area under the private curve vs the exact AUC."""
    fn = _public("roc_curve")
    from sklearn.metrics import roc_auc_score, roc_curve

    y, s = ctx.data("breast_cancer")
    exact = float(roc_auc_score(y, s))
    fpr0, tpr0, _ = roc_curve(y, s)
    curves = ctx.result.curves.setdefault("roc", {"exact": (fpr0, tpr0), "private": {}})

    def read(out):
        fpr, tpr = _roc_parts(out)
        return float(np.trapezoid(tpr, fpr)), None

    def body(model, eps):
        out = ctx.measure(
            "ROC curve AUC",
            model,
            eps,
            lambda seed: _call(fn, y, s, epsilon=eps, model=model, bounds=(0.0, 1.0), rng=seed),
            read,
            exact,
            note="area under the private curve; breast cancer",
        )
        if out is not None and eps == _headline(ctx):
            curves["private"][model] = _roc_parts(out)

    ctx.each_model(
        "roc_curve", TRUST_MODELS, body, plan={"n": y.size, "n_pos": int(y.sum()), "bounds": (0.0, 1.0)}
    )


def scenario_kendall(ctx: _Context) -> None:
    """``privstats.kendall_tau`` (tau-b) of an ordinal 6×6 pair."""
    fn = _public("kendall_tau")
    from scipy import stats

    a, b = ctx.data("ordinal")
    exact = float(stats.kendalltau(a, b).statistic)
    bounds = (0.0, float(ORDINAL_LEVELS))  # ratings 0..5, one bin per rating

    def body(model, eps):
        ctx.measure(
            "Kendall's tau-b",
            model,
            eps,
            lambda seed: _call(
                fn, a, b, epsilon=eps, model=model, bounds=bounds, bins=ORDINAL_LEVELS, rng=seed
            ),
            _scalar_reader,
            exact,
            note=f"ordinal {ORDINAL_LEVELS}x{ORDINAL_LEVELS}",
        )

    ctx.each_model("kendall_tau", TRUST_MODELS, body, plan={"n": a.size, "bounds": bounds})


def scenario_gini(ctx: _Context) -> None:
    """``privstats.gini_mean_difference`` of incomes."""
    fn = _public("gini_mean_difference")
    x = ctx.data("incomes")
    exact = gini_mean_difference_exact(x)

    def body(model, eps):
        ctx.measure(
            "Gini mean difference",
            model,
            eps,
            lambda seed: _call(fn, x, epsilon=eps, model=model, bounds=INCOME_BOUNDS, rng=seed),
            _scalar_reader,
            exact,
            note="incomes",
        )

    ctx.each_model("gini_mean_difference", TRUST_MODELS, body, plan={"n": x.size, "bounds": INCOME_BOUNDS})


def gini_coefficient_exact(x) -> float:
    """Σ_{i,j}|x_i − x_j| / (2 n² mean) = GMD·(n − 1)/(2n·mean)."""
    x = np.asarray(x, dtype=float)
    return gini_mean_difference_exact(x) * (x.size - 1) / (2 * x.size * x.mean())


def scenario_gini_coefficient(ctx: _Context) -> None:
    """``privstats.gini_coefficient`` of incomes (part of ε pays for the mean)."""
    fn = _public("gini_coefficient")
    x = ctx.data("incomes")
    exact = gini_coefficient_exact(x)

    def body(model, eps):
        ctx.measure(
            "Gini coefficient",
            model,
            eps,
            lambda seed: _call(fn, x, epsilon=eps, model=model, bounds=INCOME_BOUNDS, rng=seed),
            _scalar_reader,
            exact,
            note="incomes",
        )

    ctx.each_model("gini_coefficient", TRUST_MODELS, body, plan={"n": x.size, "bounds": INCOME_BOUNDS})


def collision_probability_exact(values, d: int) -> float:
    """Σ_{i<j} I[x_i = x_j] / C(n, 2) from the histogram."""
    c = np.bincount(values, minlength=d).astype(float)
    n = c.sum()
    return float(np.sum(c * (c - 1)) / (n * (n - 1)))


def scenario_collision(ctx: _Context) -> None:
    """``privstats.collision_probability`` (Rényi-2) of the Zipf sample."""
    fn = _public("collision_probability")
    values = ctx.data("zipf")
    d = ctx.cfg.domain
    exact = collision_probability_exact(values, d)

    def body(model, eps):
        ctx.measure(
            "collision probability",
            model,
            eps,
            lambda seed: _call(fn, values, epsilon=eps, model=model, domain_size=d, rng=seed),
            _scalar_reader,
            exact,
            note=f"Zipf, d={d}",
        )

    ctx.each_model("collision_probability", TRUST_MODELS, body, plan={"n": values.size, "domain_size": d})


def scenario_summarization(ctx: _Context) -> None:
    """``privstats.summarize``: a private training summary from 5 digit owners vs non-private greedy."""
    fn = _public("summarize")
    owners, target = ctx.data("digits")
    size = ctx.cfg.summary_size
    try:
        greedy = _call(fn, owners, target, size=size, method="greedy", rng=ctx.rng_seed("greedy"))
    except Exception as exc:
        raise _Unsupported(f"summarize(method='greedy') failed: {type(exc).__name__}: {exc}") from None
    exact = float(greedy.mmd2)
    uniform = _call(fn, owners, target, size=size, method="uniform", rng=ctx.rng_seed("uniform"))

    def read(res):
        return float(res.mmd2), None

    def extra(res):
        g = (getattr(res, "privacy", None) or {}).get("target")
        sketch = {"gaussian": "Gaussian target sketch", "mwem": "MWEM"}.get(
            res.params.get("sketch"), "sketch"
        )
        protocol = f"private auction + {sketch}"
        if res.method in ("uniform", "uniform-pool"):
            protocol = "no sketch (the planner's fallback): greedy on a uniform pool, nothing spent"
        out = {
            "protocol": protocol,
            "accessed": int(res.accessed),
            "note": (
                f"digits, 5 owners, {size} points; exact = non-private greedy; "
                f"uniform sampling {uniform.mmd2:.3g}; curator saw {int(res.accessed)} raw points"
            ),
        }
        if g is not None:
            eps_spent, delta = float(g.epsilon), float(getattr(g, "delta", 0.0))
            out.update(
                epsilon_spent=eps_spent,
                delta=delta,
                privacy=f"{eps_spent:g}" + (f" ({delta:.0e})" if delta else "") + "/party",
            )
        return out

    def body(model, eps):
        ctx.caveat(
            "summarization is listed as 'secure', but its curator is trusted with every point it fetches: "
            "the private auction limits which raw points it sees (the count is in the row's note), "
            "it does not hide them"
        )
        ctx.caveat(
            "summarization's auction guarantee is heuristic (the paper's Theorem 6 covers only the "
            "'asked' event); its ε column is the guarantee of the buyer's target set"
        )
        ctx.measure(
            "summary MMD² (vs greedy)",
            model,
            eps,
            lambda seed: _call(
                fn, owners, target, size=size, epsilon=eps, delta=SHUFFLE_DELTA, method="private", rng=seed
            ),
            read,
            exact,
            extra=extra,
        )

    # data owners, a curator and a consumer, none trusted with another's data: listed as "secure"
    ctx.each_model("summarize", ["secure"], body)


SCENARIOS: dict[str, Callable[[_Context], None]] = {
    "oracles": scenario_oracles,
    "frequencies": scenario_frequencies,
    "range_counts": scenario_range_counts,
    "ecdf": scenario_ecdf,
    "quantiles": scenario_quantiles,
    "auc": scenario_auc,
    "auc_scale": scenario_auc_scale,
    "roc": scenario_roc,
    "hosmer_lemeshow": scenario_hosmer_lemeshow,
    "kendall": scenario_kendall,
    "gini": scenario_gini,
    "gini_coefficient": scenario_gini_coefficient,
    "collision": scenario_collision,
    "summarization": scenario_summarization,
}


def collect(
    size: str = "full",
    *,
    seed: int = 2024,
    epsilons=None,
    scenarios=None,
    log: Callable[[str], None] | None = None,
    progress: bool = False,
) -> DemoResult:
    """Run the scenarios and return their rows (no printing, no files)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    names = list(SCENARIOS) if scenarios is None else list(scenarios)
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"scenarios must be among {list(SCENARIOS)}, got {unknown}")
    log = log or (lambda text: None)
    ctx = _Context(size, seed, epsilons, log)
    ctx.caveat(
        "every row is a simulation: data and noise come from seeded numpy generators so that the run is "
        "reproducible; deployments pass rng=None (the OS CSPRNG and exact integer samplers)"
    )
    ctx.caveat(
        "each row is one run: |error| of a few standard errors is expected, and rows without a standard "
        "error have none the protocol can derive"
    )
    ctx.caveat(
        f"shuffle-model rows spend (ε, δ = {SHUFFLE_DELTA:g}); their ε is that of the shuffled "
        "messages, each client randomizes with a larger local ε₀"
    )
    t0, c0 = time.perf_counter(), time.process_time()
    bar = _progress(len(names)) if progress else None
    try:
        for name in names:
            if bar is not None:
                bar.update(name)
            try:
                SCENARIOS[name](ctx)
            except _Unsupported as exc:
                ctx.result.unavailable.append(f"{name}: {exc}")
                ctx.log(f"note: skipping {name}: {exc}")
            except ImportError as exc:
                ctx.note(f"skipping {name}: needs an optional dependency ({exc})")
            except Exception as exc:  # a landing protocol's bug must not hide the other scenarios
                ctx.note(f"scenario {name} failed: {type(exc).__name__}: {exc}")
    finally:
        if bar is not None:
            bar.close()
    ctx.result.wall_time_s = time.perf_counter() - t0
    ctx.result.cpu_time_s = time.process_time() - c0
    return ctx.result


class _progress:
    """A rich progress bar over scenarios (only used on a terminal)."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

        self._p = Progress(
            SpinnerColumn(),
            *Progress.get_default_columns(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._p.start()
        self._task = self._p.add_task("demo", total=total)
        self._started = False

    def update(self, name: str) -> None:
        if self._started:
            self._p.advance(self._task)
        self._started = True
        self._p.update(self._task, description=f"demo: {name}")

    def close(self) -> None:
        self._p.stop()


# ----------------------------------------------------------------------------- report
def write_report(result: DemoResult, out_dir: Path) -> Path:
    """Markdown report with PNG figures in ``out_dir``; returns the Markdown file's path."""
    from privstats.plotting import matplotlib_available, plot_ecdf, plot_error_vs_epsilon, plot_roc
    from privstats.report import markdown_table, write_markdown_report

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, str]] = []
    if matplotlib_available():
        ecdf = result.curves.get("ecdf")
        if ecdf and ecdf["private"]:
            plot_ecdf(
                out_dir / "ecdf.png",
                ecdf["grid"],
                exact=ecdf["exact"],
                private=ecdf["private"],
                bands=ecdf["bands"],
                title=f"Incomes ECDF: private (ε={_headline_of(result):g}) vs exact",
                xlabel="income (thousands)",
            )
            figures.append(("Private vs exact ECDF with 95% confidence band", "ecdf.png"))
        roc = result.curves.get("roc")
        if roc and roc["private"]:
            plot_roc(
                out_dir / "roc.png",
                exact=roc["exact"],
                private=roc["private"],
                title=f"Breast cancer ROC: private (ε={_headline_of(result):g}) vs exact",
            )
            figures.append(("Private vs exact ROC curve", "roc.png"))
        scalar_rows = [r for r in result.rows if r["abs_error"] is not None]
        if scalar_rows:
            plot_error_vs_epsilon(out_dir / "error_vs_epsilon.png", scalar_rows)
            figures.append(("Absolute error vs ε per trust model", "error_vs_epsilon.png"))
        if result.oracle_rows:
            plot_error_vs_epsilon(
                out_dir / "oracles_error_vs_epsilon.png",
                [
                    {
                        "statistic": "frequency oracles (Zipf)",
                        "model": r["oracle"],
                        "epsilon": r["epsilon"],
                        "abs_error": r["max_abs_error"],
                        "stderr": r["exact_std"],
                    }
                    for r in result.oracle_rows
                ],
                title="frequency oracles on Zipf data: max |error| and exact std vs ε",
                ylabel="relative frequency: max |error| (markers), exact std (dashed)",
                legend_title="oracle",
            )
            figures.append(
                ("Frequency oracles: max abs error and exact std vs ε", "oracles_error_vs_epsilon.png")
            )
    else:
        result.notes.append("figures skipped: matplotlib is not installed (pip install 'privstats[plot]')")
    result.figures = [str(out_dir / f) for _, f in figures]

    cfg = SIZES[result.size]
    sections = [
        (
            "Run",
            f"size `{result.size}`, seed {result.seed}, ε ∈ {list(result.epsilons)}, "
            f"statistics computed in {result.wall_time_s:.1f} s ({result.cpu_time_s:.1f} s of CPU). "
            f"Shuffle-model rows use δ = {SHUFFLE_DELTA:g}.\n\n"
            "Data (all generated or bundled, nothing downloaded): "
            f"Zipf(1.1) over d = {cfg.domain} items for n = {cfg.n_freq} users; "
            f"log-normal incomes for n = {cfg.n_cont}, public bounds {INCOME_BOUNDS}; "
            "scikit-learn's breast-cancer data (569 patients) scored by a logistic regression; "
            f"a calibrated synthetic score (p ~ Beta(2,5), y ~ Bernoulli(p)) for n = {cfg.n_scores}; "
            f"an ordinal {ORDINAL_LEVELS}×{ORDINAL_LEVELS} pair for n = {cfg.n_pairs}; "
            "scikit-learn's 8×8 digits split across 5 owners by digit pairs.",
        ),
        (
            "Frequency oracles (local model, Zipf data)",
            "Errors are in relative frequency (count / n); *exact std* is the square root of the oracle's "
            "exact variance averaged over the domain.\n\n"
            + markdown_table(result.oracle_rows, ORACLE_COLUMNS),
        ),
        (
            "Statistics under each trust model",
            "Exact values come from numpy / SciPy / scikit-learn (non-private). Rows with vector outputs "
            "show one scalar; the note gives the error over the whole output. *planner's pick*: the trust model "
            "`privstats.plan` predicts most accurate from the public parameters (*best*), and the most "
            "accurate one without a trusted curator (*best w/o curator*).\n\n"
            + markdown_table(result.rows, [*ROW_COLUMNS, ("note", "note")]),
        ),
        (
            "Figures",
            "\n\n".join(f"### {caption}\n\n![{caption}]({name})" for caption, name in figures)
            or "No figures (matplotlib missing or no curve-producing statistic available).",
        ),
        ("Not available in this build", "\n".join(f"- {u}" for u in result.unavailable) or "Everything ran."),
        ("Notes", "\n".join(f"- {n}" for n in result.notes) or "None."),
    ]
    path = write_markdown_report(out_dir / "report.md", title="privstats demo report", sections=sections)
    result.report = str(path)
    return path


def _headline_of(result: DemoResult) -> float:
    return HEADLINE_EPSILON if HEADLINE_EPSILON in result.epsilons else result.epsilons[0]


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None  # strict JSON has no NaN / Infinity
    return x


def run_demo(
    size: str = "full",
    *,
    out: str | Path | None = None,
    seed: int = 2024,
    epsilons=None,
    scenarios=None,
    as_json: bool = False,
    stream: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The ``privstats demo`` command: run, print the tables, write the report, print its path."""
    from privstats.report import print_table, use_rich

    stream = sys.stdout if stream is None else stream
    err = sys.stderr if err is None else err

    def log(text: str) -> None:
        print(text, file=err, flush=True)

    t0, c0 = time.perf_counter(), time.process_time()
    result = collect(
        size,
        seed=seed,
        epsilons=epsilons,
        scenarios=scenarios,
        log=log,
        progress=use_rich(err) and not as_json,
    )
    out_dir = Path(out) if out is not None else Path.cwd() / "privstats-report"
    write_report(result, out_dir)
    total = time.perf_counter() - t0
    if as_json:
        json.dump(
            _jsonable({**result.to_dict(), "total_time_s": total, "total_cpu_s": time.process_time() - c0}),
            stream,
            indent=1,
            allow_nan=False,
        )
        print(file=stream)
        return 0
    if result.oracle_rows:
        print_table(
            "Frequency oracles on Zipf data (local model; errors in relative frequency)",
            result.oracle_rows,
            ORACLE_COLUMNS,
            stream,
        )
    headline = _headline_of(result)
    rows = [r for r in result.rows if r["epsilon"] == headline] or result.rows
    if rows:
        print_table(
            f"Statistics under each trust model (ε = {headline:g}; all ε in the report)",
            rows,
            ROW_COLUMNS,
            stream,
        )
    if result.unavailable:
        print("\nNot available in this build:", file=stream)
        for u in result.unavailable:
            print(f"  - {u}", file=stream)
    print(
        f"\nDemo finished in {total:.1f} s (statistics {result.wall_time_s:.1f} s, report and figures "
        f"{total - result.wall_time_s:.1f} s; {time.process_time() - c0:.1f} s of CPU).",
        file=stream,
    )
    print(f"Report: {result.report}", file=stream)
    return 0
