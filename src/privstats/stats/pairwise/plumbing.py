"""Shared plumbing of the pairwise statistics: argument checks, oracle and parameter choices, pair protocols."""

from __future__ import annotations

import functools
import math

import numpy as np

from privstats.plan import DEFAULT_MODEL, Option, check_model
from privstats.privacy.randomness import as_generator
from privstats.privacy.samplers import gaussian
from privstats.ustat import kernels as K
from privstats.ustat.pairs import PairsProtocol
from privstats.ustat.params import (
    _oue_variance_bound,
    choose_P,
    grr_variance_bound,
)
from privstats.ustat.quantized import (
    DENSE_MAX_CATEGORIES,
    ORACLES,
    STRUCTURED_MAX_CATEGORIES,
    QuantizedUStat,
)
from privstats.ustat.tree import advanced_level_epsilon
from privstats.validation import (
    MAX_CELLS,
    check_bounds,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
)

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


def _options(*, P=None, oracle="auto", bins=None, quantization="avg", quantizations=K.QUANTISATIONS) -> None:
    """Protocol options are checked whatever the model, so a bad value is never silently ignored."""
    if P is not None:
        check_positive_int(P, "P")
    if oracle != "auto":
        check_choice(oracle, "oracle", ORACLES)
    if bins is not None:
        check_positive_int(bins, "bins", minimum=2)
    check_choice(quantization, "quantization", quantizations)


def _validate(
    statistic,
    epsilon,
    delta,
    model,
    method,
    postprocess,
    backend,
    *,
    P=None,
    oracle="auto",
    bins=None,
    quantization="avg",
    quantizations=K.QUANTISATIONS,
    local=(),
):
    """The checks every pairwise statistic makes first, in one order: the backend's model, ε, δ, the
    model (``None``: from the method, or ``"local"`` when a local-only option is given) and method,
    ``postprocess``, the backend, then the protocol options.  Returns ``(epsilon, delta, model)``."""
    model = _backend_model(model, backend)
    local_options = (
        *local,
        bins,
        None if quantization == "avg" else quantization,
        None if oracle == "auto" else oracle,
    )
    epsilon, delta, model = _common(epsilon, delta, model, method, statistic, postprocess, local_options)
    _check_backend(backend, model, method)
    _options(P=P, oracle=oracle, bins=bins, quantization=quantization, quantizations=quantizations)
    return epsilon, delta, model


def _simulating(rng) -> bool:
    return rng is not None


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


def _default_smoothing(ties, domain_size=None):
    """The linear correction on the automatic grid (continuous scores); none on a given grid."""
    return "linear" if ties == "half" and not domain_size else "none"


def _auc_linear_family_bias(k):
    """Largest quantisation bias of the binned AUC (ties ½, no smoothing) when the pooled scores are
    uniform on the bounds and the class densities linear: f± = 1 ± c(2x − 1), AUC = ½ + c/3, and the
    pairs sharing a bin lose exactly (AUC − ½)/k² (per bin (f⁺′f⁻ − f⁺f⁻′)h³/12), at most 1/(3k²) (c = 1)."""
    return 1.0 / (3 * k**2)


def _auc_cell_pair_bias(s_pos, s_neg, n_pos: float, n_neg: float) -> float:
    """The local AUC's bias scale read off the released class histograms: Σ_c p⁺_c p⁻_c / (3k).

    Only the pairs sharing a cell are mis-scored by the grid, and over class densities linear on the
    bounds each is off by 1/(3k) at most on average: at the planner's uniform histograms the shared-cell
    share Σ_c p⁺_c p⁻_c is 1/k and this is :func:`_auc_linear_family_bias`, 1/(3k²).  Where both classes
    crowd one cell (peaked scores) the share, and the within-cell order the linear correction cannot
    see, grow: randhie at n = 300, ε = 0.5 (k = 2, both classes 0.9 in the upper cell) has share 0.84
    and bias −0.145 (1.75 · 1/(3k²), 1.04 of this scale; issue 26).  The share is estimated by
    Σ_c Ŝ⁺_c Ŝ⁻_c / (n⁺n⁻) from the debiased counts Ŝ±, unbiased as the two classes' reports are
    independent (clipped to [0, 1])."""
    p, q = np.asarray(s_pos, dtype=np.float64), np.asarray(s_neg, dtype=np.float64)
    share = min(max(float(p @ q) / (n_pos * n_neg), 0.0), 1.0)
    return share / (3 * p.size)


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


def _gini_parts(n, epsilon, bounds, mean_fraction):
    """(lo, w, eps_gmd, eps_mean) of :func:`gini_coefficient` from its public parameters, or None."""
    if bounds is None or not 0 < mean_fraction < 1:
        return None
    lo, hi = float(bounds[0]), float(bounds[1])
    if lo < 0 or hi <= lo:
        return None
    return lo, hi - lo, epsilon * (1 - mean_fraction), epsilon * mean_fraction


def _ustat_range(kernel_range, kernel):
    """The kernel's range from public options: ``kernel_range``, or a k×k matrix's own range."""
    if kernel_range is not None:
        lo, hi = float(kernel_range[0]), float(kernel_range[1])
        return (lo, hi) if hi > lo else None
    if kernel is not None and not callable(kernel):
        m = np.asarray(kernel, dtype=np.float64)
        return (float(m.min()), float(m.max())) if m.max() > m.min() else (float(m.min()), float(m.min()) + 1)
    return None


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
