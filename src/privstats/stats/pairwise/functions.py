"""The public pairwise statistics: each validates its arguments, picks a unit and finishes once.

The units (one per trust model and protocol, with their predictors) are in the sibling modules
``central``, ``secure_pairs``, ``secure_all_pairs``, ``local_quantized`` and ``local_tree``
(and ``gini`` for the Gini coefficient).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privstats.estimate import Estimate
from privstats.plan import check_model
from privstats.privacy.randomness import RNGLike
from privstats.stats.pairwise.plumbing import (
    _auto_local_auc,
    _pair_bounds,
    _probe_kernel,
    _resolve_model,
    _validate,
)
from privstats.stats.pairwise.secure_pairs import ustatistic_named_kernel
from privstats.stats.units import Call, choose, finish
from privstats.ustat import kernels as K
from privstats.ustat.quantized import STRUCTURED_MAX_CATEGORIES
from privstats.ustat.tree import DISCARDS, SPLITTINGS
from privstats.validation import (
    MAX_CELLS,
    as_binary_labels,
    as_domain_values,
    as_float_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_positive_int,
    check_real,
    check_same_length,
)


def auc(
    y_true,
    y_score,
    *,
    epsilon: float,
    delta: float = 0.0,
    model: str | None = None,
    method: str = "auto",
    bounds=(0.0, 1.0),
    domain_size: int | None = None,
    ties: str | None = None,
    smoothing: str | None = None,
    splitting: str = "users",
    discard: str = "half",
    a: float | None = None,
    oracle: str = "auto",
    P: int | None = None,
    zeta=None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    backend: str = "simulated",
) -> Estimate:
    """Private AUC (Wilcoxon–Mann–Whitney) with public labels and private scores in public ``bounds``.

    ``ties``: ``"half"`` (default, as scikit-learn) or ``"zero"`` (strict, as the paper's tree).
    ``smoothing`` (Protocol A, ties ½): ``"linear"`` (default on the automatic grid) corrects the pairs
    sharing a bin for class densities linear across neighbouring bins (exactly unbiased for linear
    densities, O(k⁻³) bias for smooth ones instead of O(k⁻²); see
    :func:`privstats.ustat.kernels.linear_auc_correction`); ``"none"`` (default with a given
    ``domain_size``, e.g. discrete scores with one value per bin) counts them ½.
    ``domain_size``: bins d (a power of two for ``tree``; chosen by the parameter helpers when omitted).
    ``splitting``/``discard``/``a``: Protocol B options; ``oracle``: Protocol A's frequency oracle;
    ``P``/``zeta``: Protocol C's permutations (given, or from ζ estimates / the worst case);
    ``backend``: ``"simulated"`` pairs or ``"spu"`` (real two-party computation, :mod:`privstats.ustat.mpc`).
    ``delta > 0`` is needed for ``splitting="advanced"`` and ``method="all-pairs"``.

    >>> import privstats
    >>> est = privstats.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], epsilon=1.0, model="central", rng=0)
    >>> est.model, est.params["sensitivity"]
    ('central', 0.5)
    """
    local = (
        domain_size,
        smoothing,
        None if splitting == "users" else splitting,
        None if discard == "half" else discard,
        a,
    )
    epsilon, delta, model = _validate(
        "auc", epsilon, delta, model, method, postprocess, backend, P=P, oracle=oracle, local=local
    )
    if a is not None:
        check_real(a, "a")
    labels = as_binary_labels(y_true, "y_true")
    lo, hi = check_bounds(bounds)
    scores = as_float_array(y_score, "y_score", bounds=(lo, hi))
    check_same_length(y_true=labels, y_score=scores)
    pos, neg = scores[labels], scores[~labels]
    n_pos, n_neg, n = pos.size, neg.size, scores.size
    _check_auc_options(ties, smoothing, splitting, discard, domain_size)
    if P is not None:
        check_positive_int(P, "P", maximum=max(1, MAX_CELLS // n))

    c = Call.of("auc", locals())
    return _run_unit(c, (0.0, 1.0), auto=lambda: _auc_local_method(c) if model == "local" else "auto")


def _run_unit(c: Call, support: tuple[float, float] | None, auto=None) -> Estimate:
    """Run the unit that the call's model and method choose and finish its release once."""
    u = choose(c.statistic, c.model, c.method, auto)
    return finish(u.run(c), c, protocol=u.protocol, support=support)


def _at_least_two_users(n: int) -> int:
    """The number of users ``n``, checked: a pairwise statistic needs a pair."""
    if n < 2:
        raise ValueError("x must hold at least two users")
    return n


def _check_auc_options(ties, smoothing, splitting, discard, domain_size) -> None:
    if ties is not None:
        check_choice(ties, "ties", ("half", "zero"))
    if smoothing is not None:
        check_choice(smoothing, "smoothing", ("linear", "none"))
        if smoothing == "linear" and ties == "zero":
            raise ValueError(
                "smoothing='linear' corrects ties counted ½: use ties='half' or smoothing='none'"
            )
    check_choice(splitting, "splitting", SPLITTINGS)
    check_choice(discard, "discard", DISCARDS)
    if domain_size is not None:
        check_positive_int(domain_size, "domain_size", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES)


def _auc_local_method(c: Call) -> str:
    """``method="auto"`` in the local model: Protocol B when an option only it has is given, else
    the local protocol with the smaller predicted error (the planner)."""
    if c.splitting != "users" or c.discard != "half" or c.a is not None:
        return "tree"
    return _auto_local_auc(
        c.n_pos, c.n_neg, c.epsilon, c.delta, c.domain_size, c.splitting, c.ties, c.oracle, c.smoothing
    )


def kendall_tau(
    x,
    y,
    *,
    epsilon: float,
    delta: float = 0.0,
    model: str | None = None,
    method: str = "auto",
    bounds=None,
    bins: int | None = None,
    variant: str = "b",
    oracle: str = "auto",
    P: int | None = None,
    zeta=None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    backend: str = "simulated",
) -> Estimate:
    """Private Kendall's tau of paired values (tau-b by default, as SciPy; ``variant="a"``: (C−D)/C(n,2)).

    ``bounds``: public ``(lo, hi)`` for both, or ``((lo_x, hi_x), (lo_y, hi_y))``; needed (and
    checked) only by the local model, whose quantisation uses them (tau is rank-based).  Local: k-RR/OUE on
    the ``bins × bins`` product grid (discrete ratings 0..5: ``bounds=(0, 6), bins=6``).  Tau-b divides
    by the non-tie fractions, estimated from the same reports (local) or with a third of the budget
    each (secure, central).

    >>> import privstats
    >>> est = privstats.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4], epsilon=1.0, bounds=(0, 5), model="central", rng=0)
    >>> est.params["variant"]
    'b'
    """
    epsilon, delta, model = _validate(
        "kendall_tau", epsilon, delta, model, method, postprocess, backend, P=P, oracle=oracle, bins=bins
    )
    check_choice(variant, "variant", ("a", "b"))
    if model == "local" or bounds is not None:  # only the local quantisation uses bounds
        bx, by = _pair_bounds(bounds)
    else:
        bx = by = None
    xs = as_float_array(x, "x", bounds=bx)
    ys = as_float_array(y, "y", bounds=by)
    n = _at_least_two_users(check_same_length(x=xs, y=ys))
    return _run_unit(Call.of("kendall_tau", locals()), (-1.0, 1.0))


def gini_mean_difference(
    x,
    *,
    epsilon: float,
    bounds,
    delta: float = 0.0,
    model: str | None = None,
    method: str = "auto",
    bins: int | None = None,
    quantization: str = "avg",
    oracle: str = "auto",
    P: int | None = None,
    zeta=None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    backend: str = "simulated",
    grid_bits: int = 10,
) -> Estimate:
    """Private Gini mean difference Σ_{i<j}|x_i − x_j| / C(n, 2) of values in public ``bounds``.

    Local model: each user reports its cell of a grid of ``bins`` cells.  On the fixed grid ("avg", the
    default; "mid", "center") the interval bounds the binning's bias for densities linear within each
    cell, which data much narrower than a cell exceed.  ``quantization="dither"`` shifts the grid by a
    public uniform fraction of a cell, drawn per release, which makes the binned value unbiased for any
    data; its stderr omits the shift's own zero-mean error (docs/results.md, issue 26).

    ``backend="spu"`` (secure pairs): real two-party computation of |x_i − x_j| with each value
    rounded to a public grid of ``(hi − lo)·2^-grid_bits`` and discrete Laplace on that grid.

    >>> import numpy as np, privstats
    >>> x = np.random.default_rng(0).random(200000)
    >>> est = privstats.gini_mean_difference(x, epsilon=1.0, bounds=(0, 1), rng=1)
    >>> bool(abs(est.value - 1 / 3) < 5 * est.stderr + 0.01)
    True
    """
    opts = {"P": P, "oracle": oracle, "bins": bins, "quantization": quantization}
    epsilon, delta, model = _validate(
        "gini_mean_difference", epsilon, delta, model, method, postprocess, backend,
        quantizations=K.GMD_QUANTISATIONS, **opts,
    )  # fmt: skip
    lo, hi = check_bounds(bounds)
    xs = as_float_array(x, "x", bounds=(lo, hi))
    n, w = _at_least_two_users(xs.size), hi - lo
    return _run_unit(Call.of("gini_mean_difference", locals(), u=(xs - lo) / w), (0.0, w))


def gini_coefficient(
    x,
    *,
    epsilon: float,
    bounds,
    mean_fraction: float = 0.5,
    model: str | None = None,
    method: str = "auto",
    rng: RNGLike = None,
    postprocess: str = "clip",
    **kwargs,
) -> Estimate:
    """Private Gini coefficient GMD·(n−1)/(2n·mean) of non-negative values; ``mean_fraction`` of ε
    pays for the mean (local/secure: one randomized-rounding bit per user with binary RR; central:
    discrete Laplace).  The ratio is slightly biased; the stderr is the delta method (the rounding's
    variance is bounded by its worst case at the estimated mean, so it is slightly conservative); the
    interval is the Laplace law's (central) or Fieller's for the ratio (local, secure:
    :func:`~privstats.stats.pairwise.gini.fieller_interval`).

    >>> import numpy as np, privstats
    >>> x = np.random.default_rng(0).exponential(1.0, 100000).clip(0, 10)
    >>> est = privstats.gini_coefficient(x, epsilon=2.0, bounds=(0, 10), model="central", rng=1)
    >>> bool(abs(est.value - 0.5) < 0.02)
    True
    """
    epsilon = check_epsilon(epsilon)
    model = check_model("gini_coefficient", _resolve_model(model, method))
    check_choice(postprocess, "postprocess", ("clip", "none"))
    lo, hi = check_bounds(bounds)
    if lo < 0:
        raise ValueError(f"bounds must be non-negative for the Gini coefficient, got {bounds!r}")
    if not (isinstance(mean_fraction, (int, float)) and 0 < mean_fraction < 1):
        raise ValueError(f"mean_fraction must be in (0, 1), got {mean_fraction!r}")
    xs = as_float_array(x, "x", bounds=(lo, hi))
    c = Call.of("gini_coefficient", locals(), n=xs.size)
    u = choose("gini_coefficient", model, "auto")
    return finish(u.run(c), c, protocol=u.protocol, support=(0.0, 1.0))


def collision_probability(
    x,
    *,
    epsilon: float,
    domain_size: int,
    delta: float = 0.0,
    model: str | None = None,
    method: str = "auto",
    oracle: str = "auto",
    P: int | None = None,
    zeta=None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    backend: str = "simulated",
) -> Estimate:
    """Private collision probability Σ_{i<j} I[x_i = x_j]/C(n, 2) of values in ``[0, domain_size)``;
    ``details["renyi2_entropy"]`` is −ln of the estimate clipped into (0, 1].

    >>> import numpy as np, privstats
    >>> x = np.random.default_rng(0).integers(0, 4, 100000)
    >>> est = privstats.collision_probability(x, epsilon=2.0, domain_size=4, rng=1)
    >>> bool(abs(est.value - 0.25) < 5 * est.stderr)
    True
    """
    epsilon, delta, model = _validate(
        "collision_probability", epsilon, delta, model, method, postprocess, backend, P=P, oracle=oracle
    )
    d = check_positive_int(domain_size, "domain_size", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES)
    xs = as_domain_values(x, d, "x")
    n = _at_least_two_users(xs.size)
    c = Call.of("collision_probability", locals())
    u = choose("collision_probability", model, method)
    release = u.run(c)
    release.details["renyi2_entropy"] = -math.log(min(max(release.value, 1e-12), 1.0))
    return finish(release, c, protocol=u.protocol, support=(0.0, 1.0))


def ustatistic(
    x,
    kernel,
    *,
    epsilon: float,
    bounds=None,
    kernel_range=None,
    delta: float = 0.0,
    model: str | None = None,
    method: str = "auto",
    bins: int | None = None,
    quantization: str = "avg",
    lipschitz: float = 1.0,
    oracle: str = "auto",
    P: int | None = None,
    zeta=None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    backend: str = "simulated",
) -> Estimate:
    """Private U-statistic Σ_{i<j} f(x_i, x_j)/C(n, 2) of a symmetric kernel.

    ``kernel``: a vectorized callable ``f(x, y)`` on the original values (needs public ``bounds``;
    ``kernel_range`` (lo, hi) for the secure and central models), or a k×k matrix on integer values
    in ``[0, k)`` (its range is taken from the matrix).  The local model quantises a callable into
    ``bins`` bins with the ``quantization`` ("avg", "mid", "center") matrix; ``lipschitz`` (on
    [0, 1]) drives the default number of bins.  ``backend="spu"`` (secure pairs, real two-party
    computation) takes ``kernel`` as a name from ``privstats.ustat.mpc.SPECS`` (e.g. ``"absdiff"``
    on values in [0, 1], ``"greater_half"``, ``"equal"``), since only those are compiled by the parties.

    >>> import numpy as np, privstats
    >>> x = np.random.default_rng(0).random(100000)
    >>> est = privstats.ustatistic(x, lambda a, b: (a - b) ** 2 / 2, epsilon=1.0, bounds=(0, 1),
    ...                            kernel_range=(0, 0.5), model="secure", rng=1)
    >>> bool(abs(est.value - 1 / 12) < 5 * est.stderr)
    True
    """
    opts = {"P": P, "oracle": oracle, "bins": bins, "quantization": quantization}
    epsilon, delta, model = _validate(
        "ustatistic", epsilon, delta, model, method, postprocess, backend, **opts
    )
    lipschitz = check_real(lipschitz, "lipschitz")
    if lipschitz <= 0:
        raise ValueError(f"lipschitz must be > 0, got {lipschitz!r}")
    if isinstance(kernel, str):
        return _ustatistic_named(x, kernel, epsilon, backend, P, zeta, rng, postprocess)
    xs, f, A, kr, lo, hi = _kernel_inputs(x, kernel, bounds, kernel_range, model)
    n = _at_least_two_users(xs.size)
    return _run_unit(Call.of("ustatistic", locals()), kr)


def _ustatistic_named(x, name, epsilon, backend, P, zeta, rng, postprocess) -> Estimate:
    """ustatistic with a kernel named from ``privstats.ustat.mpc.SPECS`` (secure pairs, SPU backend)."""
    release, n, kr = ustatistic_named_kernel(x, name, epsilon, backend, P, zeta, rng)
    c = Call(
        statistic="ustatistic", model="secure", epsilon=epsilon, n=n, postprocess=postprocess, bounds=None
    )
    return finish(release, c, protocol="ustat-pairs", support=kr)


def _kernel_inputs(x, kernel, bounds, kernel_range, model):
    """(values, kernel callable, kernel matrix or None, kernel range, lo, hi) of a callable kernel on
    values in ``bounds`` or of a k×k matrix on values in [0, k)."""
    kr: tuple[float, float] | None
    lo: float | None
    hi: float | None
    if callable(kernel):
        lo, hi = check_bounds(bounds)
        xs = as_float_array(x, "x", bounds=(lo, hi))
        f: Callable = kernel
        _probe_kernel(f, lo, hi)
        A = None
        if kernel_range is not None:
            kr = check_bounds(kernel_range, "kernel_range")
        elif model == "local":
            kr = None
        else:
            raise ValueError(
                "kernel_range (lo, hi) is required for a callable kernel in the secure and central models"
            )
    else:
        lo = hi = None
        A = matrix = K.check_kernel_matrix(kernel)
        xs = as_domain_values(x, matrix.shape[0], "x")
        kr = (
            (float(matrix.min()), float(matrix.max()))
            if matrix.max() > matrix.min()
            else (float(matrix.min()), float(matrix.min()) + 1.0)
        )
        f = lambda a_, b_: matrix[a_.astype(np.int64), b_.astype(np.int64)]  # noqa: E731
    return xs, f, A, kr, lo, hi
