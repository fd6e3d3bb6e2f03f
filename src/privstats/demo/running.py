"""Running one private statistic per trust model and recording its row (the demo's context)."""

from __future__ import annotations

import inspect
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from privstats.demo.config import HEADLINE_EPSILON, HEADLINE_ONLY, SHUFFLE_DELTA, SIZES
from privstats.demo.data import demo_data
from privstats.estimate import Estimate


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


def _shows_clipped(est: Estimate | None, private: float | None) -> bool:
    """The row shows the Estimate's own scalar value, and that value was clipped into range."""
    if est is None or private is None or np.ndim(est.value) or not est.clipped:
        return False
    return abs(float(est.value) - private) <= 1e-12 * max(1.0, abs(private))


def _headline(ctx: _Context) -> float:
    return HEADLINE_EPSILON if HEADLINE_EPSILON in ctx.epsilons else ctx.epsilons[0]


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
        """Every field in order but the figures' ``curves``; ``oracle_rows`` as ``oracles``."""
        out = {_KEYS.get(f.name, f.name): getattr(self, f.name) for f in fields(self) if f.name != "curves"}
        out["epsilons"] = list(self.epsilons)
        return out


_KEYS = {"oracle_rows": "oracles"}  # DemoResult's fields named otherwise in its JSON


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
        row["clipped"] = _shows_clipped(est, private)
        if row["clipped"] and est is not None:
            row["protocol"] = f"{row['protocol']} †"  # the value was clipped into the statistic's range
            raw = f"† clipped into the range (raw {_float(est.unclipped):.4g})"
            row["note"] = f"{row['note']}; {raw}" if row["note"] else raw
            self.caveat(
                "† marks a value clipped into the statistic's range; its raw value is in the row's note"
            )
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
