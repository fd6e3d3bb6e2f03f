"""Local model, Protocol B for the AUC (Bell et al. 2020): hierarchical histograms of each class's
scores with the Hadamard level oracle; the AUC is read off the two trees.

One unit (AUC only), with its predictor (from public parameters) and its run.
"""

from __future__ import annotations

import math

from privstats.plan import Option
from privstats.privacy.randomness import as_generator
from privstats.stats.pairwise.plumbing import _auc_linear_family_bias, _classes, _simulating
from privstats.stats.units import Call, Release, unit
from privstats.ustat import kernels as K
from privstats.ustat.params import choose_depth
from privstats.ustat.tree import TreeAUC
from privstats.validation import check_delta, check_power_of_two

OPTIONS = ("domain_size", "splitting", "discard", "a", "ties")


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


def _tree_states(proto: TreeAUC, bins_p, bins_n, c: Call):
    """The two classes' tree states: simulated, or each client's report (levels assigned by the
    aggregator from the CSPRNG)."""
    if _simulating(c.rng):
        g = as_generator(c.rng)
        return proto.simulate(bins_p, g), proto.simulate(bins_n, g)

    def client_state(bins):
        levels = proto.assign_levels(bins.size) if c.splitting == "users" else None
        return proto.aggregate(proto.encode_batch(bins, levels))

    return client_state(bins_p), client_state(bins_n)


@unit("auc", "local", "ustat-tree", "tree", OPTIONS, _plan_auc_tree)
def auc_tree(c: Call) -> Release:
    if c.smoothing is not None:
        raise ValueError("smoothing applies to Protocol A (method='quantized'), not to method='tree'")
    t = c.ties or "half"
    delta, splitting = c.delta, c.splitting
    if splitting == "advanced":
        check_delta(delta)
    depth = (
        round(math.log2(check_power_of_two(c.domain_size, "domain_size")))
        if c.domain_size
        else choose_depth(c.n_pos, c.n_neg, c.epsilon, splitting=splitting, delta=delta)
    )
    if splitting == "users" and min(c.n_pos, c.n_neg) < depth:
        raise ValueError(f"each class needs at least depth={depth} users for splitting='users'")
    proto = TreeAUC(depth, c.epsilon, delta=delta, splitting=splitting, discard=c.discard, a=c.a, ties=t)
    bounds = (c.lo, c.hi)
    bins_p, bins_n = K.quantize(c.pos, bounds, 2**depth), K.quantize(c.neg, bounds, 2**depth)
    value, var, det = proto.estimate(*_tree_states(proto, bins_p, bins_n, c))
    params = {
        "domain_size": 2**depth,
        "depth": depth,
        "splitting": splitting,
        "discard": c.discard,
        "a": det["a"],
        "ties": t,
    }
    return Release(
        value,
        var,
        params,
        float(proto.messages_per_user),
        proto.bits_per_user,
        delta=delta if splitting == "advanced" else 0.0,
        details={**det, "stderr_note": "plug-in, ignores the data-dependent pruning"},
    )
