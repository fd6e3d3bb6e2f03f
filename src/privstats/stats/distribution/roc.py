"""The private ROC curve from two private ECDFs (central, secure, local) and its AUC's exact variance."""

from __future__ import annotations

import math
from functools import lru_cache, partial

import numpy as np

from privstats.cdf.covariance import auc_variance, raw_covariance, roc_points
from privstats.cdf.smoothing import SMOOTHING_METHODS, smooth
from privstats.cdf.tree import choose_mechanism
from privstats.estimate import Estimate
from privstats.plan import Option, check_model
from privstats.privacy import PureDP
from privstats.privacy.randomness import RNGLike, as_source
from privstats.stats.distribution.ecdf import ecdf
from privstats.stats.pairwise.plumbing import _auc_cell_pair_bias, _auc_linear_family_bias
from privstats.stats.units import Call, choose, unit
from privstats.validation import (
    as_binary_labels,
    as_float_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_same_length,
)


def roc_curve(
    y_true,
    y_score,
    *,
    epsilon: float,
    bounds=(0.0, 1.0),
    labels: str = "public",
    grid: int | None = None,
    smoothing: str = "isotonic",
    method: str = "auto",
    model: str = "central",
    rng: RNGLike = None,
    **kwargs,
):
    """ε-DP ROC curve from two private ECDFs (scores of positives and of negatives).

    Returns ``fpr, tpr, thresholds, estimate``: the curve from (0, 0) to (1, 1) with
    "predict positive when score > threshold" (thresholds decreasing, from +inf to
    -inf), and an :class:`Estimate` whose ``value`` is the ROC AUC (trapezoids on the
    smoothed curve).  ``stderr`` is that of the AUC of the unsmoothed curves
    (``details["auc_raw"]``, unbiased for the AUC on the grid): the AUC is bilinear in
    the two independent noisy curves, so its variance given the data is exact
    (:func:`auc_variance`; public labels) or a delta-method approximation (private
    labels: curves divided by noisy totals); it is estimated without bias from the
    released curves.  Smoothing is post-processing that usually shrinks the error, so
    for a smoothed curve the stderr is a conservative guide, checked by Monte Carlo.

    ``labels="public"``: the classes and their sizes are public, a neighbour changes one
    score within its class, so each curve gets the full ε (parallel composition).
    ``labels="private"``: a neighbour may also flip a label, so each class curve is
    ε/2-DP under add/remove and normalised by its noisy total (basic composition: ε).
    ``model="local"`` (public labels only): each user reports its score's grid cell with
    the full ε into its class's hierarchical histogram (one report per user); the AUC
    variance uses the exact noise covariance at the plug-in cell counts.  ``grid=None``:
    1024 cells, or for the local model :func:`local_roc_grid` (minimum predicted MSE).
    With ``smoothing="isotonic"`` the stderr is that of the smoothed AUC (re-noised
    smoothed curves, :func:`_smoothed_auc_draws`), the raw one in ``details["stderr_raw"]``, and
    ``ci()`` is ±z·stderr reaching, on the side where it is wider, to the re-noisings' range around
    their mean (:func:`_draws_interval`: toward 0.5 where the noise is large, as the smoothed AUC's
    law is skewed).
    Score orientation: higher = more likely positive (scikit-learn's convention).

    >>> import numpy as np
    >>> y = np.r_[np.zeros(500), np.ones(500)]; s = np.r_[np.linspace(0, .6, 500), np.linspace(.4, 1, 500)]
    >>> fpr, tpr, thr, est = roc_curve(y, s, epsilon=1.0, rng=0)
    >>> bool(abs(est.value - 0.944) < 0.03)
    True
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(labels, "labels", ("public", "private"))
    check_choice(smoothing, "smoothing", SMOOTHING_METHODS)
    check_model("roc_curve", model)
    y = as_binary_labels(y_true, "y_true")
    s = as_float_array(y_score, "y_score", bounds=bounds)
    check_same_length(y_true=y, y_score=s)
    if model == "local" and labels == "private":
        raise ValueError(
            "model='local' roc_curve needs labels='public': with private labels a user would have to "
            "hide its class, which the per-class local histograms do not; use model='central' or "
            "'secure' for private labels"
        )
    if grid is None:  # local: the grid minimising predicted MSE; else the fine default
        grid = local_roc_grid(int(y.size), int(np.count_nonzero(y)), epsilon) if model == "local" else 1024
    eps_each, nb = (epsilon, "replace") if labels == "public" else (epsilon / 2, "add-remove")
    c = Call.of("roc_curve", locals(), y=y, s=s, eps_each=eps_each, nb=nb)
    pos, neg = choose("roc_curve", model, "auto").run(c)
    return _release(c, pos, neg)


def two_curves(c: Call):
    """The private ECDFs of the positives' and the negatives' scores (one per class, same model)."""
    y, s = c.y, c.s
    src = as_source(c.rng) if c.rng is not None else None
    curves = []
    for cls in (True, False):
        r = ecdf(
            s[y == cls],
            epsilon=c.eps_each,
            bounds=c.bounds,
            grid=c.grid,
            smoothing=c.smoothing,
            neighbours=c.nb,
            method=c.method,
            model=c.model,
            rng=src,
            **c.kwargs,
        )
        curves.append(r)
    return curves


def _release(c: Call, pos, neg):
    """The curve (fpr, tpr, thresholds) and the Estimate of its AUC with the exact variance."""
    epsilon, model, labels, smoothing, eps_each, y = (
        c.epsilon,
        c.model,
        c.labels,
        c.smoothing,
        c.eps_each,
        c.y,
    )
    covs = (raw_covariance(pos), raw_covariance(neg))
    fpr, tpr, thresholds, auc, auc_raw, var_hat = roc_points(pos, neg, covs)
    se_raw = float(np.sqrt(max(var_hat, 0.0)))
    draws = _smoothed_auc_draws(pos, neg, covs, smoothing, c.rng) if smoothing == "isotonic" else None
    se = float(np.std(draws, ddof=1)) if draws is not None else se_raw
    bias_bound = _roc_cell_pair_bias(pos.raw, neg.raw)
    est = Estimate(
        auc,
        stderr=se,
        guarantee=PureDP(epsilon),
        model=model,
        protocol="roc-two-ecdfs",
        params={
            "labels": labels,
            "epsilon_per_curve": eps_each,
            "smoothing": smoothing,
            **{f"curve_{k}": v for k, v in pos.estimate.params.items()},
        },
        n=int(y.size),
        neighbours="replace",
        **(
            {
                "messages_per_user": max(pos.estimate.messages_per_user, neg.estimate.messages_per_user),
                "bits_per_user": max(pos.estimate.bits_per_user, neg.estimate.bits_per_user),
            }
            if model == "local"
            else {}
        ),
        support=(0.0, 1.0),
        details={
            "fpr": fpr,
            "tpr": tpr,
            "thresholds": thresholds,
            "auc_raw": auc_raw,
            "stderr_raw": se_raw,
            # the grid's discretisation bias, as the local AUC's: the released classes' shared-cell share
            # over 3k (1/(3k²) at uniform histograms); without a bias scale the local curve's AUC covered
            # 0.89-0.91 over 80 seeds on real scores, with 1/(3k²) 0.900 on randhie at (300, 2) (issue 26)
            "bias_bound": bias_bound,
            **(
                {"ci_fn": _draws_interval(auc, se, draws, bias_bound)}
                if draws is not None
                else {"unbiased": auc_raw}
            ),
            "stderr_method": (
                f"spread of the isotonic AUC over {ROC_DRAWS} Gaussian re-noisings of the smoothed curves "
                "with the raw curves' noise covariance, the interval ±z·stderr reaching to their range around "
                "their mean where it is wider (stderr_raw: that of auc_raw, "
            )
            * (smoothing == "isotonic")
            + (
                (
                    "exact noise covariance at the plug-in cell counts (unsmoothed)"
                    if model == "local"
                    else "exact (unsmoothed, public labels)"
                )
                if labels == "public"
                else "delta method (curves divided by noisy class totals)"
            )
            + ")" * (smoothing == "isotonic"),
            "positives": pos,
            "negatives": neg,
            "curve_ci": partial(curve_interval, pos, neg),
        },
    )
    return fpr, tpr, thresholds, est


def curve_interval(pos, neg, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr_lo, fpr_hi, tpr_lo, tpr_hi)``: pointwise ``level`` intervals of the returned curve's
    points, from the class curves' bands (:meth:`~privstats.cdf.result.PrivateECDF.confidence_interval`:
    tpr = 1 − F of the positives' scores, fpr = 1 − F of the negatives'); its ends (0, 0) and (1, 1)
    are exact.  Post-processing of the release."""
    out = []
    for cur in (neg, pos):
        band = cur.confidence_interval(level)
        out += [np.concatenate([[0.0], 1.0 - b.probabilities[::-1], [1.0]]) for b in (band.high, band.low)]
    return out[0], out[1], out[2], out[3]


def _roc_cell_pair_bias(pos_raw, neg_raw) -> float:
    """The AUC's grid bias scale read off the two released raw class curves (cell masses: their
    increments), as the local AUC's (:func:`privstats.stats.pairwise.plumbing._auc_cell_pair_bias`):
    peaked scores crowd both classes into a few cells, where 1/(3k²) understated it."""
    p, q = (np.diff(np.asarray(r, dtype=np.float64), prepend=0.0) for r in (pos_raw, neg_raw))
    return _auc_cell_pair_bias(p, q, 1.0, 1.0)


ROC_DRAWS = 400  # re-noisings behind the smoothed AUC's stderr


def _noise_factor(cov: np.ndarray) -> np.ndarray:
    """A factor A with A Aᵀ ≈ cov: Cholesky with a relative jitter of 1e-10, else the eigenvectors."""
    sym = 0.5 * (cov + cov.T)
    jitter = 1e-10 * max(float(np.trace(sym)) / max(sym.shape[0], 1), 1e-300)
    try:
        return np.linalg.cholesky(sym + jitter * np.eye(sym.shape[0]))
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(sym)
        return V * np.sqrt(np.maximum(w, 0.0))


def _smoothed_auc_draws(pos, neg, covs, smoothing: str, rng) -> np.ndarray:
    """The isotonic-smoothed AUC's law: the AUC of ``ROC_DRAWS`` copies of the two smoothed curves
    plus Gaussian noise of the raw curves' covariance, each smoothed the same way (post-processing of
    the release).  Their spread is the stderr: the raw AUC's exact stderr overstates the smoothed
    value's spread many times where smoothing binds (local model, AUC near 1: 1.25 against 0.05)."""
    gen = np.random.default_rng(as_source(rng).uint64(2).tolist())  # rng=None: seeded from the CSPRNG
    return _renoised_aucs((pos.probabilities, neg.probabilities), covs, gen, ROC_DRAWS, smoothing)


def _renoised_aucs(
    curves, covs, gen: np.random.Generator, draws: int, smoothing: str = "isotonic"
) -> np.ndarray:
    """The AUCs of ``draws`` copies of the two curves (F of the positives', the negatives' scores at the
    grid) plus Gaussian noise of ``covs``, each copy smoothed: the release's law and the planner's."""
    rates = []
    for cur, cov in zip(curves, covs, strict=True):
        z = gen.standard_normal((draws, cov.shape[0])) @ _noise_factor(cov).T
        sm = np.array([smooth(row, smoothing) for row in cur + z])
        rates.append(np.concatenate([np.zeros((draws, 1)), 1.0 - sm[:, ::-1], np.ones((draws, 1))], axis=1))
    tpr, fpr = rates
    return np.sum(np.diff(fpr, axis=1) * (tpr[:, 1:] + tpr[:, :-1]) / 2, axis=1)


def _draws_interval(auc: float, se: float, draws: np.ndarray, bias_bound: float):
    """The smoothed AUC's interval at ``level``: on each side of the estimate the farther of ±z·se and
    the re-noisings' central ``level`` range around their mean, widened by the grid's bias bound.

    Where the noise is large the smoothed AUC's law is skewed toward 0.5 and narrower near 0 or 1, so
    ±z·se missed a truth in the middle from an estimate near an end (n = 300, ε = 0.5: 0.895-0.93 in
    8 of 9 cells of four real sets, 200 seeds each); the re-noisings' long tail points toward 0.5 too,
    and reaching it covers 0.935-0.965 in all nine.  Their plain percentiles, which also move toward
    0.5 by the isotonic fit's bias, covered 0.955-1.000 (issue 26).  It is never narrower than ±z·se.

    >>> f = _draws_interval(0.9, 0.05, np.r_[np.linspace(0.3, 0.8, 20), np.full(380, 0.8)], 0.0)
    >>> [round(x, 3) for x in f(0.95)]
    [0.675, 0.998]
    """
    from scipy.special import ndtri

    centre = float(np.mean(draws))

    def ci(level: float) -> tuple[float, float]:
        lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]) - centre
        h = float(ndtri(0.5 + level / 2)) * se
        return auc - max(-float(lo), h) - bias_bound, auc + max(float(hi), h) + bias_bound

    return ci


@lru_cache(maxsize=128)
def local_roc_grid(n: int, n_pos: int, epsilon: float) -> int:
    """Local ROC grid: k in 4, 8, ..., 256 minimising the raw AUC's predicted variance
    (:func:`_plan_roc`, uniform scores) plus the squared worst-case discretisation bias over linear
    class densities, 1/(3k²).  At n = 569, ε = 1 this is 16 cells instead of 1,024.

    >>> local_roc_grid(569, 212, 1.0) <= 64
    True
    """
    best = min((_plan_roc("local", n, epsilon, k, n_pos).stderr, k) for k in (4, 8, 16, 32, 64, 128, 256))
    return best[1]


@lru_cache(maxsize=64)
def _plan_roc(model, n, epsilon, grid, n_pos, smoothing="none"):
    if grid is None:
        grid = (
            local_roc_grid(n, n // 2 if n_pos is None else int(n_pos), epsilon) if model == "local" else 1024
        )
    n_pos = n // 2 if n_pos is None else int(n_pos)
    n_neg = n - n_pos
    if model == "local":
        from privstats.cdf.local import local_hierarchy

        covs = []
        for m in (n_pos, n_neg):
            hh = local_hierarchy(int(grid), epsilon, m, "auto")
            cells = np.full(int(grid), m / grid)
            levels = (
                np.full(hh.height, m / hh.height) if hh.split == "users" else np.full(hh.height, float(m))
            )
            covs.append(hh.prefix_covariance(cells, levels) / m**2)
        bits = float(hh.bits_per_user)
    else:
        mech = choose_mechanism(int(grid), epsilon, "replace", "auto")
        from privstats.secure.noise import noise_variance_factor

        cov = mech.count_covariance() * (noise_variance_factor(2) if model == "secure" else 1.0)
        covs = [cov / n_pos**2, cov / n_neg**2]
        bits = 0.0 if model == "central" else 128.0 + 64.0 * (grid + 2)
    curve = np.linspace(0, 1, int(grid) + 1)[1:]  # uniform scores: F(τ_i) = i / grid
    var, _ = auc_variance(curve, curve, covs[0], covs[1])
    sd, note = math.sqrt(var), "the unsmoothed curves' AUC"
    if smoothing == "isotonic":
        # the released AUC is that of the isotonic curves, whose spread is smaller than the raw one's
        # where the noise is large against the grid's steps (the raw prediction was 2.4-3.5x the
        # measured RMSE at n = 300, ε = 0.5, issue 26): the same re-noising as the release's stderr,
        # at the uniform curves, with a fixed seed (public parameters only)
        sd = _smoothed_auc_spread(curve, covs)
        note = "the isotonic curves' AUC (re-noised uniform curves)"
    # the grid's discretisation bias (worst case over linear class densities, 1/(3k²)): 0.021 at the
    # local grid of 4 points (n = 300, ε = 0.5), where real scores were 0.3-0.5 sd low (issue 26)
    bias = _auc_linear_family_bias(int(grid))
    return Option(
        model,
        "roc-two-ecdfs",
        {"grid": grid},
        math.hypot(sd, bias),
        bias=bias,
        bits_per_user=bits,
        messages_per_user=0.0 if model == "central" else 1.0,
        note=f"stderr of {note} at uniform scores, with the grid's worst-case bias over linear class densities",
    )


PLAN_DRAWS = 200  # re-noisings behind the planner's smoothed-AUC prediction


def _smoothed_auc_spread(curve: np.ndarray, covs) -> float:
    """Spread of the isotonic AUC of the uniform curves plus Gaussian noise of ``covs`` (fixed seed)."""
    return float(np.std(_renoised_aucs((curve, curve), covs, np.random.default_rng(26), PLAN_DRAWS), ddof=1))


for _m in ("central", "secure", "local"):
    unit(
        "roc_curve",
        _m,
        "roc-two-ecdfs",
        method="auto",
        options=("labels", "grid", "smoothing", "method"),
        predictor=lambda *, n, epsilon, grid=None, n_pos=None, smoothing="isotonic", _m=_m, **_: _plan_roc(
            _m, n, epsilon, grid, n_pos, smoothing
        ),
    )(two_curves)
