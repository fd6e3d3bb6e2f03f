"""Central model (a curator sees the data): the exact statistic plus discrete Laplace noise.

One unit per statistic, each with its predictor (from public parameters) and its run; the
sensitivity is that of replacing one user.
"""

from __future__ import annotations

import numpy as np

from privstats.plan import Option
from privstats.privacy.randomness import as_generator
from privstats.stats.pairwise.plumbing import (
    _central_std,
    _classes,
    _independent_delta,
    _simulating,
    _tau_b,
    _ustat_range,
)
from privstats.stats.units import Call, Release, unit
from privstats.ustat import central as C

OPTIONS = ("rng",)


def _release(c: Call, exact: float, sensitivity: float, params: dict) -> Release:
    """The exact value with discrete Laplace noise of the given sensitivity (no communication)."""
    value, std = C.central_release(exact, epsilon=c.epsilon, sensitivity=sensitivity, rng=c.rng)
    return Release(value, std**2, params, messages=0.0, bits=0.0)


# ----------------------------------------------------------------------------- AUC
def _plan_auc_central(*, n, epsilon, n_pos=None, **_):
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    sens = 1.0 / min(cls)
    return Option("central", "central-exact", {"sensitivity": sens}, _central_std(sens, epsilon))


@unit("auc", "central", "central-exact", "exact", ("ties",), _plan_auc_central)
def auc_central(c: Call) -> Release:
    t = c.ties or "half"
    sens = 1.0 / min(c.n_pos, c.n_neg)
    return _release(c, C.exact_auc(c.pos, c.neg, t), sens, {"ties": t, "sensitivity": sens})


# ----------------------------------------------------------------------------- Kendall's tau
def _plan_tau_central(*, n, epsilon, variant="b", **_):
    """tau-a: Laplace of sensitivity 4/n; tau-b at tau ≈ 0: the tau-a part at ε/3 dominates."""
    eps = epsilon if variant == "a" else epsilon / 3
    return Option("central", "central-exact", {"variant": variant}, _central_std(4.0 / n, eps))


@unit("kendall_tau", "central", "central-exact", "exact", ("variant",), _plan_tau_central)
def kendall_tau_central(c: Call) -> Release:
    """tau-a with the whole ε; tau-b: tau-a and the two non-tie fractions with ε/3 each."""
    ex = C.exact_kendall(c.xs, c.ys)
    n, epsilon = c.n, c.epsilon
    if c.variant == "a":
        return _release(c, ex["tau_a"], 4.0 / n, {"variant": "a", "sensitivity": 4.0 / n})
    g = as_generator(c.rng) if _simulating(c.rng) else None  # one stream: three independent noises
    ta, sa = C.central_release(ex["tau_a"], epsilon=epsilon / 3, sensitivity=4.0 / n, rng=g)
    ny, sy = C.central_release(ex["nontie_y"], epsilon=epsilon / 3, sensitivity=2.0 / n, rng=g)
    nz, sz = C.central_release(ex["nontie_z"], epsilon=epsilon / 3, sensitivity=2.0 / n, rng=g)
    value, grad = _tau_b(ta, ny, nz)
    # the interval's law: tau-a's Laplace noise (it dominates: the non-tie fractions enter with
    # weight tau/2) plus the fractions' noise as a normal part; ±1.96σ covered a Laplace ~0.937
    # (0.91-0.93 at n = 300 on issue 26's real sets, 400 seeds)
    law = {
        "laplace_scale": abs(float(grad[0])) * sa / np.sqrt(2.0),
        "normal_sd": float(np.hypot(grad[1] * sy, grad[2] * sz)),
    }
    return Release(
        value,
        _independent_delta(grad, (sa, sy, sz)),
        {"variant": "b", "budget_split": [1 / 3] * 3},
        messages=0.0,
        bits=0.0,
        details={"tau_a": ta, "nontie_x": ny, "nontie_y": nz, "ci_law": law},
    )


# ----------------------------------------------------------------------------- Gini mean difference
def _plan_gmd_central(*, n, epsilon, bounds=None, **_):
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    return Option("central", "central-exact", {}, _central_std(2 * w / n, epsilon))


@unit("gini_mean_difference", "central", "central-exact", "exact", (), _plan_gmd_central)
def gini_mean_difference_central(c: Call) -> Release:
    sens = 2 * c.w / c.n
    return _release(c, C.exact_gini_mean_difference(c.xs), sens, {"sensitivity": sens})


# ----------------------------------------------------------------------------- collision probability
def _plan_collision_central(*, n, epsilon, **_):
    return Option("central", "central-exact", {}, _central_std(2.0 / n, epsilon))


@unit("collision_probability", "central", "central-exact", "exact", (), _plan_collision_central)
def collision_probability_central(c: Call) -> Release:
    sens = 2.0 / c.n
    return _release(c, C.exact_collision(c.xs), sens, {"sensitivity": sens})


# ----------------------------------------------------------------------------- any kernel
def _plan_ustat_central(*, n, epsilon, kernel_range=None, kernel=None, **_):
    """Discrete Laplace of sensitivity 2w/n, w the kernel's range (``kernel_range`` or the matrix's)."""
    kr = _ustat_range(kernel_range, kernel)
    if kr is None:
        return None
    return Option(
        "central", "central-exact", {"kernel_range": list(kr)}, _central_std(2 * (kr[1] - kr[0]) / n, epsilon)
    )


@unit("ustatistic", "central", "central-exact", "exact", ("kernel_range",), _plan_ustat_central)
def ustatistic_central(c: Call) -> Release:
    exact = C.exact_matrix_ustat(c.xs, c.A) if c.A is not None else C.exact_callable(c.xs, c.f)
    exact = float(np.clip(exact, *c.kr))
    sens = 2 * (c.kr[1] - c.kr[0]) / c.n
    return _release(c, exact, sens, {"sensitivity": sens, "kernel_range": list(c.kr)})
