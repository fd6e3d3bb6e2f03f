"""Protocol units: one per (statistic, trust model, protocol), registered once, chosen by the planner.

A :class:`Unit` states in one place what a protocol is for a statistic: its trust ``model``,
its ``protocol`` name (as it appears in ``Estimate.protocol`` and in :func:`privstats.plan`),
the ``method`` name that selects it, the ``options`` it takes, its ``predictor`` from public
parameters (registered with the planner) and its ``run`` (validated data → :class:`Release`).
A public statistic reads::

    validate the common arguments and the data      (the public function)
    unit = choose(statistic, model, method, ...)     (a named method, else the planner / the default)
    release = unit.run(call)                         (the protocol: data → value, variance, params)
    return finish(release, call, ...)                (range, interval law, clipping, guarantee: once)

Adding a protocol means writing one unit (a predictor and a run) and registering it with
:func:`unit`; the planner and ``method="auto"`` then see it.

>>> [u.protocol for u in units_for("kendall_tau", "secure")]
['ustat-pairs', 'ustat-all-pairs']
>>> choose("kendall_tau", "central", "auto").method
'exact'
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from privstats.estimate import Estimate, constrain
from privstats.plan import _MODULES, register, warn_if_useless
from privstats.privacy.guarantees import ApproxDP, PureDP

__all__ = ["Call", "Release", "Unit", "choose", "finish", "unit", "units_for"]


class Call(SimpleNamespace):
    """One call of a statistic after validation: ``statistic``, ``model``, ``method``, ``epsilon``,
    ``delta``, ``rng``, ``n``, ``postprocess``, ``bounds`` and the statistic's own data and options."""

    @classmethod
    def of(cls, statistic: str, args: dict, **more: Any) -> Call:
        """The call from the public function's validated arguments (its ``locals()``) and ``more``."""
        return cls(**{"bounds": None, "delta": 0.0, **args, **more, "statistic": statistic})


@dataclass
class Release:
    """What a unit's run returns: the raw value and its variance, with the protocol's parameters and
    costs (``protocol`` overrides the unit's name, e.g. ``+mean`` composites)."""

    value: Any
    var: float | None
    params: dict
    messages: float = 1.0
    bits: float | None = None
    delta: float = 0.0
    details: dict = field(default_factory=dict)
    protocol: str | None = None


Predictor = Callable[..., Any]
Run = Callable[[Call], Any]  # pairwise units return a Release; curve units their own tuple


@dataclass(frozen=True)
class Unit:
    """A protocol for a statistic under one trust model (see the module docstring)."""

    statistic: str
    model: str
    protocol: str
    method: str
    options: tuple[str, ...]
    predictor: Predictor | None
    run: Run


_UNITS: dict[str, list[Unit]] = {}

# modules whose import registers the units of a statistic family (the planner's map)
_FAMILIES = _MODULES


def unit(
    statistic: str,
    model: str,
    protocol: str,
    method: str,
    options: tuple[str, ...] = (),
    predictor: Predictor | None = None,
) -> Callable[[Run], Run]:
    """Register the decorated run as the unit of ``protocol`` (trust ``model``) for ``statistic``;
    its ``predictor`` (if any) is registered with the planner under the same names."""

    if not (isinstance(options, tuple) and all(isinstance(o, str) for o in options)):
        raise TypeError(f"options must be a tuple of option names, got {options!r}")
    if predictor is not None and not callable(predictor):
        raise TypeError(f"predictor must be callable, got {predictor!r}")

    def deco(run: Run) -> Run:
        entries = _UNITS.setdefault(statistic, [])
        entries[:] = [u for u in entries if (u.model, u.protocol) != (model, protocol)]
        entries.append(Unit(statistic, model, protocol, method, tuple(options), predictor, run))
        if predictor is not None:
            register(statistic, model, protocol)(predictor)
        return run

    return deco


def units_for(statistic: str, model: str | None = None) -> list[Unit]:
    """The registered units of ``statistic`` (of one ``model``), in registration order."""
    if statistic in _FAMILIES:
        importlib.import_module(_FAMILIES[statistic])
    return [u for u in _UNITS.get(statistic, []) if model is None or u.model == model]


def choose(statistic: str, model: str, method: str, auto: Callable[[], str] | None = None) -> Unit:
    """The unit a call runs: the one ``method`` names, else (``"auto"``) the method ``auto()`` picks
    (the planner), else the model's default: its first unit with a predictor (baselines have none)."""
    units = units_for(statistic, model)
    if not units:
        raise ValueError(f"{statistic} has no protocol for model={model!r}")
    if method == "auto" and auto is not None:
        method = auto()
    default = next((u for u in units if u.predictor is not None), units[0])
    return next((u for u in units if u.method == method), default)


def _guarantee(epsilon: float, delta: float):
    return ApproxDP(epsilon, delta) if delta > 0 else PureDP(epsilon)


def finish(release: Release, c: Call, *, protocol: str, support=None) -> Estimate:
    """The one finishing step of every scalar statistic: the :class:`Estimate` with its guarantee,
    a Laplace interval law for a central release, the useless-result warning, then the projection
    into ``support`` (the raw value stays in ``details["unbiased"]``)."""
    protocol = release.protocol or protocol
    var = release.var
    stderr = None if var is None else math.sqrt(max(float(var), 0.0))
    details = dict(release.details)
    if protocol == "central-exact" and stderr is not None and "ci_law" not in details:
        details["ci_law"] = {"laplace_scale": stderr / math.sqrt(2), "normal_sd": 0.0}
    est = Estimate(
        value=float(release.value),
        stderr=stderr,
        guarantee=_guarantee(c.epsilon, release.delta),
        model=c.model,
        protocol=protocol,
        params=release.params,
        n=c.n,
        messages_per_user=release.messages,
        bits_per_user=release.bits,
        neighbours="replace",
        details=details,
    )
    warn_if_useless(
        c.statistic, stderr, n=c.n, epsilon=c.epsilon, model=c.model, protocol=protocol, bounds=c.bounds
    )
    if support is None:
        return est
    return constrain(est, support[0], support[1], postprocess=c.postprocess)
