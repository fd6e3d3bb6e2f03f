"""Pairwise statistics (degree-2 U-statistics) under local DP, pairwise 2PC, or a trusted curator.

``model`` picks the trust model and ``method`` the protocol (Bell et al. 2020):

=========  =====================  ==============================================================
model      method                 protocol
=========  =====================  ==============================================================
local      ``tree`` (AUC only)    B: hierarchical histograms with the Hadamard level oracle
local      ``quantized``          A: quantise, one oracle report per user (k-RR / OUE / HR)
secure     ``pairs``              C: P random permutations, pairs of users add noise in 2PC
secure     ``all-pairs``          every pair, advanced composition (simulated baseline)
central    ``exact``              exact statistic + discrete Laplace (replace-one sensitivity)
=========  =====================  ==============================================================

``model`` defaults to ``"central"`` (as every statistic; :func:`privstats.plan` compares the
models).  ``method="auto"`` takes the protocol and parameters with the smallest predicted
error (bias² + variance) from the planner's registered predictors (below, next to each
protocol's code).  Values are kept in the statistic's range (AUC, collision probability in
[0, 1], tau in [−1, 1], Gini mean difference in [0, hi − lo]); ``postprocess="none"`` keeps the
raw unbiased value, which is always in ``details["unbiased"]``.  ``rng=None``
runs the deployment path (client encoding and pair noise from the OS CSPRNG with
exact samplers); a seed or Generator runs the vectorized simulation, which has the
same distribution.  Every result is an :class:`~privstats.Estimate` whose ``params``
show the chosen bins / depth / threshold / P.

>>> import numpy as np, privstats
>>> g = np.random.default_rng(0)
>>> y = np.r_[np.ones(50000), np.zeros(50000)]
>>> s = np.r_[g.beta(3, 2, 50000), g.beta(2, 3, 50000)]
>>> est = privstats.auc(y, s, epsilon=1.0, model="local", rng=1)
>>> est.protocol, bool(abs(est.value - 0.756) < 0.05)
('ustat-quantized', True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from privstats.estimate import Estimate, constrain
from privstats.local import BinaryRR
from privstats.plan import DEFAULT_MODEL, Option, check_model, register, warn_if_useless
from privstats.privacy.guarantees import ApproxDP, PureDP
from privstats.privacy.randomness import RNGLike, as_generator
from privstats.privacy.samplers import gaussian
from privstats.ustat import central as C
from privstats.ustat import kernels as K
from privstats.ustat.pairs import PairsProtocol, combination_variance
from privstats.ustat.params import (
    _oue_variance_bound,
    choose_bins,
    choose_depth,
    choose_P,
    grr_variance_bound,
)
from privstats.ustat.quantized import (
    DENSE_MAX_CATEGORIES,
    MECHANISM_EPSILON_MAX,
    ORACLES,
    STRUCTURED_MAX_CATEGORIES,
    QuantizedUStat,
)
from privstats.ustat.tree import DISCARDS, SPLITTINGS, TreeAUC, advanced_level_epsilon
from privstats.validation import (
    MAX_CELLS,
    as_binary_labels,
    as_domain_values,
    as_float_array,
    check_bounds,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
    check_power_of_two,
    check_real,
    check_same_length,
)

__all__ = [
    "auc",
    "collision_probability",
    "gini_coefficient",
    "gini_mean_difference",
    "kendall_tau",
    "ustatistic",
]

MODELS = ("local", "secure", "central")
METHODS = {
    "local": ("auto", "tree", "quantized"),
    "secure": ("auto", "pairs", "all-pairs"),
    "central": ("auto", "exact"),
}


# ---------------------------------------------------------------------------------------------
# shared plumbing
# ---------------------------------------------------------------------------------------------
def _resolve_model(model, method, local_options=()):
    """``model=None``: the model a named ``method`` belongs to, ``"local"`` when options only the
    local protocols use are given (bins, oracle, splitting, ...), else the default ``"central"``."""
    if model is not None:
        return model
    owners = [m for m, ms in METHODS.items() if method != "auto" and method in ms]
    if len(owners) == 1:
        return owners[0]
    return "local" if any(v is not None for v in local_options) else DEFAULT_MODEL


def _common(epsilon, delta, model, method, statistic="ustatistic", postprocess="clip", local_options=()):
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=True)
    model = check_model(statistic, _resolve_model(model, method, local_options))
    check_choice(method, "method", METHODS[model])
    check_choice(postprocess, "postprocess", ("clip", "none"))
    return epsilon, delta, model


def _options(*, P=None, oracle="auto", bins=None, quantization="avg") -> None:
    """Protocol options are checked whatever the model, so a bad value is never silently ignored."""
    if P is not None:
        check_positive_int(P, "P")
    if oracle != "auto":
        check_choice(oracle, "oracle", ORACLES)
    if bins is not None:
        check_positive_int(bins, "bins", minimum=2)
    check_choice(quantization, "quantization", K.QUANTISATIONS)


def _simulating(rng) -> bool:
    return rng is not None


def _guarantee(epsilon, delta):
    return ApproxDP(epsilon, delta) if delta > 0 else PureDP(epsilon)


def _estimate(
    value,
    var,
    *,
    epsilon,
    delta=0.0,
    model,
    protocol,
    params,
    n,
    messages=1.0,
    bits=None,
    details=None,
    support=None,
    postprocess="clip",
    statistic=None,
    bounds=None,
) -> Estimate:
    """The Estimate, projected into ``support`` (raw value in ``details["unbiased"]``); a central
    release with one Laplace noise gets its exact law for ``ci``."""
    stderr = None if var is None else math.sqrt(max(float(var), 0.0))
    details = dict(details or {})
    if protocol == "central-exact" and stderr is not None and "ci_law" not in details:
        details["ci_law"] = {"laplace_scale": stderr / math.sqrt(2), "normal_sd": 0.0}
    est = Estimate(
        value=float(value),
        stderr=stderr,
        guarantee=_guarantee(epsilon, delta),
        model=model,
        protocol=protocol,
        params=params,
        n=n,
        messages_per_user=messages,
        bits_per_user=bits,
        neighbours="replace",
        details=details,
    )
    if statistic is not None:
        warn_if_useless(
            statistic, stderr, n=n, epsilon=epsilon, model=model, protocol=protocol, bounds=bounds
        )
    if support is None:
        return est
    return constrain(est, support[0], support[1], postprocess=postprocess)


def _pick_oracle(oracle, n, epsilon, k):
    if oracle == "auto":
        n = max(n, 2)
        return "grr" if grr_variance_bound(n, epsilon, k) <= _oue_variance_bound(n, epsilon, k) else "oue"
    return check_choice(oracle, "oracle", ORACLES)


def _pick_kernel_oracle(oracle, n, epsilon, A):
    """``oracle="auto"`` for a one-sample kernel: k-RR or OUE, whichever has the smaller exact variance
    at the uniform histogram (public).  The generic bound of :func:`_pick_oracle` ignores the kernel:
    k-RR's report estimates sum to 1, so a kernel's constant part costs it no noise while OUE pays for
    it (Gini mean difference at n = 2·10⁴, ε = 1, 15 bins: stderr 0.010 with k-RR, 0.036 with OUE)."""
    k = A.k if isinstance(A, K.KernelOperator) else np.shape(A)[0]
    if oracle != "auto" or (not isinstance(A, K.KernelOperator) and k > 1024):
        return _pick_oracle(oracle, n, epsilon, k)
    h = np.full(k, max(n, 2) / k)
    scored = [(QuantizedUStat(A, epsilon, o).conditional_variance(h), o) for o in ("grr", "oue")]
    return min(scored)[1]


def _collect(proto, bins, rng, g=None):
    """Oracle state of one population: client encoding (CSPRNG) or vectorized simulation."""
    if _simulating(rng):
        return proto.simulate(bins, g)
    return proto.aggregate(proto.encode_batch(bins, rng=None))


def _run_quantized(A, bins, epsilon, oracle, rng, extra_matrices=()):
    g = as_generator(rng) if _simulating(rng) else None
    proto = QuantizedUStat(A, epsilon, oracle)
    state = _collect(proto, bins, rng, g)
    value, var, _ = proto.estimate(state)
    extras = [proto.estimate(state, B) for B in extra_matrices]
    return proto, value, var, extras


PAIR_BACKENDS = ("simulated", "spu")


def _backend_model(model, backend):
    """``backend="spu"`` implies the secure model when ``model`` is not given."""
    check_choice(backend, "backend", PAIR_BACKENDS)
    return "secure" if model is None and backend != "simulated" else model


def _check_backend(backend, model, method):
    if backend != "simulated" and (model != "secure" or method == "all-pairs"):
        raise ValueError(f"backend={backend!r} runs Protocol C: use model='secure', method='pairs'")


def _pair_backend(backend, spu_kernel, epsilon, P, mechanism, **kw):
    """None (simulated pairs) or the SPU two-party backend for a built-in kernel (privstats.ustat.mpc)."""
    check_choice(backend, "backend", PAIR_BACKENDS)
    if backend == "simulated":
        return None
    if spu_kernel is None:
        raise ValueError(
            "backend='spu' runs the built-in kernels only (auc, kendall_tau, gini_mean_difference, "
            "collision_probability, or ustatistic with a kernel name from privstats.ustat.mpc.SPECS)"
        )
    from privstats.ustat.mpc import SpuTwoParty

    return SpuTwoParty(spu_kernel, pair_epsilon=epsilon / P, mechanism=mechanism, **kw)


def _backend_info(backends, P):
    """(δ, details) of real two-party backends: δ adds up over the P pairs of a user (basic composition)."""
    real = [b for b in backends if b is not None]
    if not real:
        return 0.0, {}
    return P * sum(b.delta for b in real), {"backend": real[0].details}


def _run_pairs(kernel, x, epsilon, P, kernel_range, mechanism, rng, backend=None):
    proto = PairsProtocol(
        kernel, epsilon=epsilon, P=P, kernel_range=kernel_range, mechanism=mechanism, backend=backend
    )
    g = as_generator(rng) if _simulating(rng) else None
    pairs = proto.make_pairs(len(x), g)
    outputs = proto.backend.compute(x[pairs[:, 0]], x[pairs[:, 1]], g)
    value, var, info = proto.estimate(outputs, pairs, n=len(x))
    return proto, value, var, info


def _all_pairs_noise(width, epsilon, delta, pairs_per_user, n_pairs, rng):
    """Gaussian (CLT) draw of the mean of n_pairs Laplace(width/ε₀) noises; ε₀ from advanced composition
    over the ``pairs_per_user`` pairs each user is in (all-pairs baseline, simulated: never enumerated).

    This is a simulation of the baseline's error, not a release mechanism, so it needs a seeded ``rng``
    and draws with the simulation-only floating-point sampler.
    """
    if delta <= 0:
        raise ValueError("method='all-pairs' uses advanced composition and needs delta > 0")
    if rng is None:
        raise ValueError(
            "method='all-pairs' is a simulated baseline (its noise is drawn from the exact variance, "
            "pairs are never enumerated): pass rng as a seed; use method='pairs' on real data"
        )
    eps0 = advanced_level_epsilon(epsilon, int(pairs_per_user), delta)
    std = math.sqrt(2 * (width / eps0) ** 2 / n_pairs)
    return float(gaussian(std, rng=rng)), std, eps0


def _resolve_P(P, epsilon, n, kernel_range, mechanism, zeta):
    if P is None:
        z1, z2 = (None, None) if zeta is None else zeta
        return choose_P(epsilon, n=n, kernel_range=kernel_range, zeta1=z1, zeta2=z2, mechanism=mechanism)
    # P permutations make P·n/2 pairs, each a 2PC evaluation: cap the pairs' arrays at MAX_CELLS
    return check_positive_int(P, "P", maximum=max(1, MAX_CELLS // max(n, 1)))


def _check_dense(k: int, name: str) -> int:
    """User kernels: Protocol A keeps a dense k×k matrix."""
    if k > DENSE_MAX_CATEGORIES:
        raise ValueError(
            f"{name}: Protocol A keeps a dense k×k kernel matrix and k={k} categories exceed "
            f"{DENSE_MAX_CATEGORIES} ({8 * k * k / 1e9:.0f} GB); use fewer bins"
            + (" or method='tree'" if name == "domain_size" else "")
        )
    return k


def _check_structured(k: int, name: str, oracle: str) -> int:
    """AUC, Gini, Kendall and collision kernels run in O(k) with k-RR/OUE; Hadamard response (no
    structured variance yet) and user kernels stay on the dense k×k path."""
    if oracle == "hr":
        return _check_dense(k, name)
    if k > STRUCTURED_MAX_CATEGORIES:
        raise ValueError(
            f"{name}: Protocol A supports at most {STRUCTURED_MAX_CATEGORIES} categories, got k={k}; "
            "use fewer bins" + (" or method='tree'" if name == "domain_size" else "")
        )
    return k


def _probe_kernel(f, lo, hi):
    """A user kernel must be a vectorized f(x, y) returning finite values of the broadcast shape."""
    a, b = np.array([lo, hi, lo]), np.array([hi, lo, lo])
    try:
        out = np.broadcast_to(np.asarray(f(a, b), dtype=np.float64), a.shape)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"kernel must be a vectorized callable f(x, y) returning one value per pair: {exc}"
        ) from None
    if not np.all(np.isfinite(out)):
        raise ValueError("kernel returned NaN or infinite values")


def _quantization(quantization):
    return check_choice(quantization, "quantization", K.QUANTISATIONS)


# ---------------------------------------------------------------------------------------------
# AUC
# ---------------------------------------------------------------------------------------------
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
    model = _backend_model(model, backend)
    epsilon, delta, model = _common(
        epsilon,
        delta,
        model,
        method,
        "auc",
        postprocess,
        (
            domain_size,
            smoothing,
            None if splitting == "users" else splitting,
            None if discard == "half" else discard,
            a,
            None if oracle == "auto" else oracle,
        ),
    )
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle)
    if a is not None:
        check_real(a, "a")
    labels = as_binary_labels(y_true, "y_true")
    lo, hi = check_bounds(bounds)
    scores = as_float_array(y_score, "y_score", bounds=(lo, hi))
    check_same_length(y_true=labels, y_score=scores)
    pos, neg = scores[labels], scores[~labels]
    n_pos, n_neg, n = pos.size, neg.size, scores.size
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
    if P is not None:
        check_positive_int(P, "P", maximum=max(1, MAX_CELLS // n))

    if model == "central":
        t = ties or "half"
        sens = 1.0 / min(n_pos, n_neg)
        value, std = C.central_release(C.exact_auc(pos, neg, t), epsilon=epsilon, sensitivity=sens, rng=rng)
        return _estimate(
            value,
            std**2,
            epsilon=epsilon,
            model=model,
            protocol="central-exact",
            params={"ties": t, "sensitivity": sens},
            n=n,
            messages=0.0,
            bits=0.0,
            support=(0.0, 1.0),
            postprocess=postprocess,
            statistic="auc",
        )

    if model == "secure":
        t = ties or "half"
        width = 1.0
        if method == "all-pairs":
            noise, std, eps0 = _all_pairs_noise(width, epsilon, delta, max(n_pos, n_neg), n_pos * n_neg, rng)
            return _estimate(
                C.exact_auc(pos, neg, t) + noise,
                std**2,
                epsilon=epsilon,
                delta=delta,
                model=model,
                protocol="ustat-all-pairs",
                params={"ties": t, "pair_epsilon": eps0},
                n=n,
                messages=float(max(n_pos, n_neg)),
                details={"simulated_noise": "normal (CLT)"},
                support=(0.0, 1.0),
                postprocess=postprocess,
                statistic="auc",
            )
        mech = "rr" if t == "zero" else "laplace"
        P = _resolve_P(P, epsilon, min(n_pos, n_neg) * 2, (0.0, 1.0), mech, zeta)
        kernel = (
            (lambda a_, b_: (a_ > b_) + 0.5 * (a_ == b_)) if t == "half" else (lambda a_, b_: (a_ > b_) * 1.0)
        )
        be = _pair_backend(backend, "greater_half" if t == "half" else "greater", epsilon, P, mech)
        proto: Any = PairsProtocol(
            kernel, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0), mechanism=mech, backend=be
        )
        g = as_generator(rng) if _simulating(rng) else None
        pairs = proto.make_bipartite_pairs(n_pos, n_neg, g)
        outputs = proto.backend.compute(pos[pairs[:, 0]], neg[pairs[:, 1]], g)
        value, var, info = proto.estimate_two_sample(outputs, pairs, n_pos=n_pos, n_neg=n_neg)
        d_be, det_be = _backend_info([be], P)
        return _estimate(
            value,
            var,
            epsilon=epsilon,
            delta=d_be,
            model=model,
            protocol="ustat-pairs",
            params={"ties": t, **proto.params},
            n=n,
            messages=float(P),
            details={**info, **det_be},
            support=(0.0, 1.0),
            postprocess=postprocess,
            statistic="auc",
        )

    # local model
    if method == "auto" and (splitting != "users" or discard != "half" or a is not None):
        method = "tree"  # options only Protocol B has
    if method == "auto":
        method = _auto_local_auc(
            n_pos, n_neg, epsilon, delta, domain_size, splitting, ties, oracle, smoothing
        )
    if method == "tree" and smoothing is not None:
        raise ValueError("smoothing applies to Protocol A (method='quantized'), not to method='tree'")
    if method == "tree":
        t = ties or "half"
        if splitting == "advanced":
            check_delta(delta)
        depth = (
            round(math.log2(check_power_of_two(domain_size, "domain_size")))
            if domain_size
            else choose_depth(n_pos, n_neg, epsilon, splitting=splitting, delta=delta)
        )
        if splitting == "users" and min(n_pos, n_neg) < depth:
            raise ValueError(f"each class needs at least depth={depth} users for splitting='users'")
        proto = TreeAUC(depth, epsilon, delta=delta, splitting=splitting, discard=discard, a=a, ties=t)
        bins_p, bins_n = K.quantize(pos, (lo, hi), 2**depth), K.quantize(neg, (lo, hi), 2**depth)
        if _simulating(rng):
            g = as_generator(rng)
            sp, sn = proto.simulate(bins_p, g), proto.simulate(bins_n, g)
        else:

            def client_state(bins):  # the aggregator assigns levels (CSPRNG); each client encodes
                levels = proto.assign_levels(bins.size) if splitting == "users" else None
                return proto.aggregate(proto.encode_batch(bins, levels))

            sp, sn = client_state(bins_p), client_state(bins_n)
        value, var, det = proto.estimate(sp, sn)
        d_eff = delta if splitting == "advanced" else 0.0
        return _estimate(
            value,
            var,
            epsilon=epsilon,
            delta=d_eff,
            model="local",
            protocol="ustat-tree",
            params={
                "domain_size": 2**depth,
                "depth": depth,
                "splitting": splitting,
                "discard": discard,
                "a": det["a"],
                "ties": t,
            },
            n=n,
            messages=float(proto.messages_per_user),
            bits=proto.bits_per_user,
            details={**det, "stderr_note": "plug-in, ignores the data-dependent pruning"},
            support=(0.0, 1.0),
            postprocess=postprocess,
            statistic="auc",
        )
    t = ties or "half"
    sm = smoothing or _default_smoothing(t, domain_size)
    opt = _plan_auc_quantized(
        n=n, epsilon=epsilon, n_pos=n_pos, domain_size=domain_size, oracle=oracle, ties=t, smoothing=sm
    )
    k, orc = (opt.params["domain_size"], opt.params["oracle"]) if opt is not None else (domain_size, oracle)
    if k is None:
        raise ValueError("domain_size: no quantised AUC protocol fits these parameters; pass domain_size")
    proto = QuantizedUStat(K.AUCOperator(_check_structured(k, "domain_size", orc), t, sm), epsilon, orc)
    bins_p, bins_n = K.quantize(pos, (lo, hi), k), K.quantize(neg, (lo, hi), k)
    g = as_generator(rng) if _simulating(rng) else None
    sp, sn = _collect(proto, bins_p, rng, g), _collect(proto, bins_n, rng, g)
    value, var = proto.estimate_two_sample(sp, sn)
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        model="local",
        protocol="ustat-quantized",
        params={"domain_size": k, "oracle": orc, "ties": t, **({"smoothing": sm} if sm != "none" else {})},
        n=n,
        bits=proto.bits_per_user,
        support=(0.0, 1.0),
        postprocess=postprocess,
        statistic="auc",
    )


def _default_smoothing(ties, domain_size=None):
    """The linear correction on the automatic grid (continuous scores); none on a given grid."""
    return "linear" if ties == "half" and not domain_size else "none"


def _auc_linear_family_bias(k):
    """Largest quantisation bias of the binned AUC (ties ½, no smoothing) when the pooled scores are
    uniform on the bounds and the class densities linear: f± = 1 ± c(2x − 1), AUC = ½ + c/3, and the
    pairs sharing a bin lose exactly (AUC − ½)/k² (per bin (f⁺′f⁻ − f⁺f⁻′)h³/12), at most 1/(3k²) (c = 1)."""
    return 1.0 / (3 * k**2)


@functools.lru_cache(maxsize=256)
def _auc_bins(n_pos, n_neg, epsilon, oracle, ties, smoothing="none", k_max=128):
    """Bins and oracle for Protocol A's AUC: k (and k-RR / OUE for ``auto``) minimising the exact
    variance at uniform class histograms plus the squared worst-case bias of the *uncorrected* binned
    AUC over linear class densities (:func:`_auc_linear_family_bias`).  Without smoothing this is the
    minimax MSE over that family; with ``smoothing="linear"`` (unbiased there) the same term guards
    against curved densities, whose residual bias public parameters cannot bound."""
    oracles = ("grr", "oue") if oracle == "auto" else (check_choice(oracle, "oracle", ORACLES),)
    best, best_score = (2, oracles[0]), math.inf
    for orc in oracles:
        for k in range(2, k_max + 1):
            proto = QuantizedUStat(K.AUCOperator(k, ties, smoothing), epsilon, orc)
            var = proto.two_sample_variance(np.full(k, n_pos / k), np.full(k, n_neg / k))
            score = var + _auc_linear_family_bias(k) ** 2
            if score < best_score:
                best, best_score = (k, orc), score
    return best


def _auto_local_auc(n_pos, n_neg, epsilon, delta, domain_size, splitting, ties, oracle, smoothing=None):
    """The local protocol (Protocol A or B) with the smaller predicted MSE, from the planner."""
    from privstats.plan import plan

    best = plan(
        "auc",
        n=n_pos + n_neg,
        epsilon=epsilon,
        delta=delta,
        model="local",
        warn=False,
        n_pos=n_pos,
        domain_size=domain_size,
        splitting=splitting,
        ties=ties,
        oracle=oracle,
        smoothing=smoothing,
    ).best
    return "tree" if best.protocol == "ustat-tree" else "quantized"


# ---------------------------------------------------------------------------------------------
# planner registrations: each protocol's predicted error and cost, from public parameters only
# ---------------------------------------------------------------------------------------------
def _classes(n, n_pos):
    n_pos = n // 2 if n_pos is None else int(n_pos)
    if not 1 <= n_pos < n:
        return None
    return n_pos, n - n_pos


def _central_std(sensitivity, epsilon):
    from privstats.central import real_noise_scale

    return real_noise_scale(sensitivity, epsilon, sensitivity / 2**20)[1]


@register("auc", "central", "central-exact")
def _plan_auc_central(*, n, epsilon, n_pos=None, **_):
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    sens = 1.0 / min(cls)
    return Option("central", "central-exact", {"sensitivity": sens}, _central_std(sens, epsilon))


def _pairs_option(P: int, stderr: float, note: str = "") -> Option:
    """The secure model's pairs protocol (2PC sessions: no fixed bit cost) with P permutations."""
    return Option(
        "secure",
        "ustat-pairs",
        {"P": P},
        stderr,
        messages_per_user=float(P),
        bits_per_user=math.nan,
        note=note,
    )


@register("auc", "secure", "ustat-pairs")
def _plan_auc_pairs(*, n, epsilon, n_pos=None, zeta=None, P=None, **_):
    """Protocol C (bipartite pairs, Laplace in 2PC); ζ₂ = 1/4 (the kernel's worst-case variance)."""
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    n_pos, n_neg = cls
    P = _resolve_P(P, epsilon, min(cls) * 2, (0.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(
        lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0), mechanism="laplace"
    )
    z2 = 0.25 if zeta is None else float(zeta[1])
    var = proto.two_sample_variance(n_pos, n_neg, 0.0, 0.0, z2)
    return _pairs_option(P, math.sqrt(var), note="pairs of users run 2PC; ζ worst case")


@register("auc", "local", "ustat-quantized")
def _plan_auc_quantized(
    *, n, epsilon, n_pos=None, domain_size=None, oracle="auto", ties=None, smoothing=None, **_
):
    """Protocol A: exact variance at uniform class histograms (the planner's public assumption) plus
    the largest quantisation bias over class densities linear on the bounds (pooled scores uniform):
    0 with ``smoothing="linear"`` (exact there), 1/(3k²) without (:func:`_auc_linear_family_bias`).
    Ties ``"zero"`` count the same-bin pairs 0: bias 1/(2k) at uniform scores."""
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    n_pos, n_neg = cls
    t = ties or "half"
    sm = smoothing or _default_smoothing(t, domain_size)
    if domain_size:
        k, orc = int(domain_size), _pick_oracle(oracle, min(cls), epsilon, int(domain_size))
    else:
        k, orc = _auc_bins(n_pos, n_neg, epsilon, oracle, t, sm)
    if k > (DENSE_MAX_CATEGORIES if orc == "hr" else STRUCTURED_MAX_CATEGORIES):
        return None
    proto = QuantizedUStat(K.AUCOperator(k, t, sm), epsilon, orc)
    # at huge ε the exact variance is ~0 and can cancel to a tiny negative number
    var = max(proto.two_sample_variance(np.full(k, n_pos / k), np.full(k, n_neg / k)), 0.0)
    # + the data's own spread of the pairs sharing a bin around their ½ (Mann–Whitney null variance of
    # m⁺m⁻(m⁺ + m⁻ + 1)/12 per bin, m± ≈ n±/k): the binned AUC differs from the exact one by it
    var += (n / k + 1) / (12 * k * n_pos * n_neg)
    bias = 0.0 if sm == "linear" else (_auc_linear_family_bias(k) if t == "half" else 0.5 / k)
    return Option(
        "local",
        "ustat-quantized",
        {"domain_size": k, "oracle": orc, **({"smoothing": sm} if sm != "none" else {})},
        math.sqrt(var + bias**2),
        bias=bias,
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
        note=f"bias 0 for linear class densities, up to {_auc_linear_family_bias(k):.2g} uncorrected"
        if sm == "linear"
        else "worst-case quantisation bias over linear class densities",
    )


@register("auc", "local", "ustat-tree")
def _plan_auc_tree(*, n, epsilon, delta=0.0, n_pos=None, domain_size=None, splitting="users", **_):
    """Protocol B: C·α²·n/(n⁺n⁻) (one explored path per class and level) + the largest tie bias over
    linear class densities, 1/(3d²) (:func:`_auc_linear_family_bias`; the tree has no smoothing)."""
    cls = _classes(n, n_pos)
    if cls is None or (domain_size is not None and domain_size & (domain_size - 1)):
        return None
    if splitting == "advanced" and delta <= 0:
        return None
    n_pos, n_neg = cls
    depth = (
        round(math.log2(domain_size))
        if domain_size
        else choose_depth(n_pos, n_neg, epsilon, splitting=splitting, delta=delta)
    )
    if splitting == "users" and min(cls) < depth:
        return None
    tree = TreeAUC(depth, epsilon, delta=delta if splitting == "advanced" else 0.0, splitting=splitting)
    var = tree.C * depth**2 * (n_pos + n_neg) / (n_pos * n_neg)
    bias = _auc_linear_family_bias(2**depth)
    return Option(
        "local",
        "ustat-tree",
        {"domain_size": 2**depth, "depth": depth, "splitting": splitting},
        math.sqrt(var + bias**2),
        bias=bias,
        messages_per_user=float(tree.messages_per_user),
        bits_per_user=float(tree.bits_per_user),
        delta=delta if splitting == "advanced" else 0.0,
    )


@register("kendall_tau", "central", "central-exact")
def _plan_tau_central(*, n, epsilon, variant="b", **_):
    """tau-a: Laplace of sensitivity 4/n; tau-b at tau ≈ 0: the tau-a part at ε/3 dominates."""
    eps = epsilon if variant == "a" else epsilon / 3
    return Option("central", "central-exact", {"variant": variant}, _central_std(4.0 / n, eps))


@register("kendall_tau", "secure", "ustat-pairs")
def _plan_tau_pairs(*, n, epsilon, variant="b", P=None, zeta=None, **_):
    eps = epsilon if variant == "a" else epsilon / 2
    P = _resolve_P(P, eps, n, (-1.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=eps, P=P, kernel_range=(-1.0, 1.0))
    z1, z2 = (0.0, 1.0) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return Option(
        "secure",
        "ustat-pairs",
        {"variant": variant, "P": P},
        math.sqrt(proto.variance(n, z1, z2)),
        messages_per_user=float(P),
        bits_per_user=math.nan,
    )


@register("kendall_tau", "local", "ustat-quantized")
def _plan_tau_local(*, n, epsilon, bins=None, oracle="auto", **_):
    """Protocol A on the k×k grid: exact variance at a uniform product histogram (independence)."""
    k = bins or _kendall_bins(n, epsilon)
    orc = _pick_oracle(oracle, n, epsilon, k * k)
    if k * k > (DENSE_MAX_CATEGORIES if orc == "hr" else STRUCTURED_MAX_CATEGORIES):
        return None
    proto = QuantizedUStat(K.KendallOperator(k, k), epsilon, orc)
    var = proto.conditional_variance(np.full(k * k, n / (k * k)))
    nontie = 1 - 1 / k  # tau-b divides by √(non-tie x · non-tie y) = 1 − 1/k
    return Option(
        "local",
        "ustat-quantized",
        {"bins": k, "oracle": orc},
        math.sqrt(var) / nontie,
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
    )


@register("gini_mean_difference", "central", "central-exact")
def _plan_gmd_central(*, n, epsilon, bounds=None, **_):
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    return Option("central", "central-exact", {}, _central_std(2 * w / n, epsilon))


@register("gini_mean_difference", "secure", "ustat-pairs")
def _plan_gmd_pairs(*, n, epsilon, bounds=None, P=None, zeta=None, **_):
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    P = _resolve_P(P, epsilon, n, (0.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0))
    z1, z2 = (0.0, 0.25) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(P, w * math.sqrt(proto.variance(n, z1, z2)))


@register("gini_mean_difference", "local", "ustat-quantized")
def _plan_gmd_local(*, n, epsilon, bounds=None, bins=None, oracle="auto", quantization="avg", **_):
    """Protocol A: exact variance at the uniform histogram (the planner's assumption)."""
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    k = bins or choose_bins(n, epsilon, lipschitz=1.0, assumption="kernel")
    if k > (DENSE_MAX_CATEGORIES if oracle == "hr" else STRUCTURED_MAX_CATEGORIES):
        return None
    op = K.GiniOperator(k, quantization)
    orc = _pick_kernel_oracle(oracle, n, epsilon, op)
    proto = QuantizedUStat(op, epsilon, orc)
    var = proto.conditional_variance(np.full(k, n / k))
    return Option(
        "local",
        "ustat-quantized",
        {"bins": k, "oracle": orc},
        w * math.sqrt(var),
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
    )


@register("collision_probability", "central", "central-exact")
def _plan_collision_central(*, n, epsilon, **_):
    return Option("central", "central-exact", {}, _central_std(2.0 / n, epsilon))


@register("collision_probability", "secure", "ustat-pairs")
def _plan_collision_pairs(*, n, epsilon, P=None, zeta=None, domain_size=None, **_):
    P = _resolve_P(P, epsilon, n, (0.0, 1.0), "rr", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0), mechanism="rr")
    c = 1.0 / domain_size if domain_size else 0.5
    z1, z2 = (0.0, c * (1 - c)) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(P, math.sqrt(proto.variance(n, z1, z2)))


@register("collision_probability", "local", "ustat-quantized")
def _plan_collision_local(*, n, epsilon, domain_size=None, oracle="auto", **_):
    if not domain_size:
        return None
    d = int(domain_size)
    if d > STRUCTURED_MAX_CATEGORIES:
        return None
    orc = _pick_kernel_oracle(oracle, n, epsilon, K.CollisionOperator(d))
    if d > (DENSE_MAX_CATEGORIES if orc == "hr" else STRUCTURED_MAX_CATEGORIES):
        return None
    proto = QuantizedUStat(K.CollisionOperator(d), epsilon, orc)
    var = proto.conditional_variance(np.full(d, n / d))
    return Option(
        "local",
        "ustat-quantized",
        {"domain_size": d, "oracle": orc},
        math.sqrt(var),
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
    )


def _gini_parts(n, epsilon, bounds, mean_fraction):
    """(lo, w, eps_gmd, eps_mean) of :func:`gini_coefficient` from its public parameters, or None."""
    if bounds is None or not 0 < mean_fraction < 1:
        return None
    lo, hi = float(bounds[0]), float(bounds[1])
    if lo < 0 or hi <= lo:
        return None
    return lo, hi - lo, epsilon * (1 - mean_fraction), epsilon * mean_fraction


def _plan_gini(model, gmd_predictor, *, n, epsilon, bounds=None, mean_fraction=0.5, **options):
    """Delta method for G = GMD·(n−1)/(2n·mean) at uniform values on ``bounds`` (the planner's public
    assumption: GMD = w/3, mean = lo + w/2): the GMD predictor at ε(1 − f) and the mean's variance at εf
    (central: discrete Laplace of sensitivity w/n; local and secure: randomized rounding, exactly
    w²/(6n) at uniform values, plus binary RR); the ratio's bias G·Var(mean)/mean² is included."""
    parts = _gini_parts(n, epsilon, bounds, mean_fraction)
    if parts is None:
        return None
    lo, w, eps_gmd, eps_mean = parts
    gmd_opt = gmd_predictor(n=n, epsilon=eps_gmd, bounds=bounds, **options)
    if gmd_opt is None:
        return None
    gmd, mean = w / 3, lo + w / 2
    if model == "central":
        var_mean = _central_std(w / n, eps_mean) ** 2
    else:
        rr = BinaryRR(min(eps_mean, MECHANISM_EPSILON_MAX))
        var_count = float(rr.variance(n, np.array([n / 2, n / 2]))[1]) + n / 6
        var_mean = w * w * var_count / n**2
    g = gmd * (n - 1) / (2 * n * mean)
    var = g * g * (gmd_opt.stderr**2 / gmd**2 + var_mean / mean**2)
    bias = g * var_mean / mean**2
    return Option(
        model,
        gmd_opt.protocol + "+mean",
        {**gmd_opt.params, "mean_fraction": mean_fraction},
        math.sqrt(var + bias**2),
        bias=bias,
        messages_per_user=gmd_opt.messages_per_user + (0.0 if model == "central" else 1.0),
        bits_per_user=gmd_opt.bits_per_user + (0.0 if model == "central" else 1.0),
    )


@register("gini_coefficient", "central", "central-exact+mean")
def _plan_gini_central(**kw):
    return _plan_gini("central", _plan_gmd_central, **kw)


@register("gini_coefficient", "secure", "ustat-pairs+mean")
def _plan_gini_pairs(**kw):
    return _plan_gini("secure", _plan_gmd_pairs, **kw)


@register("gini_coefficient", "local", "ustat-quantized+mean")
def _plan_gini_local(**kw):
    return _plan_gini("local", _plan_gmd_local, **kw)


def _ustat_range(kernel_range, kernel):
    """The kernel's range from public options: ``kernel_range``, or a k×k matrix's own range."""
    if kernel_range is not None:
        lo, hi = float(kernel_range[0]), float(kernel_range[1])
        return (lo, hi) if hi > lo else None
    if kernel is not None and not callable(kernel):
        m = np.asarray(kernel, dtype=np.float64)
        return (float(m.min()), float(m.max())) if m.max() > m.min() else (float(m.min()), float(m.min()) + 1)
    return None


@register("ustatistic", "central", "central-exact")
def _plan_ustat_central(*, n, epsilon, kernel_range=None, kernel=None, **_):
    """Discrete Laplace of sensitivity 2w/n, w the kernel's range (``kernel_range`` or the matrix's)."""
    kr = _ustat_range(kernel_range, kernel)
    if kr is None:
        return None
    return Option(
        "central", "central-exact", {"kernel_range": list(kr)}, _central_std(2 * (kr[1] - kr[0]) / n, epsilon)
    )


@register("ustatistic", "secure", "ustat-pairs")
def _plan_ustat_pairs(*, n, epsilon, kernel_range=None, kernel=None, P=None, zeta=None, **_):
    """Protocol C with the worst case of any kernel with range w (the kernel is the user's): ζ₂ = w²/4
    (largest variance of a value in an interval of width w) and ζ₁ = ζ₂/2 (its largest share; it
    only matters for P > 1), unless ``zeta`` is given."""
    kr = _ustat_range(kernel_range, kernel)
    if kr is None:
        return None
    P = _resolve_P(P, epsilon, n, kr, "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=kr)
    z2 = (kr[1] - kr[0]) ** 2 / 4
    z1, z2 = (z2 / 2, z2) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(
        P,
        math.sqrt(proto.variance(n, z1, z2)),
        note="worst case over kernels with this range" if zeta is None else "",
    )


@register("ustatistic", "local", "ustat-quantized")
def _plan_ustat_local(
    *, n, epsilon, kernel=None, bounds=None, bins=None, quantization="avg", lipschitz=1.0, oracle="auto", **_
):
    """Protocol A needs the kernel itself (public code, not data): pass ``kernel=`` (a callable with
    ``bounds``, or a k×k matrix).  Exact variance at a uniform histogram (the planner's assumption;
    the cell-averaged matrix is then unbiased); None without the kernel, since the noise's variance
    depends on the whole matrix, not only on its range."""
    if kernel is None:
        return None
    if callable(kernel):
        if bounds is None:
            return None
        lo, hi = float(bounds[0]), float(bounds[1])
        k = bins or min(choose_bins(n, epsilon, lipschitz=lipschitz, assumption="kernel"), 256)
        A = K.matrix_from_callable(
            lambda u, v: kernel(lo + u * (hi - lo), lo + v * (hi - lo)), k, quantization
        )
        params = {"bins": k, "quantization": quantization}
    else:
        A = K.check_kernel_matrix(kernel)
        k = A.shape[0]
        params = {"bins": k}
    if k > DENSE_MAX_CATEGORIES:
        return None
    orc = _pick_kernel_oracle(oracle, n, epsilon, A)
    proto = QuantizedUStat(A, epsilon, orc)
    var = max(proto.conditional_variance(np.full(k, n / k)), 0.0)
    return Option(
        "local",
        "ustat-quantized",
        {**params, "oracle": orc},
        math.sqrt(var),
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
    )


# ---------------------------------------------------------------------------------------------
# Kendall's tau
# ---------------------------------------------------------------------------------------------
def _pair_bounds(bounds):
    if bounds is None:
        check_bounds(None)
    try:
        b = list(bounds)
    except TypeError:
        raise ValueError(f"bounds must be (lo, hi) or ((lo_x, hi_x), (lo_y, hi_y)), got {bounds!r}") from None
    if len(b) == 2 and all(isinstance(v, (tuple, list, np.ndarray)) for v in b):
        return check_bounds(b[0], "bounds[0]"), check_bounds(b[1], "bounds[1]")
    one = check_bounds(b)
    return one, one


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
    model = _backend_model(model, backend)
    epsilon, delta, model = _common(
        epsilon,
        delta,
        model,
        method,
        "kendall_tau",
        postprocess,
        (bins, None if oracle == "auto" else oracle),
    )
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle, bins=bins)
    check_choice(variant, "variant", ("a", "b"))
    if model == "local" or bounds is not None:  # only the local quantisation uses bounds
        bx, by = _pair_bounds(bounds)
    else:
        bx = by = None
    xs = as_float_array(x, "x", bounds=bx)
    ys = as_float_array(y, "y", bounds=by)
    n = check_same_length(x=xs, y=ys)
    if n < 2:
        raise ValueError("x must hold at least two users")

    if model == "central":
        ex = C.exact_kendall(xs, ys)
        if variant == "a":
            value, std = C.central_release(ex["tau_a"], epsilon=epsilon, sensitivity=4.0 / n, rng=rng)
            return _estimate(
                value,
                std**2,
                epsilon=epsilon,
                model=model,
                protocol="central-exact",
                params={"variant": "a", "sensitivity": 4.0 / n},
                n=n,
                messages=0.0,
                bits=0.0,
                support=(-1.0, 1.0),
                postprocess=postprocess,
                statistic="kendall_tau",
            )
        g = as_generator(rng) if _simulating(rng) else None  # one stream: three independent noises
        ta, sa = C.central_release(ex["tau_a"], epsilon=epsilon / 3, sensitivity=4.0 / n, rng=g)
        ny, sy = C.central_release(ex["nontie_y"], epsilon=epsilon / 3, sensitivity=2.0 / n, rng=g)
        nz, sz = C.central_release(ex["nontie_z"], epsilon=epsilon / 3, sensitivity=2.0 / n, rng=g)
        value, grad = _tau_b(ta, ny, nz)
        var = _independent_delta(grad, (sa, sy, sz))
        return _estimate(
            value,
            var,
            epsilon=epsilon,
            model=model,
            protocol="central-exact",
            params={"variant": "b", "budget_split": [1 / 3] * 3},
            n=n,
            messages=0.0,
            bits=0.0,
            details={"tau_a": ta, "nontie_x": ny, "nontie_y": nz, "ci_law": None},
            support=(-1.0, 1.0),
            postprocess=postprocess,
            statistic="kendall_tau",
        )

    if model == "secure":
        if method == "all-pairs":
            ex = C.exact_kendall(xs, ys)
            n_pairs = n * (n - 1) / 2
            if variant == "a":
                noise, std, eps0 = _all_pairs_noise(2.0, epsilon, delta, n - 1, n_pairs, rng)
                return _estimate(
                    ex["tau_a"] + noise,
                    std**2,
                    epsilon=epsilon,
                    delta=delta,
                    model=model,
                    protocol="ustat-all-pairs",
                    params={"variant": "a", "pair_epsilon": eps0},
                    n=n,
                    messages=float(n - 1),
                    details={"simulated_noise": "normal (CLT)"},
                    support=(-1.0, 1.0),
                    postprocess=postprocess,
                    statistic="kendall_tau",
                )
            g = None if rng is None else as_generator(rng)  # one stream for the three simulated draws
            na, sa, eps0 = _all_pairs_noise(2.0, epsilon / 3, delta / 3, n - 1, n_pairs, g)
            ny_, sy, _ = _all_pairs_noise(1.0, epsilon / 3, delta / 3, n - 1, n_pairs, g)
            nz_, sz, _ = _all_pairs_noise(1.0, epsilon / 3, delta / 3, n - 1, n_pairs, g)
            value, grad = _tau_b(ex["tau_a"] + na, ex["nontie_y"] + ny_, ex["nontie_z"] + nz_)
            return _estimate(
                value,
                _independent_delta(grad, (sa, sy, sz)),
                epsilon=epsilon,
                delta=delta,
                model=model,
                protocol="ustat-all-pairs",
                params={"variant": "b", "pair_epsilon": eps0},
                n=n,
                messages=float(n - 1),
                details={"simulated_noise": "normal (CLT)"},
                support=(-1.0, 1.0),
                postprocess=postprocess,
                statistic="kendall_tau",
            )
        xy = np.stack([xs, ys], axis=1)
        sign = lambda u, v: np.sign(u[..., 0] - v[..., 0]) * np.sign(u[..., 1] - v[..., 1])  # noqa: E731
        if variant == "a":
            P = _resolve_P(P, epsilon, n, (-1.0, 1.0), "laplace", zeta)
            be = _pair_backend(backend, "sign_product", epsilon, P, "laplace")
            proto, value, var, info = _run_pairs(sign, xy, epsilon, P, (-1.0, 1.0), "laplace", rng, be)
            d_be, det_be = _backend_info([be], P)
            return _estimate(
                value,
                var,
                epsilon=epsilon,
                delta=d_be,
                model=model,
                protocol="ustat-pairs",
                params={"variant": "a", **proto.params},
                n=n,
                messages=float(P),
                details={**info, **det_be},
                support=(-1.0, 1.0),
                postprocess=postprocess,
                statistic="kendall_tau",
            )
        P = _resolve_P(P, epsilon / 2, n, (-1.0, 1.0), "laplace", zeta)
        g = as_generator(rng) if _simulating(rng) else None
        bes = [
            _pair_backend(backend, k, e, P, mech)
            for k, e, mech in (
                ("sign_product", epsilon / 2, "laplace"),
                ("not_equal_0", epsilon / 4, "rr"),
                ("not_equal_1", epsilon / 4, "rr"),
            )
        ]
        proto = PairsProtocol(sign, epsilon=epsilon / 2, P=P, kernel_range=(-1.0, 1.0), backend=bes[0])
        ties_y = PairsProtocol(
            lambda u, v: (u[..., 0] != v[..., 0]) * 1.0,
            epsilon=epsilon / 4,
            P=P,
            kernel_range=(0.0, 1.0),
            mechanism="rr",
            backend=bes[1],
        )
        ties_z = PairsProtocol(
            lambda u, v: (u[..., 1] != v[..., 1]) * 1.0,
            epsilon=epsilon / 4,
            P=P,
            kernel_range=(0.0, 1.0),
            mechanism="rr",
            backend=bes[2],
        )
        pairs = proto.make_pairs(n, g)
        left, right = xy[pairs[:, 0]], xy[pairs[:, 1]]
        outputs = [p.backend.compute(left, right, g) for p in (proto, ties_y, ties_z)]
        ta, _, info = proto.estimate(outputs[0], pairs, n=n)
        ny, nz = ties_y.estimate(outputs[1], pairs, n=n)[0], ties_z.estimate(outputs[2], pairs, n=n)[0]
        value, grad = _tau_b(ta, ny, nz)
        # delta method: the three share the pairs (correlated subsampling), their noises are independent
        var = combination_variance(
            outputs, grad, [p.backend.noise_variance for p in (proto, ties_y, ties_z)], pairs, n=n, P=P
        )
        d_be, det_be = _backend_info(bes, P)
        return _estimate(
            value,
            var,
            epsilon=epsilon,
            delta=d_be,
            model=model,
            protocol="ustat-pairs",
            params={"variant": "b", **proto.params, "budget_split": [0.5, 0.25, 0.25]},
            n=n,
            messages=float(P),
            details={**info, **det_be},
            support=(-1.0, 1.0),
            postprocess=postprocess,
            statistic="kendall_tau",
        )

    k = bins or _kendall_bins(n, epsilon)
    check_positive_int(k, "bins", minimum=2, maximum=math.isqrt(STRUCTURED_MAX_CATEGORIES))  # k² categories
    cat = K.quantize(xs, bx, k) * k + K.quantize(ys, by, k)
    orc = _pick_oracle(oracle, n, epsilon, k * k)
    _check_structured(k * k, "bins", orc)
    A = K.KendallOperator(k, k)
    extra: tuple[Any, ...] = K.kendall_tie_operators(k, k) if variant == "b" else ()
    proto, ta, va, extras = _run_quantized(A, cat, epsilon, orc, rng, extra)
    params = {"bins": k, "categories": k * k, "oracle": orc, "variant": variant}
    if variant == "a":
        return _estimate(
            ta,
            va,
            epsilon=epsilon,
            model="local",
            protocol="ustat-quantized",
            params=params,
            n=n,
            bits=proto.bits_per_user,
            support=(-1.0, 1.0),
            postprocess=postprocess,
            statistic="kendall_tau",
        )
    (ny, _, S), (nz, _, _) = extras
    value, grad = _tau_b(ta, ny, nz)
    # delta method, exact to first order: the three share the reports, and Σ c·Û_B = Û_{Σ c·B}
    var = proto.plug_in_variance(S, n, A.combine(grad[0], (grad[1], extra[0]), (grad[2], extra[1])))
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        model="local",
        protocol="ustat-quantized",
        params=params,
        n=n,
        bits=proto.bits_per_user,
        details={"tau_a": ta, "nontie_x": ny, "nontie_y": nz},
        support=(-1.0, 1.0),
        postprocess=postprocess,
        statistic="kendall_tau",
    )


def _kendall_bins(n, epsilon):
    ks = np.arange(2, 65)
    score = [4 * grr_variance_bound(n, epsilon, int(k * k)) + 1.0 / k**2 for k in ks]
    return int(ks[int(np.argmin(score))])


def _tau_b(tau_a, nontie_y, nontie_z):
    """tau-b = tau-a / √(nontie_y · nontie_z) (denominators floored at 1e-3) and its gradient in
    (tau_a, nontie_y, nontie_z), for delta-method standard errors."""
    ny, nz = max(nontie_y, 1e-3), max(nontie_z, 1e-3)
    value = tau_a / math.sqrt(ny * nz)
    return value, np.array([1 / math.sqrt(ny * nz), -value / (2 * ny), -value / (2 * nz)])


def _independent_delta(grad, stds) -> float:
    """Delta-method variance of a function of independently noised inputs."""
    return float(np.sum((np.asarray(grad) * np.asarray(stds)) ** 2))


# ---------------------------------------------------------------------------------------------
# Gini mean difference / coefficient, collision probability, any kernel
# ---------------------------------------------------------------------------------------------
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

    ``backend="spu"`` (secure pairs): real two-party computation of |x_i − x_j| with each value
    rounded to a public grid of ``(hi − lo)·2^-grid_bits`` and discrete Laplace on that grid.

    >>> import numpy as np, privstats
    >>> x = np.random.default_rng(0).random(200000)
    >>> est = privstats.gini_mean_difference(x, epsilon=1.0, bounds=(0, 1), rng=1)
    >>> bool(abs(est.value - 1 / 3) < 5 * est.stderr + 0.01)
    True
    """
    model = _backend_model(model, backend)
    epsilon, delta, model = _common(
        epsilon,
        delta,
        model,
        method,
        "gini_mean_difference",
        postprocess,
        (bins, None if quantization == "avg" else quantization, None if oracle == "auto" else oracle),
    )
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle, bins=bins, quantization=quantization)
    lo, hi = check_bounds(bounds)
    xs = as_float_array(x, "x", bounds=(lo, hi))
    n, w = xs.size, hi - lo
    if n < 2:
        raise ValueError("x must hold at least two users")
    if model == "central":
        sens = 2 * w / n
        value, std = C.central_release(
            C.exact_gini_mean_difference(xs), epsilon=epsilon, sensitivity=sens, rng=rng
        )
        return _estimate(
            value,
            std**2,
            epsilon=epsilon,
            model=model,
            protocol="central-exact",
            params={"sensitivity": sens},
            n=n,
            messages=0.0,
            bits=0.0,
            support=(0.0, w),
            postprocess=postprocess,
            statistic="gini_mean_difference",
            bounds=bounds,
        )
    u = (xs - lo) / w
    if model == "secure":
        if method == "all-pairs":
            noise, std, eps0 = _all_pairs_noise(1.0, epsilon, delta, n - 1, n * (n - 1) / 2, rng)
            return _estimate(
                C.exact_gini_mean_difference(xs) + w * noise,
                (w * std) ** 2,
                epsilon=epsilon,
                delta=delta,
                model=model,
                protocol="ustat-all-pairs",
                params={"pair_epsilon": eps0},
                n=n,
                messages=float(n - 1),
                details={"simulated_noise": "normal (CLT)"},
                support=(0.0, w),
                postprocess=postprocess,
                statistic="gini_mean_difference",
                bounds=bounds,
            )
        P = _resolve_P(P, epsilon, n, (0.0, 1.0), "laplace", zeta)
        be = _pair_backend(backend, "absdiff", epsilon, P, "laplace", grid_bits=grid_bits)
        proto, value, var, info = _run_pairs(
            lambda a_, b_: np.abs(a_ - b_), u, epsilon, P, (0.0, 1.0), "laplace", rng, be
        )
        d_be, det_be = _backend_info([be], P)
        return _estimate(
            w * value,
            w * w * var,
            epsilon=epsilon,
            delta=d_be,
            model=model,
            protocol="ustat-pairs",
            params=proto.params,
            n=n,
            messages=float(P),
            details={**info, **det_be},
            support=(0.0, w),
            postprocess=postprocess,
            statistic="gini_mean_difference",
            bounds=bounds,
        )
    k = bins or choose_bins(n, epsilon, lipschitz=1.0, assumption="kernel")
    check_positive_int(k, "bins", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES)
    if oracle == "hr":
        _check_dense(k, "bins")
    op = K.GiniOperator(k, _quantization(quantization))
    orc = _pick_kernel_oracle(oracle, n, epsilon, op)
    _check_structured(k, "bins", orc)
    proto, value, var, _ = _run_quantized(op, K.quantize(u, (0, 1), k), epsilon, orc, rng)
    return _estimate(
        w * value,
        w * w * var,
        epsilon=epsilon,
        model="local",
        protocol="ustat-quantized",
        params={"bins": k, "oracle": orc, "quantization": quantization},
        n=n,
        bits=proto.bits_per_user,
        support=(0.0, w),
        postprocess=postprocess,
        statistic="gini_mean_difference",
        bounds=bounds,
    )


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
    variance is bounded by its worst case at the estimated mean, so it is slightly conservative).

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
    n, w = xs.size, hi - lo
    eps_mean, eps_gmd = epsilon * mean_fraction, epsilon * (1 - mean_fraction)
    g = as_generator(rng) if _simulating(rng) else None
    gmd = gini_mean_difference(
        xs, epsilon=eps_gmd, bounds=(lo, hi), model=model, method=method, rng=g, **kwargs
    )
    if model == "central":
        mean, std = C.central_release(float(xs.mean()), epsilon=eps_mean, sensitivity=w / n, rng=g)
        var_mean = std**2
    else:
        mean, var_mean = _local_mean(xs, lo, hi, eps_mean, rng, g)
    mean_c = max(mean, w * 1e-6)
    value = gmd.value * (n - 1) / (2 * n * mean_c)
    var = value**2 * ((gmd.stderr or 0) ** 2 / max(gmd.value, 1e-12) ** 2 + var_mean / mean_c**2)
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        delta=gmd.delta,
        model=model,
        protocol=gmd.protocol + "+mean",
        params={**gmd.params, "mean_fraction": mean_fraction},
        n=n,
        messages=(gmd.messages_per_user or 0) + (0 if model == "central" else 1),
        bits=None if gmd.bits_per_user is None else gmd.bits_per_user + (0 if model == "central" else 1),
        details={"gini_mean_difference": gmd.value, "mean": mean},
        support=(0.0, 1.0),
        postprocess=postprocess,
        statistic="gini_coefficient",
        bounds=bounds,
    )


def _local_mean(xs, lo, hi, epsilon, rng, g):
    """Unbiased LDP mean: randomized rounding to {lo, hi}, then binary randomized response."""
    u = (xs - lo) / (hi - lo)
    rr = BinaryRR(min(epsilon, MECHANISM_EPSILON_MAX))
    if _simulating(rng):
        bits = (g.random(u.size) < u).astype(np.int64)
        state = rr.simulate(bits, g)
    else:
        from privstats.privacy.randomness import as_source

        bits = (as_source(None).random(u.size) < u).astype(np.int64)
        state = rr.aggregate(rr.encode_batch(bits))
    est = rr.estimate(state)
    n = xs.size
    frac = float(est.value[1]) / n
    # Var = RR noise given the bits + the rounding's Σ u(1−u), bounded by n·f(1−f) (conservative)
    f = min(max(frac, 0.0), 1.0)
    var_count = float(est.stderr[1]) ** 2 + n * f * (1 - f)
    return lo + (hi - lo) * frac, (hi - lo) ** 2 * var_count / n**2


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
    model = _backend_model(model, backend)
    epsilon, delta, model = _common(
        epsilon,
        delta,
        model,
        method,
        "collision_probability",
        postprocess,
        (None if oracle == "auto" else oracle,),
    )
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle)
    d = check_positive_int(domain_size, "domain_size", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES)
    xs = as_domain_values(x, d, "x")
    n = xs.size
    if n < 2:
        raise ValueError("x must hold at least two users")
    if model == "central":
        sens = 2.0 / n
        value, std = C.central_release(C.exact_collision(xs), epsilon=epsilon, sensitivity=sens, rng=rng)
        est: tuple[Any, ...] = (value, std**2, "central-exact", {"sensitivity": sens}, 0.0, 0.0, {})
    elif model == "secure" and method == "all-pairs":
        noise, std, eps0 = _all_pairs_noise(1.0, epsilon, delta, n - 1, n * (n - 1) / 2, rng)
        est = (
            C.exact_collision(xs) + noise,
            std**2,
            "ustat-all-pairs",
            {"pair_epsilon": eps0},
            float(n - 1),
            None,
            {"simulated_noise": "normal (CLT)"},
        )
    elif model == "secure":
        P = _resolve_P(P, epsilon, n, (0.0, 1.0), "rr", zeta)
        be = _pair_backend(backend, "equal", epsilon, P, "rr")
        proto, value, var, info = _run_pairs(
            lambda a_, b_: (a_ == b_) * 1.0, xs, epsilon, P, (0.0, 1.0), "rr", rng, be
        )
        est = (value, var, "ustat-pairs", proto.params, float(P), None, {**info, **_backend_info([be], P)[1]})
    else:
        _check_structured(d, "domain_size", oracle)  # before the choice: it scores O(d) histograms
        orc = _pick_kernel_oracle(oracle, n, epsilon, K.CollisionOperator(d))
        proto, value, var, _ = _run_quantized(K.CollisionOperator(d), xs, epsilon, orc, rng)
        est = (value, var, "ustat-quantized", {"domain_size": d, "oracle": orc}, 1.0, proto.bits_per_user, {})
    value, var, protocol, params, msgs, bits, details = est
    details = {**details, "renyi2_entropy": -math.log(min(max(value, 1e-12), 1.0))}
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        delta=delta if "all-pairs" in protocol else 0.0,
        model=model,
        protocol=protocol,
        params=params,
        n=n,
        messages=msgs,
        bits=bits,
        details=details,
        support=(0.0, 1.0),
        postprocess=postprocess,
        statistic="collision_probability",
    )


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
    model = _backend_model(model, backend)
    epsilon, delta, model = _common(
        epsilon,
        delta,
        model,
        method,
        "ustatistic",
        postprocess,
        (bins, None if quantization == "avg" else quantization, None if oracle == "auto" else oracle),
    )
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle, bins=bins, quantization=quantization)
    lipschitz = check_real(lipschitz, "lipschitz")
    if lipschitz <= 0:
        raise ValueError(f"lipschitz must be > 0, got {lipschitz!r}")
    if isinstance(kernel, str):
        return _ustat_spu(x, kernel, epsilon, backend, P, zeta, rng, postprocess)
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
        A = matrix = K.check_kernel_matrix(kernel)
        xs = as_domain_values(x, matrix.shape[0], "x")
        kr = (
            (float(matrix.min()), float(matrix.max()))
            if matrix.max() > matrix.min()
            else (float(matrix.min()), float(matrix.min()) + 1.0)
        )
        f = lambda a_, b_: matrix[a_.astype(np.int64), b_.astype(np.int64)]  # noqa: E731
    n = xs.size
    if n < 2:
        raise ValueError("x must hold at least two users")
    width = None if kr is None else kr[1] - kr[0]

    if model == "central":
        assert kr is not None and width is not None  # required above outside the local model
        exact = C.exact_matrix_ustat(xs, A) if A is not None else C.exact_callable(xs, f)
        exact = float(np.clip(exact, *kr))
        sens = 2 * width / n
        value, std = C.central_release(exact, epsilon=epsilon, sensitivity=sens, rng=rng)
        return _estimate(
            value,
            std**2,
            epsilon=epsilon,
            model=model,
            protocol="central-exact",
            params={"sensitivity": sens, "kernel_range": list(kr)},
            n=n,
            messages=0.0,
            bits=0.0,
            support=None if kr is None else kr,
            postprocess=postprocess,
            statistic="ustatistic",
            bounds=bounds,
        )
    if model == "secure":
        if method == "all-pairs":
            exact = C.exact_matrix_ustat(xs, A) if A is not None else C.exact_callable(xs, f)
            noise, std, eps0 = _all_pairs_noise(width, epsilon, delta, n - 1, n * (n - 1) / 2, rng)
            return _estimate(
                exact + noise,
                std**2,
                epsilon=epsilon,
                delta=delta,
                model=model,
                protocol="ustat-all-pairs",
                params={"pair_epsilon": eps0},
                n=n,
                messages=float(n - 1),
                details={"simulated_noise": "normal (CLT)"},
                support=None if kr is None else kr,
                postprocess=postprocess,
                statistic="ustatistic",
                bounds=bounds,
            )
        P = _resolve_P(P, epsilon, n, kr, "laplace", zeta)
        proto, value, var, info = _run_pairs(
            f, xs, epsilon, P, kr, "laplace", rng, _pair_backend(backend, None, epsilon, P, "laplace")
        )
        return _estimate(
            value,
            var,
            epsilon=epsilon,
            model=model,
            protocol="ustat-pairs",
            params=proto.params,
            n=n,
            messages=float(P),
            details=info,
            support=None if kr is None else kr,
            postprocess=postprocess,
            statistic="ustatistic",
            bounds=bounds,
        )
    if A is None:
        # a callable is averaged over 256 points per cell of the k×k matrix: cap k so that k²·256 ≤ MAX_CELLS/4
        # (512 MiB, seconds; the default k = 4096 at ε = 40 allocated 32 GiB); the automatic choice stops at
        # 256 bins, whose quantisation error (≤ lipschitz/256) is below the noise at any n a test can hold
        k_max = math.isqrt(MAX_CELLS // 1024)
        k = bins or min(choose_bins(n, epsilon, lipschitz=lipschitz, assumption="kernel"), 256)
        check_positive_int(k, "bins", minimum=2)
        _check_dense(k, "bins")
        if k > k_max:
            raise ValueError(
                f"bins: a callable kernel is averaged over 256 points in each cell of the dense k×k "
                f"matrix; k={k} exceeds {k_max} ({256 * 8 * k * k / 2**30:.0f} GiB); use fewer bins"
            )
        how = _quantization(quantization)
        A = K.matrix_from_callable(lambda u, v: f(lo + u * (hi - lo), lo + v * (hi - lo)), k, how)
        cells = K.quantize(xs, (lo, hi), k)
        params = {"bins": k, "quantization": how}
    else:
        cells, params = xs, {"bins": A.shape[0]}
    orc = _pick_kernel_oracle(oracle, n, epsilon, A)
    proto, value, var, _ = _run_quantized(A, cells, epsilon, orc, rng)
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        model="local",
        protocol="ustat-quantized",
        params={**params, "oracle": orc},
        n=n,
        bits=proto.bits_per_user,
        support=None if kr is None else kr,
        postprocess=postprocess,
        statistic="ustatistic",
        bounds=bounds,
    )


def _ustat_spu(x, name, epsilon, backend, P, zeta, rng, postprocess) -> Estimate:
    """ustatistic with a named two-party kernel (backend='spu'): inputs as the kernel expects them."""
    if backend != "spu":
        raise ValueError(
            "a kernel given by name needs backend='spu' (model='secure'); pass a callable or a matrix"
        )
    from privstats.ustat.mpc import SPECS, SpuTwoParty

    check_choice(name, "kernel", SPECS)
    be0 = SpuTwoParty(name, pair_epsilon=epsilon, mechanism="laplace")
    xs = as_float_array(x, "x", bounds=(0.0, 1.0)) if name == "absdiff" else np.asarray(x, dtype=np.float64)
    if be0.spec.columns > 1 and (xs.ndim != 2 or xs.shape[1] != be0.spec.columns):
        raise ValueError(f"x must have shape (n, {be0.spec.columns}) for kernel {name!r}")
    n = len(xs)
    if n < 2:
        raise ValueError("x must hold at least two users")
    kr = (be0.lo, be0.hi)
    mech = "rr" if be0.spec.units == 1 else "laplace"
    P = _resolve_P(P, epsilon, n, kr, mech, zeta)
    be = SpuTwoParty(name, pair_epsilon=epsilon / P, mechanism=mech)
    proto, value, var, info = _run_pairs(be.spec.reference, xs, epsilon, P, kr, mech, rng, be)
    d_be, det_be = _backend_info([be], P)
    return _estimate(
        value,
        var,
        epsilon=epsilon,
        delta=d_be,
        model="secure",
        protocol="ustat-pairs",
        params={**proto.params, "kernel": name},
        n=n,
        messages=float(P),
        details={**info, **det_be},
        support=kr,
        postprocess=postprocess,
        statistic="ustatistic",
    )
