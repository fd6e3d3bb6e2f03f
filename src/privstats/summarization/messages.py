"""The protocol's messages: plain dataclasses that serialize to JSON-ready dicts.

Nothing passes between the consumer, the curator and the owners except these, so a
service layer can host each role in its own process.  ``to_dict``/``from_dict``
round-trip every message (arrays become lists).

>>> m = RoundBroadcast(round=2, summary_size=5, summary_sketch=np.zeros(3))
>>> message_from_dict(m.to_dict()).summary_size
5
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Bid",
    "FetchRequest",
    "PointTransfer",
    "RoundBroadcast",
    "Setup",
    "SummaryDelivery",
    "TargetData",
    "message_from_dict",
]

_ARRAY_FIELDS: dict[str, tuple[str, ...]] = {}


class _Message:
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]  # subclasses are dataclasses
            v = getattr(self, f.name)
            out[f.name] = v.tolist() if isinstance(v, np.ndarray) else v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        kwargs = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # subclasses are dataclasses
            v = d.get(f.name, f.default)
            kwargs[f.name] = (
                np.asarray(v) if f.name in _ARRAY_FIELDS.get(cls.__name__, ()) and v is not None else v
            )
        return cls(**kwargs)


def _arrays(*names):
    def deco(cls):
        _ARRAY_FIELDS[cls.__name__] = names
        return cls

    return deco


@_arrays("points")
@dataclass(frozen=True)
class TargetData(_Message):
    """Consumer → curator: the target (validation) set D_v, raw (the curator is trusted)."""

    points: np.ndarray


@_arrays("target_sketch")
@dataclass(frozen=True)
class Setup(_Message):
    """Curator → owners: the public h1 parameters and the private sketch g̃ of the target.

    ``own_feedback`` (no summary releases): each owner adds its own sent rows to the
    broadcast prior of the summary mean (they are its own data, so this costs nothing).
    """

    n_inputs: int
    n_features: int
    gamma: float
    feature_seed: int
    target_sketch: np.ndarray
    own_feedback: bool = False


@_arrays("summary_sketch")
@dataclass(frozen=True)
class RoundBroadcast(_Message):
    """Curator → owners: round ℓ, current summary size s (public) and the sketch g_ℓ of the summary."""

    round: int
    summary_size: int
    summary_sketch: np.ndarray


@dataclass(frozen=True)
class Bid(_Message):
    """Owner → curator: the best score among the owner's unsent points and an opaque handle of that point.

    ``value`` is None when the owner has no point left.
    """

    owner: int
    round: int
    value: float | None
    handle: str | None


@dataclass(frozen=True)
class FetchRequest(_Message):
    """Curator → owner: send the point behind ``handle``."""

    owner: int
    round: int
    handle: str


@_arrays("point")
@dataclass(frozen=True)
class PointTransfer(_Message):
    """Owner → curator: one raw point (never offered again) with its row index in the owner's data."""

    owner: int
    round: int
    handle: str
    row: int
    point: np.ndarray


@_arrays("points", "owners", "rows")
@dataclass(frozen=True)
class SummaryDelivery(_Message):
    """Curator → consumer: the selected points in selection order, with owner and row provenance."""

    points: np.ndarray
    owners: np.ndarray
    rows: np.ndarray


_TYPES = {
    c.__name__: c
    for c in (TargetData, Setup, RoundBroadcast, Bid, FetchRequest, PointTransfer, SummaryDelivery)
}


def message_from_dict(d: dict[str, Any]):
    """Rebuild any message from its ``to_dict()`` form."""
    try:
        cls = _TYPES[d["type"]]
    except KeyError:
        raise ValueError(f"unknown message type {d.get('type')!r}") from None
    return cls.from_dict(d)
