"""Protocol registry: rebuild a frequency oracle from the name and params in a report file.

Each entry maps a protocol ``name`` (the oracle's ``name`` attribute, written in the
report metadata) to a factory ``params -> oracle``.  A factory may be given as a
``"module:Class"`` string, imported on first use and called as ``Class(**params)``.
To add a protocol, add a line to ``_FACTORIES`` below (and small example params to
``_EXAMPLES``, which the engine tests iterate) or call :func:`register_protocol`.

>>> oracle = build_oracle("grr", {"domain_size": 8, "epsilon": 1.0})
>>> oracle
GRR(domain_size=8, epsilon=1.0)
>>> "grr" in available_protocols()
True
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "available_protocols",
    "build_oracle",
    "example_params",
    "register_protocol",
    "registered_protocols",
]

Factory = Callable[[Mapping[str, Any]], Any]


def _binary_rr(params: Mapping[str, Any]):
    from privstats.local.grr import BinaryRR

    extra = set(params) - {"domain_size", "epsilon"}
    if extra or params.get("domain_size", 2) != 2:
        raise ValueError(f"binary-rr takes only epsilon (and domain_size=2), got {dict(params)}")
    return BinaryRR(params["epsilon"])


def _hierarchical_histogram(params: Mapping[str, Any]):
    from privstats.local.hierarchy import HierarchicalHistogram

    # level_oracles is derived (what "auto" chose); build_oracle checks it is reproduced
    return HierarchicalHistogram(**{k: v for k, v in params.items() if k != "level_oracles"})


def _shuffled(name: str) -> Factory:
    def factory(params: Mapping[str, Any]):
        from privstats.engine.adapters import build_shuffled

        return build_shuffled(name, params)  # rows are messages; see privstats.engine.adapters

    return factory


# name -> factory or "module:Class" (called with **params).  Other engineers: add entries here.
_FACTORIES: dict[str, Factory | str] = {
    "grr": "privstats.local.grr:GRR",
    "binary-rr": _binary_rr,
    "oue": "privstats.local.unary:OUE",
    "olh": "privstats.local.olh:OLH",
    "hr": "privstats.local.hadamard:HadamardResponse",
    "hierarchical-histogram": _hierarchical_histogram,
    "shuffle-krr": _shuffled("shuffle-krr"),
    "shuffle-rappor": _shuffled("shuffle-rappor"),
    "shuffle-hadamard": _shuffled("shuffle-hadamard"),
    "shuffle-countmin": _shuffled("shuffle-countmin"),
    "shuffle-sum": _shuffled("shuffle-sum"),
}

# name -> small params for tests and docs (every registered protocol should have one)
_EXAMPLES: dict[str, dict] = {
    "grr": {"domain_size": 10, "epsilon": 1.0},
    "binary-rr": {"domain_size": 2, "epsilon": 0.5},
    "oue": {"domain_size": 13, "epsilon": 1.0},
    "olh": {"domain_size": 20, "epsilon": 2.0, "g": 8},
    "hr": {"domain_size": 9, "epsilon": 1.0},
    "hierarchical-histogram": {
        "domain_size": 40,
        "epsilon": 2.0,
        "branching": 4,
        "oracle": "auto",
        "split": "budget",
        "level_oracles": ["grr", "oue", "oue"],
    },
    # shuffle model (rows are messages).  Derived params (gamma, epsilon0, rho, ...) are set by hand, NOT
    # calibrated to the (epsilon, delta) shown: small message streams for the format tests only
    "shuffle-krr": {
        "domain_size": 10,
        "n": 1000,
        "epsilon": 1.0,
        "delta": 1e-6,
        "gamma": 0.5,
        "epsilon0": 2.3978952727983707,
    },
    "shuffle-rappor": {
        "domain_size": 13,
        "n": 1000,
        "epsilon": 1.0,
        "delta": 1e-6,
        "epsilon0": 2.0,
        "flip_probability": 0.2689414213699951,
    },
    "shuffle-hadamard": {
        "domain_size": 9,
        "n": 1000,
        "epsilon": 1.0,
        "delta": 1e-6,
        "k": 1,
        "rho": 3,
        "tau": 6,
        "b_prime": 16,
    },
    "shuffle-countmin": {
        "domain_size": 20,
        "n": 1000,
        "epsilon": 1.0,
        "delta": 1e-6,
        "tau": 3,
        "buckets": 16,
        "gamma": 0.0625,
        "seed": 5,
    },
    "shuffle-sum": {"n": 1000, "epsilon": 1.0, "delta": 1e-6, "blanket": 3, "gamma": 0.25, "inputs": "unit"},
}


def register_protocol(
    name: str, factory: Factory | str, *, example: dict | None = None, replace: bool = False
) -> None:
    """Register ``factory`` (``params -> oracle`` or ``"module:Class"``) under ``name``.

    ``example`` is small params the engine tests use to check the protocol end to end.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if name in _FACTORIES and not replace:
        raise ValueError(f"protocol {name!r} is already registered (pass replace=True to override)")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise ValueError("factory must be a callable or a 'module:Class' string")
    _FACTORIES[name] = factory
    if example is not None:
        _EXAMPLES[name] = dict(example)


def example_params(name: str) -> dict:
    """Small example params of a registered protocol (KeyError if it has none)."""
    if name not in _EXAMPLES:
        raise KeyError(f"protocol {name!r} has no example params; add them to _EXAMPLES in {__name__}")
    return dict(_EXAMPLES[name])


def _resolve(name: str) -> Factory:
    factory = _FACTORIES[name]
    if callable(factory):
        return factory
    module, attr = factory.split(":")
    cls = getattr(importlib.import_module(module), attr)
    return lambda params: cls(**params)


def registered_protocols() -> list[str]:
    """All registered names (some may need a module that is not importable)."""
    return sorted(_FACTORIES)


def available_protocols() -> list[str]:
    """Registered names whose implementation imports."""
    out = []
    for name in sorted(_FACTORIES):
        try:
            _resolve(name)
        except (ImportError, AttributeError):
            continue
        out.append(name)
    return out


def build_oracle(protocol: str, params: Mapping[str, Any]):
    """The oracle of ``protocol`` with ``params``; checks it reproduces exactly those params."""
    if protocol not in _FACTORIES:
        raise ValueError(f"unknown protocol {protocol!r}; registered: {', '.join(registered_protocols())}")
    try:
        factory = _resolve(protocol)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"protocol {protocol!r} is registered but its implementation is unavailable: {exc}"
        ) from None
    try:
        oracle = factory(dict(params))
    except TypeError as exc:
        raise ValueError(f"cannot build {protocol!r} from params {dict(params)}: {exc}") from None
    canonical = json.loads(json.dumps(dict(oracle.params), sort_keys=True))
    if oracle.name != protocol or canonical != json.loads(json.dumps(dict(params), sort_keys=True)):
        raise ValueError(
            f"registry entry {protocol!r} built {oracle!r}, which does not have params {dict(params)}"
        )
    return oracle
