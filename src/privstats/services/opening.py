"""The collector's opening of a secure (DAP/Prio3) task: two noisy shares → the task's statistic.

:func:`open_result` adds the two aggregators' noisy shares of the tree statistic (field elements
mod 2^61 - 1; :func:`privstats.services.dap.dp.open_noisy` maps Prio3's Field128 opening there),
centres them and post-processes exactly as ``privstats.*(model="secure")`` do: ECDF, quantiles
and Hosmer–Lemeshow through :func:`privstats.secure.histogram.open_histogram`, the ROC (two class
curves, AUC and its delta-method standard error) here, since it needs the statistics layer.

>>> import numpy as np
>>> from privstats.secure.histogram import SecureSpec, noisy_statistic
>>> spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=7)
>>> opened = noisy_statistic(spec, np.bincount(spec.cells([0.2, 0.5]).ravel(), minlength=8), rng=0)
>>> res = open_result(spec, opened % FIELD_MODULUS, np.zeros(opened.size, np.uint64), 2)
>>> res.quantiles.size
7
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike
from privstats.secure.histogram import PROTOCOL, SecureSpec, open_curve, open_histogram

__all__ = ["FIELD_MODULUS", "open_result"]

FIELD_MODULUS = (1 << 61) - 1  # the field open_result's two partials are given in


def _as_field(x: Any) -> list[int]:
    if isinstance(x, (bytes, bytearray)):
        x = np.frombuffer(x, dtype="<u8")
    return [int(v) for v in np.asarray(x).ravel().tolist()]


def open_result(
    spec: SecureSpec,
    leader_partial,
    helper_partial,
    n: int,
    *,
    q=None,
    n_invalid: int = 0,
    groups: int = 10,
    rng: RNGLike = None,
):
    """The statistic from the two noisy shares (elements mod 2^61 - 1, arrays or little-endian bytes).

    ``ecdf`` → :class:`~privstats.cdf.result.PrivateECDF`; ``quantiles`` → an Estimate at ``q`` (its
    stderr and intervals as ``privstats.quantiles(model="secure")`` gives them);
    ``roc`` → ``(fpr, tpr, thresholds, estimate)`` with the AUC and its stderr, as
    :func:`privstats.roc_curve`; ``hosmer_lemeshow`` → an Estimate of H over ``groups`` groups
    (``rng`` seeds its bootstrap).  ``n`` is the batch size.
    """
    lp, hp = _as_field(leader_partial), _as_field(helper_partial)
    if len(lp) != len(hp):
        raise ValueError("the two partials have different lengths")
    if any(not 0 <= v < FIELD_MODULUS for v in lp + hp):
        raise ValueError("a partial has an element outside the field")
    half = FIELD_MODULUS // 2
    opened = [(a + b) % FIELD_MODULUS for a, b in zip(lp, hp, strict=True)]
    noisy = np.array([v - FIELD_MODULUS if v > half else v for v in opened], dtype=np.int64)
    if spec.statistic == "quantiles":
        return _with_uncertainty(spec, open_histogram(spec, noisy, n, q=q, n_invalid=n_invalid))
    if spec.statistic != "roc":
        return open_histogram(spec, noisy, n, q=q, n_invalid=n_invalid, groups=groups, rng=rng)
    return _open_roc(spec, np.split(noisy, spec.n_parts), {"n_invalid": int(n_invalid)})


def _with_uncertainty(spec: SecureSpec, est):
    """The quantiles' stderr and intervals as ``privstats.quantiles(model="secure")`` gives them
    (:func:`privstats.stats.distribution.quantiles.tree_release_law`, the curve's inverted band)."""
    from dataclasses import replace

    from privstats.stats.distribution.quantiles import (
        INTERVAL_METHOD,
        STDERR_METHOD,
        band_ci,
        tree_release_law,
    )

    qs = np.asarray(est.params["q"], dtype=float)
    curve = est.details["curve"]
    dithered = spec.shift is not None
    ci_fn = band_ci(curve.quantiles, curve.raw, curve.stderr, qs, spec.bounds, dithered=dithered)
    details = {**est.details, "ci_fn": ci_fn, "interval_method": INTERVAL_METHOD}
    law = tree_release_law(curve, qs, spec.cell_width, dithered=dithered)
    if law is None:
        return replace(est, details=details)
    return replace(est, stderr=law[0], params={**est.params, "stderr_method": STDERR_METHOD}, details=details)


def _open_roc(spec: SecureSpec, parts, meta: dict):
    from functools import partial

    from privstats.cdf.covariance import roc_points
    from privstats.estimate import Estimate
    from privstats.privacy import PureDP
    from privstats.stats.distribution.roc import curve_interval

    smoothing = spec.smoothing or "isotonic"
    pos, neg = (open_curve(spec, p, None, smoothing) for p in parts)
    fpr, tpr, thresholds, auc, auc_raw, var_hat = roc_points(pos, neg)
    est = Estimate(
        auc,
        stderr=float(np.sqrt(max(var_hat, 0.0))),
        guarantee=PureDP(spec.epsilon),
        model="secure",
        protocol="roc-two-ecdfs+" + PROTOCOL,
        params={
            "labels": "private",
            "epsilon_per_curve": spec.curve_epsilon,
            "smoothing": smoothing,
            **{f"curve_{k}": v for k, v in pos.estimate.params.items()},
        },
        n=None,
        neighbours="replace",
        messages_per_user=1.0,
        bits_per_user=pos.estimate.bits_per_user,
        details={
            "fpr": fpr,
            "tpr": tpr,
            "thresholds": thresholds,
            "auc_raw": auc_raw,
            "stderr_method": "delta method (curves divided by noisy class totals)",
            "positives": pos,
            "negatives": neg,
            "curve_ci": partial(curve_interval, pos, neg),
            **meta,
        },
    )
    return fpr, tpr, thresholds, est
