"""The result type every private statistic returns.

>>> from privstats.privacy import PureDP
>>> e = Estimate(0.7, stderr=0.01, guarantee=PureDP(1.0), model="local", protocol="grr", n=1000)
>>> [round(v, 4) for v in e.ci(0.95)]
[0.6804, 0.7196]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.privacy.guarantees import Guarantee

__all__ = ["Estimate", "TRUST_MODELS"]

TRUST_MODELS = ("local", "shuffle", "secure", "central")


@dataclass(frozen=True)
class Estimate:
    """A private estimate and everything needed to interpret it.

    Attributes
    ----------
    value : the estimate (a float, or an array over the domain).
    stderr : its standard error (same shape), from the exact variance where one
        is known, else a plug-in; ``None`` when none can be derived.
    guarantee : the privacy guarantee spent to produce it.
    model : trust model, one of ``local``, ``shuffle``, ``secure``, ``central``.
    protocol : protocol name; ``params`` its parameters (chosen or given).
    n : number of users (records) that contributed.
    messages_per_user, bits_per_user : communication cost per user (0 for central).
    neighbours : the neighbouring relation of the guarantee (``replace`` or ``add-remove``).
    details : protocol-specific extras (e.g. curves, intermediate counts).
    """

    value: Any
    stderr: Any = None
    guarantee: Guarantee | None = None
    model: str = "local"
    protocol: str = ""
    params: dict = field(default_factory=dict)
    n: int | None = None
    messages_per_user: float | None = None
    bits_per_user: float | None = None
    neighbours: str = "replace"
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.model not in TRUST_MODELS:
            raise ValueError(f"model must be one of {TRUST_MODELS}, got {self.model!r}")

    def ci(self, level: float = 0.95):
        """Normal-approximation confidence interval ``(lo, hi)`` at ``level``."""
        if self.stderr is None:
            raise ValueError("this estimate has no standard error, so no confidence interval")
        if not (0 < level < 1):
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        from scipy.special import ndtri

        z = ndtri(0.5 + level / 2)
        v, s = np.asarray(self.value, dtype=float), np.asarray(self.stderr, dtype=float)
        lo, hi = v - z * s, v + z * s
        return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)

    @property
    def epsilon(self) -> float | None:
        g = self.guarantee
        return None if g is None or not hasattr(g, "epsilon") else g.epsilon

    @property
    def delta(self) -> float:
        g = self.guarantee
        return 0.0 if g is None or not hasattr(g, "delta") else g.delta

    def to_dict(self) -> dict:
        """A JSON-serialisable summary (arrays become lists)."""

        def conv(x):
            if isinstance(x, np.ndarray):
                return x.tolist()
            if isinstance(x, (np.floating, np.integer)):
                return x.item()
            if isinstance(x, dict):
                return {str(k): conv(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [conv(v) for v in x]
            return x

        return {
            "value": conv(self.value),
            "stderr": conv(self.stderr),
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
            "model": self.model,
            "protocol": self.protocol,
            "params": conv(self.params),
            "n": self.n,
            "messages_per_user": self.messages_per_user,
            "bits_per_user": self.bits_per_user,
            "neighbours": self.neighbours,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def __repr__(self) -> str:
        def short(x):
            a = np.asarray(x)
            return f"array(shape={a.shape})" if a.ndim else f"{float(a):.6g}"

        se = "None" if self.stderr is None else short(self.stderr)
        return (f"Estimate(value={short(self.value)}, stderr={se}, guarantee={self.guarantee}, "
                f"model={self.model!r}, protocol={self.protocol!r}, n={self.n})")
