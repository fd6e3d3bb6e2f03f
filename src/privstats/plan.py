"""The planner: predicted error and cost of every (trust model, protocol, parameters) for a statistic.

Each protocol states once, next to its code, the trust model it needs, its predicted
variance (and bias, where quantisation or clipping causes one) and its communication
cost, by registering a predictor with :func:`register`.  :func:`plan` asks every
registered predictor of a statistic for its prediction from *public* parameters only
(n, ε, δ, bounds, options) and returns them sorted by predicted error; ``method="auto"``
in the statistics uses the same predictors, so no statistic keeps its own copy of the
choice.

Layering: this module sits below ``privstats.stats`` (which imports it) and above the
protocol layers; it imports the statistics lazily, only to load their registrations.

>>> import privstats
>>> p = privstats.plan("auc", n=100_000, epsilon=1.0, bounds=(0, 1))
>>> p.best.model
'central'
>>> [o.model for o in p][-1] in ("local", "secure")
True
"""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_MODEL",
    "SUPPORTED",
    "TRUST",
    "Option",
    "Plan",
    "UselessResultWarning",
    "check_model",
    "plan",
    "register",
    "statistic_range",
    "warn_if_useless",
]

DEFAULT_MODEL = "central"

TRUST = {
    "central": "a curator that sees the raw data",
    "secure": "at least one of two servers is honest (computational)",
    "shuffle": "a shuffler that only anonymises",
    "local": "nobody",
}

# statistic -> models that can compute it (the first is the documented default when it is supported)
SUPPORTED: dict[str, tuple[str, ...]] = {
    "auc": ("central", "secure", "local"),
    "kendall_tau": ("central", "secure", "local"),
    "gini_mean_difference": ("central", "secure", "local"),
    "gini_coefficient": ("central", "secure", "local"),
    "collision_probability": ("central", "secure", "local"),
    "ustatistic": ("central", "secure", "local"),
    "ecdf": ("central", "secure", "local"),
    "roc_curve": ("central", "secure", "local"),
    "quantiles": ("central", "secure", "shuffle", "local"),
    "hosmer_lemeshow": ("central", "secure"),
    "frequencies": ("central", "shuffle", "local"),
    "range_counts": ("central", "shuffle", "local"),
    "heavy_hitters": ("central", "shuffle", "local"),
}

# modules whose import registers the statistics' predictors
_MODULES = {
    "auc": "privstats.stats.pairwise",
    "kendall_tau": "privstats.stats.pairwise",
    "gini_mean_difference": "privstats.stats.pairwise",
    "gini_coefficient": "privstats.stats.pairwise",
    "collision_probability": "privstats.stats.pairwise",
    "ustatistic": "privstats.stats.pairwise",
    "ecdf": "privstats.stats.distribution",
    "quantiles": "privstats.stats.distribution",
    "roc_curve": "privstats.stats.distribution",
    "hosmer_lemeshow": "privstats.stats.distribution",
    "frequencies": "privstats.stats.frequency",
    "range_counts": "privstats.stats.frequency",
    "heavy_hitters": "privstats.stats.frequency",
}


class UselessResultWarning(UserWarning):
    """The predicted standard error is larger than the statistic's whole range."""


def check_model(statistic: str, model: Any) -> str:
    """``model`` if ``statistic`` supports it, else the one ValueError every statistic raises.

    >>> check_model("hosmer_lemeshow", "local")
    Traceback (most recent call last):
    ...
    ValueError: hosmer_lemeshow supports model in ('central', 'secure'); got model='local'
    """
    models = SUPPORTED[statistic]
    if model not in models:
        raise ValueError(f"{statistic} supports model in {models}; got model={model!r}")
    return model


def statistic_range(statistic: str, *, n: int | None = None, bounds=None) -> tuple[float, float] | None:
    """The range of values a statistic can take (None where it is unbounded or unknown)."""
    if statistic in ("auc", "roc_curve", "ecdf", "gini_coefficient", "collision_probability"):
        return (0.0, 1.0)
    if statistic == "kendall_tau":
        return (-1.0, 1.0)
    if statistic == "gini_mean_difference" and bounds is not None:
        return (0.0, float(bounds[1]) - float(bounds[0]))
    if statistic == "quantiles" and bounds is not None:
        return (float(bounds[0]), float(bounds[1]))
    if statistic in ("frequencies", "range_counts", "heavy_hitters") and n is not None:
        return (0.0, float(n))
    if statistic == "hosmer_lemeshow":
        return (0.0, 100.0)  # not bounded; a stderr above ~100 makes any calibration verdict noise
    return None


# the columns of Option.as_row before its parameters
ROW_COLUMNS = ("model", "protocol", "stderr", "bias", "bits_per_user", "messages_per_user", "delta", "trust")


@dataclass(frozen=True)
class Option:
    """One way to compute the statistic: its trust model, protocol, parameters and predicted error."""

    model: str
    protocol: str
    params: dict
    stderr: float  # predicted root mean squared error (bias included)
    bias: float = 0.0  # predicted bias part of ``stderr`` (quantisation, clipping)
    bits_per_user: float = 0.0  # NaN where the cost is not a fixed number of bits (2PC sessions)
    messages_per_user: float = 0.0
    delta: float = 0.0
    note: str = ""
    # where the error depends on the data's shape within the bounds (a quantisation bias), ``stderr``
    # is the worst case over the stated family and ``best_case`` the best (bias 0); None: one number
    best_case: float | None = None
    # (best, worst) predicted RMSE over data shapes within the bounds, where one number cannot be right
    # (a quantile's error in value units depends on the data near it); ``stderr`` is then the uniform case
    stderr_range: tuple[float, float] | None = None

    @property
    def trust(self) -> str:
        return TRUST[self.model]

    def as_row(self) -> dict:
        """The option as a table row: the ``ROW_COLUMNS``, then the parameters as text."""
        row = {k: getattr(self, k) for k in ROW_COLUMNS}
        if self.stderr_range is not None:
            row["stderr_range"] = list(self.stderr_range)
        if self.best_case is not None:
            row["best_case"] = self.best_case
        return {**row, "params": ", ".join(f"{k}={v}" for k, v in self.params.items())}


Predictor = Callable[..., "Option | list[Option] | None"]
_P = TypeVar("_P", bound=Predictor)  # register() returns the predictor unchanged, with its own type
_REGISTRY: dict[str, list[tuple[str, str, Predictor]]] = {}


def register(statistic: str, model: str, protocol: str) -> Callable[[_P], _P]:
    """Register the predictor of ``protocol`` (trust ``model``) for ``statistic``.

    The predictor takes ``(n, epsilon, delta, bounds, **options)`` (public parameters only) and
    returns an :class:`Option` (or several), or ``None`` when the protocol cannot run there.
    """
    if model not in TRUST:
        raise ValueError(f"model must be one of {tuple(TRUST)}, got {model!r}")

    def deco(fn: _P) -> _P:
        entries = _REGISTRY.setdefault(statistic, [])
        entries[:] = [e for e in entries if (e[0], e[1]) != (model, protocol)] + [(model, protocol, fn)]
        return fn

    return deco


class Plan(list):
    """Options sorted by predicted error (``best`` first), with the warnings of the plan."""

    def __init__(
        self,
        statistic: str,
        options: list[Option],
        *,
        n: int,
        epsilon: float,
        delta: float,
        range_: tuple[float, float] | None,
    ):
        super().__init__(sorted(options, key=lambda o: (o.stderr, o.bits_per_user)))
        self.statistic, self.n, self.epsilon, self.delta, self.range = statistic, n, epsilon, delta, range_

    @property
    def best(self) -> Option:
        if not self:
            raise ValueError(
                f"no protocol can compute {self.statistic} with these parameters "
                f"(n={self.n}, epsilon={self.epsilon:g}, delta={self.delta:g})"
            )
        return self[0]

    def for_model(self, model: str) -> Plan:
        return Plan(
            self.statistic,
            [o for o in self if o.model == model],
            n=self.n,
            epsilon=self.epsilon,
            delta=self.delta,
            range_=self.range,
        )

    def table(self) -> str:
        """A plain-text table, one row per option."""
        head = ("model", "protocol", "pred. stderr", "bias", "bits/user", "trust needed", "parameters")
        rows = [
            (
                o.model,
                o.protocol,
                f"{o.stderr:.4g}",
                f"{o.bias:.2g}",
                ("-" if math.isnan(o.bits_per_user) else f"{o.bits_per_user:.4g}"),
                o.trust,
                ", ".join(f"{k}={v}" for k, v in o.params.items()),
            )
            for o in self
        ]
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        lines = [
            "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for o in self:
            if o.stderr_range is not None:
                lo, hi = o.stderr_range
                # with a best case too (local Kendall's tau) the number is at the option's stated shape
                at = "uniform data" if o.best_case is None else "the stated data shape (see the note)"
                lines.append(f"{o.model}/{o.protocol}: stderr at {at}; over data shapes {lo:.3g} to {hi:.3g}")
            elif o.best_case is not None:
                lines.append(
                    f"{o.model}/{o.protocol}: stderr at the stated data shape (bias {o.bias:.2g} included); "
                    f"best case {o.best_case:.3g}"
                )
        return "\n".join(lines)

    def useless(self, model: str | None = None) -> str | None:
        """A message when every option (of ``model``) predicts a stderr above the statistic's range."""
        opts = [o for o in self if model is None or o.model == model]
        if self.range is None or not opts:
            return None
        width = self.range[1] - self.range[0]
        best = min(opts, key=lambda o: o.stderr)
        if best.stderr <= width:
            return None
        # noise-dominated stderr scales like 1/(n ε) (central) to 1/(√n ε) (local): report both needs
        factor = best.stderr / (0.5 * width)
        need_eps = self.epsilon * factor
        need_n = self.n * (factor if best.model in ("central", "secure") else factor**2)
        return (
            f"{self.statistic} ({best.model}, {best.protocol}): predicted stderr {best.stderr:.3g} is larger "
            f"than the statistic's range {width:g}; the result would be noise. Roughly n >= {need_n:.3g} "
            f"or epsilon >= {need_eps:.3g} is needed for a stderr of half the range."
        )


def _load(statistic: str) -> None:
    mod = _MODULES.get(statistic)
    if mod is not None:
        importlib.import_module(mod)


def plan(
    statistic: str,
    *,
    n: int,
    epsilon: float,
    delta: float = 0.0,
    bounds=None,
    model: str | None = None,
    warn: bool = True,
    **options,
) -> Plan:
    """Every applicable (trust model, protocol, parameters) for ``statistic`` with its predicted error.

    Public parameters only: ``n`` (users; for AUC/ROC ``n_pos`` may be passed as an option,
    default n/2), ``epsilon``, ``delta`` (0: pure DP protocols only; δ is spent only when
    given), ``bounds``, and statistic options (``domain``, ``q``, ``groups`` ...).  Returns a
    :class:`Plan` (a list of :class:`Option`, smallest predicted stderr first, bias included);
    ``model=`` keeps one trust model.  Warns (:class:`UselessResultWarning`) when the
    best predicted stderr exceeds the statistic's range, with the n or ε needed.

    >>> p = plan("frequencies", n=10_000, epsilon=1.0, domain=16)
    >>> [o.model for o in p]
    ['central', 'local']
    >>> print(p.table().splitlines()[0].split()[:3])
    ['model', 'protocol', 'pred.']
    """
    if not isinstance(statistic, str) or statistic not in SUPPORTED:
        raise ValueError(f"statistic must be one of {sorted(SUPPORTED)}, got {statistic!r}")
    from privstats.plan_checks import check_plan_args

    n, epsilon, delta, bounds, options = check_plan_args(statistic, n, epsilon, delta, bounds, options)
    if model is not None:
        check_model(statistic, model)
        from privstats.validation import check_epsilon

        check_epsilon(epsilon, model=model)  # local/shuffle: e^ε must fit a float
    _load(statistic)
    out: list[Option] = []
    for m, proto, fn in _REGISTRY.get(statistic, []):
        if (model is not None and m != model) or not _can_run(m, epsilon):
            continue
        got = _predict(fn, statistic, m, proto, n=n, epsilon=epsilon, delta=delta, bounds=bounds, **options)
        if got is None:
            continue
        out.extend(got if isinstance(got, list) else [got])
    out = [o for o in out if math.isfinite(o.stderr) and o.stderr >= 0 and math.isfinite(o.bias)]
    result = Plan(
        statistic,
        out,
        n=n,
        epsilon=epsilon,
        delta=delta,
        range_=statistic_range(statistic, n=n, bounds=bounds),
    )
    if warn:
        msg = result.useless()
        if msg:
            warnings.warn(msg, UselessResultWarning, stacklevel=2)
    return result


def _can_run(model: str, epsilon: float) -> bool:
    """Local and shuffle randomizers work with e^ε, which overflows a float above ε ≈ 709."""
    from privstats.validation import RANDOMIZER_EPSILON_MAX

    return model not in ("local", "shuffle") or epsilon <= RANDOMIZER_EPSILON_MAX


def _predict(fn: Predictor, statistic: str, model: str, protocol: str, **kwargs):
    """One predictor's option(s); arithmetic failures become a ValueError naming the parameters."""
    try:
        return fn(**kwargs)
    except (ArithmeticError, MemoryError, IndexError) as exc:
        given = ", ".join(f"{k}={v!r:.40}" for k, v in kwargs.items() if v is not None)
        raise ValueError(
            f"plan({statistic!r}): the {model}/{protocol} prediction cannot be evaluated for {given} "
            f"({type(exc).__name__}: {exc}); one of these parameters is out of its usable range"
        ) from None


def warn_if_useless(
    statistic: str,
    est_stderr: float | None,
    *,
    n: int,
    epsilon: float,
    model: str,
    protocol: str,
    bounds=None,
    stacklevel: int = 4,
) -> None:
    """Warn when an estimate's stderr exceeds its statistic's range (with the n or ε needed)."""
    rng_ = statistic_range(statistic, n=n, bounds=bounds)
    if est_stderr is None or rng_ is None or not math.isfinite(float(est_stderr)):
        return
    width = rng_[1] - rng_[0]
    if est_stderr > width:
        o = Option(model, protocol, {}, float(est_stderr))
        msg = Plan(statistic, [o], n=n, epsilon=epsilon, delta=0.0, range_=rng_).useless()
        if msg:
            warnings.warn(msg, UselessResultWarning, stacklevel=stacklevel)
