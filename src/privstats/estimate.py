"""The result type every private statistic returns.

>>> from privstats.privacy import PureDP
>>> e = Estimate(0.7, stderr=0.01, guarantee=PureDP(1.0), model="local", protocol="grr", n=1000)
>>> [round(v, 4) for v in e.ci(0.95)]
[0.6804, 0.7196]

Results stay inside the statistic's range by default (:func:`constrain`): the value is
clipped, the unbiased raw value kept in ``details["unbiased"]`` (``est.unclipped``; ``est.clipped``
says whether clipping changed it), and ``ci`` is built around the raw value and intersected with
``support``; where the raw interval misses the range it is the interval at the nearest end, so an
interval has zero width only when the standard error is 0.  Where the noise law is known and
dominates (``details["ci_law"]``:
Laplace of a given scale plus a normal part, or integer discrete Laplace noise on one count or
summed over a range's tree nodes), ``ci`` uses its exact quantile instead of the normal one
(±2.12σ for pure Laplace at 95%, not ±1.96σ).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from privstats.privacy.guarantees import Guarantee

__all__ = ["POSTPROCESS", "TRUST_MODELS", "Estimate", "constrain", "laplace_normal_halfwidth"]

TRUST_MODELS = ("local", "shuffle", "secure", "central")
POSTPROCESS = ("clip", "none")


def _laplace_normal_central(h: float, b: float, s: float) -> float:
    """P(|L + N| <= h) for L ~ Laplace(b), N ~ Normal(0, s²) (the normal–Laplace law, in log space)."""
    from scipy.special import log_ndtr, ndtr

    if s <= 0:
        return -math.expm1(-h / b)
    if b <= 0:
        return float(2 * ndtr(h / s) - 1)

    def cdf(x: float) -> float:
        a = s * s / (2 * b * b)
        t1 = math.exp(a - x / b + float(log_ndtr(x / s - s / b)))
        t2 = math.exp(a + x / b + float(log_ndtr(-x / s - s / b)))
        return float(ndtr(x / s)) - 0.5 * (t1 - t2)

    return cdf(h) - cdf(-h)


def bias_aware_halfwidth(level: float, sd: Any, bias: Any) -> Any:
    """Smallest h with P(|N(β, sd²)| ≤ h) ≥ level for every |β| ≤ bias (the worst case is |β| = bias).

    >>> round(float(bias_aware_halfwidth(0.95, 1.0, 0.0)), 3), round(float(bias_aware_halfwidth(0.95, 1.0, 1.0)), 3)
    (1.96, 2.646)
    """
    from scipy.special import ndtr, ndtri

    sd, bias = np.broadcast_arrays(np.asarray(sd, dtype=float), np.abs(np.asarray(bias, dtype=float)))
    z = ndtri(0.5 + level / 2)
    lo, hi = np.maximum(z * sd, bias + ndtri(level) * sd), z * sd + bias  # hi is always valid
    for _ in range(60):  # bisection on the coverage at |β| = bias, monotone in h
        mid = (lo + hi) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = ndtr((mid - bias) / sd) - ndtr((-mid - bias) / sd)
        ok = np.where(sd > 0, cov >= level, mid >= bias)
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi if hi.ndim else float(hi)


def laplace_normal_halfwidth(level: float, laplace_scale: float, normal_sd: float = 0.0) -> float:
    """Half-width h with P(|L + N| <= h) = ``level`` (L ~ Laplace(laplace_scale), N ~ N(0, normal_sd²)).

    >>> round(laplace_normal_halfwidth(0.95, 1.0), 4)     # ln 20
    2.9957
    """
    b, s = float(laplace_scale), float(normal_sd)
    if s <= 0:
        return -b * math.log1p(-level)
    from scipy.optimize import brentq
    from scipy.special import ndtri

    hi = -b * math.log1p(-level) + float(ndtri(0.5 + level / 2)) * s
    return float(brentq(lambda h: _laplace_normal_central(h, b, s) - level, 0.0, hi, xtol=1e-12 * hi))


def _discrete_laplace_halfwidth(level: float, scale: float) -> int:
    """The smallest k with P(|X| <= k) >= level for P(X = k) ∝ a^|k|, a = e^(-1/scale)
    (P(|X| <= k) = 1 - 2a^(k+1)/(1+a)); 0 when the noise is (numerically) never non-zero."""
    a = math.exp(-1.0 / scale) if scale > 0 else 0.0
    if a <= 0.0 or 2 * a / (1 + a) <= 1 - level:
        return 0
    if a >= 1.0:
        raise ValueError(f"discrete Laplace scale {scale!r} is too large for an interval")
    return max(math.ceil(math.log((1 - level) * (1 + a) / 2) / math.log(a) - 1), 0)


DLAP_SUM_MAX_SUPPORT = 1 << 21  # beyond this many integers the sum is left to the normal approximation


def _discrete_laplace_sum_halfwidth(level: float, scale: float, weights) -> int | None:
    """The smallest integer h with P(|Σ w_i X_i| <= h) >= level, X_i iid discrete Laplace
    (P(X = k) ∝ a^|k|, a = e^(-1/scale)) and integer weights w_i: the exact law by convolution.  A
    dyadic tree's range count sums a few noisy nodes, whose ±1.96 sd covered 0.938 (one node) to
    0.944 (issue 26).  ``None`` where the law's support would exceed ``DLAP_SUM_MAX_SUPPORT``.

    >>> _discrete_laplace_sum_halfwidth(0.95, 3.0, [1]) == _discrete_laplace_halfwidth(0.95, 3.0)
    True
    >>> _discrete_laplace_sum_halfwidth(0.95, 3.0, [1, -1]) > _discrete_laplace_halfwidth(0.95, 3.0)
    True
    """
    return _dlap_sum_halfwidth(
        float(level), float(scale), tuple(sorted(abs(int(v)) for v in weights if int(v)))
    )


@functools.lru_cache(maxsize=256)
def _dlap_sum_halfwidth(level: float, scale: float, w: tuple[int, ...]) -> int | None:
    """:func:`_discrete_laplace_sum_halfwidth` for sorted non-zero weights (entries share few laws)."""
    a = math.exp(-1.0 / scale) if scale > 0 else 0.0
    if not w or a <= 0.0:
        return 0
    K = math.ceil(40.0 / -math.log(a))  # a^K < e^-40: the truncated mass is below 1e-17
    if (2 * K + 1) * sum(w) > DLAP_SUM_MAX_SUPPORT:
        return None
    from scipy.signal import fftconvolve

    k = np.arange(-K, K + 1)
    one = a ** np.abs(k) * (1 - a) / (1 + a)
    pmf = np.ones(1)
    for wi in w:
        term = np.zeros(2 * K * wi + 1)
        term[::wi] = one
        pmf = np.clip(fftconvolve(pmf, term), 0.0, None)
    c = pmf.size // 2  # the law is symmetric about its middle entry
    central = pmf[c] + 2 * np.cumsum(pmf[c + 1 :])  # P(|S| <= h), h = 1, 2, ...
    if pmf[c] >= level:
        return 0
    return int(np.searchsorted(central, level - 1e-12, side="left")) + 1


def _law_halfwidth(level: float, law: dict | None, v: np.ndarray, s: np.ndarray) -> Any:
    """The interval's half-width at ``level`` from the noise law ``details["ci_law"]`` states (exact
    discrete Laplace, a sum of them, Laplace plus normal), else the normal ``z·s``."""
    if law is not None and "discrete_laplace_weights" in law:  # each entry a sum of noisy counts
        scale = float(law["discrete_laplace_scale"])
        hs = [_discrete_laplace_sum_halfwidth(level, scale, w) for w in law["discrete_laplace_weights"]]
        if None not in hs:
            return np.array(hs, dtype=float).reshape(v.shape)
    elif law is not None and "discrete_laplace_scale" in law:
        # integer noise P(k) ∝ a^|k|: the smallest k with P(|X| <= k) = 1 - 2a^(k+1)/(1+a) >= level
        return _discrete_laplace_halfwidth(level, float(law["discrete_laplace_scale"]))
    elif law is not None and (v.ndim == 0 or "laplace_scale" in law):
        return laplace_normal_halfwidth(level, law["laplace_scale"], law.get("normal_sd", 0.0))
    from scipy.special import ndtri

    return ndtri(0.5 + level / 2) * s


def _inside(lo: Any, hi: Any, h: Any, support: tuple[float, float] | None) -> tuple[Any, Any]:
    """The interval ``[lo, hi]`` of the raw (unclipped) value, made to meet the range ``support``.

    Where the raw interval lies wholly outside the range (the raw value more than ``h`` beyond an
    end), the interval at that end, ``[end - h, end]`` or ``[end, end + h]``, is used instead of the
    empty intersection: every true value in the range within ``h`` of the end is covered, and the
    interval has zero width only where ``h`` is 0.
    """
    if support is None:
        return lo, hi
    a, b = float(support[0]), float(support[1])
    lo, hi, h = (np.asarray(t, dtype=float) for t in (lo, hi, h))
    above, below = lo > b, hi < a
    lo = np.where(above, b - h, np.where(below, a, lo))
    hi = np.where(above, b, np.where(below, a + h, hi))
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


@dataclass(frozen=True)
class Estimate:
    """A private estimate and everything needed to interpret it.

    Attributes
    ----------
    value : float or numpy.ndarray
        The estimate (a float, or an array over the domain).
    stderr : float, numpy.ndarray or None
        Its standard error (same shape), from the exact variance where one is known, else a
        plug-in; ``None`` when none can be derived.
    guarantee : Guarantee or None
        The privacy guarantee spent to produce it.
    model : str
        Trust model, one of ``local``, ``shuffle``, ``secure``, ``central``.
    protocol : str
        Protocol name.
    params : dict
        The protocol's parameters (chosen or given).
    n : int or None
        Number of users (records) that contributed.
    messages_per_user : float or None
        Messages each user sends (0 for central).
    bits_per_user : float or None
        Bits each user sends (0 for central).
    neighbours : str
        The neighbouring relation of the guarantee (``replace`` or ``add-remove``).
    details : dict
        Protocol-specific extras (e.g. curves, intermediate counts); ``details["unbiased"]``
        holds the raw value when ``value`` was post-processed into the statistic's range.
    support : tuple of float or None
        ``(lo, hi)``, the statistic's range; confidence intervals are intersected with it.
    clipped : bool
        Whether post-processing into the range changed the value (``unclipped`` is the raw value).
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
    support: tuple[float, float] | None = None

    def __post_init__(self):
        if self.model not in TRUST_MODELS:
            raise ValueError(f"model must be one of {TRUST_MODELS}, got {self.model!r}")

    def ci(self, level: float = 0.95):
        """Confidence interval ``(lo, hi)`` at ``level``, intersected with ``support``.

        An interval the statistic computes (``details["ci_fn"]``, e.g. a quantile's inverted
        ECDF band) is used as is; else the exact Laplace(+normal) law of ``details["ci_law"]``
        where the noise is Laplace-dominated; else the normal approximation around the
        unbiased value (``details["unbiased"]`` if the value was clipped).  A bias bound the
        protocol states (``details["bias_bound"]``, e.g. the local AUC's quantisation) is added
        to the half-width (where ``details["bias_rule"]`` is ``"quadrature"``, the narrowest ±h that
        covers at ``level`` for every bias up to b: :func:`bias_aware_halfwidth`).
        """
        if not (isinstance(level, (int, float)) and 0 < level < 1):
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        ci_fn = self.details.get("ci_fn") if isinstance(self.details, dict) else None
        if ci_fn is not None:
            lo, hi = (np.asarray(v, dtype=float) for v in ci_fn(level))
        else:
            if self.stderr is None:
                raise ValueError("this estimate has no standard error, so no confidence interval")
            details = self.details if isinstance(self.details, dict) else {}
            centre = details.get("unbiased", self.value)
            v, s = np.asarray(centre, dtype=float), np.asarray(self.stderr, dtype=float)
            law = details.get("ci_law")
            h: Any = _law_halfwidth(level, law, v, s)
            b = np.asarray(details.get("bias_bound", 0.0), dtype=float)
            if law is None and details.get("bias_rule") == "quadrature":
                # the narrowest ±h covering at level for every bias |β| ≤ b (the worst is |β| = b):
                # ±z√(σ² + b²) covered that too but was up to 1.2x wider at b ≥ σ (0.994 at β = 0, b = σ)
                h = bias_aware_halfwidth(level, s, b)
            else:
                # a quantisation bias the noise law does not describe widens the interval by its bound
                # (linear, not ±z√(σ² + b²): on real scores the bias exceeded the bound at k = 2 and the
                # quadrature interval covered 0.87–0.92 at n = 300, the linear one 0.91–0.99; issue 26)
                h = h + b
            lo, hi = _inside(v - h, v + h, h, self.support)
        if self.support is not None:
            lo, hi = np.clip(lo, *self.support), np.clip(hi, *self.support)
        return (float(lo), float(hi)) if np.ndim(lo) == 0 else (lo, hi)

    @property
    def unclipped(self) -> Any:
        """The raw value before it was post-processed into the statistic's range (``value`` if it was not)."""
        details = self.details if isinstance(self.details, dict) else {}
        return details.get("unbiased", self.value)

    @property
    def clipped(self) -> bool:
        """True when the unclipped value lies outside the statistic's range ``support`` (so the value
        was moved into it); without a support, when ``unclipped`` differs from the value.

        A value that differs from ``unclipped`` for another reason, e.g. Hosmer–Lemeshow's
        median-unbiased H inside [0, ∞), is not clipped.
        """
        details = self.details if isinstance(self.details, dict) else {}
        if "unbiased" not in details:
            return False
        try:
            raw, val = np.asarray(details["unbiased"], dtype=float), np.asarray(self.value, dtype=float)
            if self.support is not None:
                lo, hi = self.support
                return bool(np.any(raw < lo) or np.any(raw > hi))
            return bool(raw.shape != val.shape or np.any(raw != val))
        except (TypeError, ValueError):
            return False

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
            "support": None if self.support is None else [float(v) for v in self.support],
            **({"unbiased": conv(self.details["unbiased"])} if "unbiased" in self.details else {}),
            **({"clipped": True} if self.clipped else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def __repr__(self) -> str:
        def short(x):
            a = np.asarray(x)
            if not a.ndim:
                return f"{float(a):.6g}"
            body = np.array2string(a, precision=4, threshold=6, edgeitems=3, separator=", ")
            return f"array({' '.join(body.split())}, shape={a.shape})"

        se = "None" if self.stderr is None else short(self.stderr)
        mark = ", clipped=True" if self.clipped else ""
        return (
            f"Estimate(value={short(self.value)}, stderr={se}, guarantee={self.guarantee}, "
            f"model={self.model!r}, protocol={self.protocol!r}, n={self.n}{mark})"
        )


def constrain(
    est: Estimate, lo: float, hi: float, *, postprocess: str = "clip", monotone: bool = False
) -> Estimate:
    """``est`` with its value projected into ``[lo, hi]`` (and sorted if ``monotone``).

    ``postprocess="clip"`` (default): the value is clipped (post-processing, no privacy
    cost), the unbiased raw value is kept in ``details["unbiased"]`` and ``support`` is set
    so that confidence intervals are intersected with the range.  ``"none"`` keeps the
    raw value (unbiased, possibly outside the range); intervals are not clipped.

    >>> e = constrain(Estimate(1.2, stderr=0.1), 0.0, 1.0)
    >>> e.value, e.details["unbiased"], e.ci()[1]
    (1.0, 1.2, 1.0)
    """
    if postprocess not in POSTPROCESS:
        raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {postprocess!r}")
    if postprocess == "none":
        return est
    raw = est.value
    v = np.clip(np.asarray(raw, dtype=float), lo, hi)
    if monotone and v.ndim:
        v = np.sort(v)
    value = float(v) if v.ndim == 0 else v
    return replace(est, value=value, support=(float(lo), float(hi)), details={**est.details, "unbiased": raw})
