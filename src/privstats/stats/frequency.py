"""Frequencies, range counts, quantiles and heavy hitters under the shuffle, local and central models.

The shuffle model implements Ghazi et al., *On the Power of Multiple Anonymous Messages*
(:mod:`privstats.shuffle`); ``model="local"`` uses the local frequency oracles and
``model="central"`` exact discrete Laplace noise, so the cost of each trust model can be
compared on the same call.  All results are :class:`~privstats.Estimate` objects with
messages and bits per user and the chosen parameters in ``params``.  The in-process runs
here simulate every client with the exact law (seeded by ``rng``); deployments use the
protocol objects' ``encode``/``aggregate`` roles with the OS CSPRNG and a :class:`~privstats.shuffle.Shuffler`.

>>> import numpy as np, privstats
>>> x = np.random.default_rng(0).integers(0, 8, 20_000)
>>> est = privstats.frequencies(x, domain=8, epsilon=1.0, delta=1e-6, model="shuffle", protocol="single-rr", rng=1)
>>> est.model, est.messages_per_user, bool(np.all(np.abs(est.value - np.bincount(x)) < 6 * est.stderr))
('shuffle', 1, True)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from privstats.central import add_count_noise, discrete_laplace_variance
from privstats.estimate import Estimate, constrain
from privstats.plan import DEFAULT_MODEL, Option, check_model, register, warn_if_useless
from privstats.privacy.guarantees import ApproxDP, PureDP
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.shuffle.countmin import CountMinMultiMessage
from privstats.shuffle.hadamard import HadamardMultiMessage
from privstats.shuffle.heavy import prefix_tree_heavy_hitters
from privstats.shuffle.ranges import box_terms, support_nd
from privstats.shuffle.single import ShuffledKRR, ShuffledRAPPOR
from privstats.stats.units import Call, choose, unit
from privstats.validation import (
    MAX_CELLS,
    as_domain_values,
    check_array,
    check_choice,
    check_delta,
    check_domain_size,
    check_epsilon,
    check_real,
)

__all__ = [
    "MODELS",
    "SHUFFLE_PROTOCOLS",
    "frequencies",
    "heavy_hitters",
    "range_counts",
    "require_delta",
    "shuffle_protocol",
]

SHUFFLE_PROTOCOLS = ("auto", "single", "single-rr", "single-rappor", "multi-hadamard", "multi-countmin")
MODELS = ("shuffle", "local", "central")
DEFAULT_DELTA = 1e-6


def require_delta(delta, n: int) -> float:
    """``delta`` validated.  δ is spent only when the caller passes it: the shuffle model has no
    pure-DP protocol here, so ``None`` is an error that says what to pass (δ well below 1/n)."""
    if delta is None:
        suggestion = min(DEFAULT_DELTA, 1.0 / (10 * max(n, 1)))
        raise ValueError(
            f"delta: model='shuffle' gives (epsilon, delta)-DP and needs delta passed explicitly "
            f"(e.g. delta={suggestion:.3g}, well below 1/n); no delta is spent unless you pass one"
        )
    return check_delta(delta)


def _resolve_model(statistic: str, model, protocol=None) -> str:
    """``model=None``: the model a named ``protocol`` belongs to, else the default ``"central"``."""
    if model is None:
        from privstats.local.choose import ORACLES

        if protocol in ORACLES:
            model = "local"
        elif protocol is not None and protocol != "auto" and protocol in SHUFFLE_PROTOCOLS:
            model = "shuffle"
        elif protocol not in (None, "auto"):
            raise ValueError(
                f"protocol must be a local oracle {sorted(ORACLES)} or a shuffle protocol "
                f"{list(SHUFFLE_PROTOCOLS)}, got {protocol!r}"
            )
        else:
            model = DEFAULT_MODEL
    return check_model(statistic, model)


def _in_range(est: Estimate, n: int, postprocess: str, statistic: str) -> Estimate:
    """Counts clipped into [0, n] (raw unbiased counts in ``details["unbiased"]``)."""
    se = est.stderr
    if se is not None:
        warn_if_useless(
            statistic,
            float(np.max(se)),
            n=n,
            epsilon=est.epsilon or 1.0,
            model=est.model,
            protocol=est.protocol,
            stacklevel=4,
        )
    return constrain(est, 0.0, float(n), postprocess=postprocess)


def _codes(values, domain) -> tuple[np.ndarray, int]:
    """Item codes in [0, d) and d, for an int domain size or a sequence of public labels."""
    if isinstance(domain, (int, np.integer)) and not isinstance(domain, bool):
        d = check_domain_size(domain, "domain")
        return as_domain_values(values, d), d
    try:
        labels = list(domain)
    except TypeError:
        raise ValueError(
            f"domain must be a domain size (int) or a sequence of labels, got {domain!r}"
        ) from None
    d = check_domain_size(len(labels), "domain")
    index = {v: i for i, v in enumerate(labels)}
    if len(index) != d:
        raise ValueError("domain labels must be distinct")
    raw = values.to_numpy() if hasattr(values, "to_numpy") else values
    raw = list(np.asarray(raw).ravel().tolist()) if not isinstance(raw, list) else raw
    if not raw:
        raise ValueError("values must not be empty")
    try:
        return np.fromiter((index[v] for v in raw), dtype=np.int64, count=len(raw)), d
    except KeyError:
        raise ValueError(f"values: {sum(v not in index for v in raw)} entries not in domain") from None


def _worst_se(proto) -> float:
    if isinstance(proto, ShuffledKRR):
        v = proto.variance(np.array([0, proto.n]))
        return float(np.sqrt(v.max()))
    if isinstance(proto, ShuffledRAPPOR):
        return math.sqrt(proto.variance())
    if isinstance(proto, HadamardMultiMessage):
        return float(np.sqrt(proto.variance(np.zeros(1))[0]))
    return math.inf


def shuffle_protocol(protocol: str, d: int, n: int, epsilon: float, delta: float, **options):
    """The shuffle-model frequency protocol object for ``protocol``.

    ``"single"`` and ``"auto"`` choose by worst-case standard error."""
    check_choice(protocol, "protocol", SHUFFLE_PROTOCOLS)
    if protocol == "single-rr":
        return ShuffledKRR(d, n=n, epsilon=epsilon, delta=delta, **options)
    if protocol == "single-rappor":
        return ShuffledRAPPOR(d, n=n, epsilon=epsilon, delta=delta, **options)
    if protocol == "multi-hadamard":
        return HadamardMultiMessage(d, n=n, epsilon=epsilon, delta=delta, **options)
    if protocol == "multi-countmin":
        return CountMinMultiMessage(d, n=n, epsilon=epsilon, delta=delta, **options)
    names = ["single-rr", "single-rappor"] + (["multi-hadamard"] if protocol == "auto" else [])
    candidates = []
    for name in names:
        try:
            candidates.append(shuffle_protocol(name, d, n, epsilon, delta))
        except ValueError:
            continue
    if not candidates:
        raise ValueError(f"no shuffle protocol reaches (epsilon={epsilon}, delta={delta}) with n={n}")
    return min(candidates, key=_worst_se)


def _draw_state(proto, values, rng: RNGLike):
    """The aggregator's state for these users' reports.

    A seeded ``rng`` draws the state with the protocol's vectorized simulation (exact law,
    numpy Generator).  ``rng=None`` protects real data: every report is drawn by the client
    code from the OS CSPRNG with exact integer-threshold samplers, in chunks of users, and
    aggregated (the shuffler's permutation does not change the aggregate).  The cost is the
    protocol's real one: O(messages) draws (heavy for the count-min blanket).
    """
    if rng is not None:
        return proto.simulate(values, as_generator(rng))
    src = as_source(None)
    values = np.asarray(values)
    width = int(getattr(proto, "messages_per_user", 1) or 1) * max(
        1, int(getattr(proto, "domain_size", 1)) // 64
    )
    chunk = max(256, (1 << 22) // max(1, width))
    state = proto.new_state()
    for s in range(0, values.shape[0], chunk):
        state = proto.aggregate(proto.encode_batch(values[s : s + chunk], src), state)
    return state


def frequencies(
    values,
    *,
    domain,
    epsilon: float,
    delta: float | None = None,
    model: str | None = None,
    protocol: str | None = None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    **options,
) -> Estimate:
    """Private count of every domain element (``estimate.value[i]`` = count of element i).

    ``model="shuffle"``: ``protocol`` is ``"single"`` (the better single-message protocol for
    n and B), ``"single-rr"``, ``"single-rappor"``, ``"multi-hadamard"``, ``"multi-countmin"``
    or ``"auto"`` (default: lowest worst-case standard error among single and Hadamard);
    the guarantee is (ε, δ)-DP of the shuffled messages (replace-one, n public).
    ``model="local"``: ε-LDP with ``protocol`` one of ``"auto"``, ``"grr"``, ``"oue"``,
    ``"olh"``, ``"hr"``.  ``model="central"``: ε-DP discrete Laplace on the histogram.
    Extra keyword ``options`` go to the protocol (e.g. ``calibration="chernoff"``).
    ``values`` are integer codes in [0, domain) when ``domain`` is an int, or any hashable
    labels (strings, …) when ``domain`` is the public list of labels.  ``model`` defaults to
    ``"central"`` (or the model a named ``protocol`` belongs to).  ``delta`` is required by
    the shuffle model and spent only when passed.  Counts are clipped into [0, n]
    (``postprocess="none"`` keeps the raw unbiased counts, always in ``details["unbiased"]``).

    >>> import numpy as np
    >>> est = frequencies(np.zeros(5000, dtype=int), domain=4, epsilon=1.0, model="central", rng=0)
    >>> est.protocol, est.value.shape
    ('discrete-laplace', (4,))
    """
    epsilon = check_epsilon(epsilon)
    model = _resolve_model("frequencies", model, protocol)
    check_choice(postprocess, "postprocess", ("clip", "none"))
    epsilon = check_epsilon(epsilon, model=model)
    if delta is not None:
        check_delta(delta)
    if protocol is not None:  # checked whatever the model, so a bad value is never silently ignored
        check_choice(protocol, "protocol", {"auto", "grr", "oue", "olh", "hr", *SHUFFLE_PROTOCOLS})
    codes, d = _codes(values, domain)
    n = codes.size
    if model == "central":
        scale = 2.0 / epsilon
        noisy = add_count_noise(np.bincount(codes, minlength=d), epsilon, sensitivity=2, rng=rng)
        se = math.sqrt(discrete_laplace_variance(scale))
        est = Estimate(
            value=noisy.astype(float),
            stderr=np.full(d, se),
            guarantee=PureDP(epsilon),
            model="central",
            protocol="discrete-laplace",
            params={"domain_size": d, "scale": scale, "sensitivity": 2},
            n=n,
            messages_per_user=0,
            bits_per_user=0,
            details={"ci_law": {"discrete_laplace_scale": scale}},
        )
    elif model == "local":
        from privstats.local.choose import ORACLES, make_oracle

        check_choice(protocol or "auto", "protocol", {"auto", *ORACLES})
        oracle = make_oracle(protocol or "auto", d, epsilon)
        est = oracle.estimate(_draw_state(oracle, codes, rng))
    else:
        delta = require_delta(delta, n)
        proto = shuffle_protocol(protocol or "auto", d, n, epsilon, delta, **options)
        est = proto.estimate(_draw_state(proto, codes, rng))
    return _in_range(est, n, postprocess, "frequencies")


@register("frequencies", "central", "discrete-laplace")
def _plan_freq_central(*, n, epsilon, **_):
    return Option(
        "central", "discrete-laplace", {"sensitivity": 2}, math.sqrt(discrete_laplace_variance(2.0 / epsilon))
    )


@register("frequencies", "local", "best-oracle")
def _plan_freq_local(*, n, epsilon, domain=None, **_):
    """The lowest-variance local oracle for (d, ε); stderr of a count at a rare item (count ≈ 0)."""
    if domain is None:
        return None
    from privstats.local.choose import best_oracle

    d = domain if isinstance(domain, int) else len(domain)
    oracle = best_oracle(d, epsilon)
    se = float(np.sqrt(oracle.variance(n, np.zeros(d))[0]))
    return Option(
        "local",
        oracle.name,
        {"oracle": oracle.name},
        se,
        messages_per_user=1.0,
        bits_per_user=float(oracle.bits_per_user),
    )


@register("frequencies", "shuffle", "auto")
def _plan_freq_shuffle(*, n, epsilon, delta=0.0, domain=None, **_):
    """The shuffle protocol with the smallest worst-case stderr (needs δ > 0)."""
    if domain is None or delta <= 0:
        return None
    d = domain if isinstance(domain, int) else len(domain)
    try:
        proto = shuffle_protocol("auto", d, n, epsilon, delta)
    except ValueError:
        return None
    return Option(
        "shuffle",
        proto.name if hasattr(proto, "name") else type(proto).__name__,
        {},
        _worst_se(proto),
        messages_per_user=float(proto.messages_per_user),
        bits_per_user=float(proto.bits_per_user),
        delta=delta,
    )


def _prefix_boxes(domain: int) -> list[tuple[tuple[int, int], ...]]:
    """The default queries of :func:`range_counts` in 1-d: every prefix [0, j), j = 1..domain."""
    return [((0, j),) for j in range(1, domain + 1)]


def _plan_ranges_central(*, n, epsilon, domain=None, **_):
    """RMS over the prefix ranges of the exact stderr: each range sums its dyadic nodes' noise."""
    if domain is None:
        return None
    B0 = domain if isinstance(domain, int) else len(domain)
    B = _pad_pow2(B0)
    k = 1 + int(math.log2(B))
    node_var = discrete_laplace_variance(2.0 * k / epsilon)
    coef2 = [sum(c * c for c in box_terms(b, B).values()) for b in _prefix_boxes(B0)]
    return Option("central", "tree-discrete-laplace", {"k": k}, math.sqrt(node_var * float(np.mean(coef2))))


def _plan_ranges_local(*, n, epsilon, domain=None, **_):
    """RMS over the prefix ranges of the exact stderr of the summed cells (uniform data, n/d per cell)."""
    if domain is None:
        return None
    from privstats.local.choose import linear_variance, make_oracle

    B0 = domain if isinstance(domain, int) else len(domain)
    M = _pad_pow2(B0)
    oracle = make_oracle("auto", M, epsilon)
    counts = np.full(M, n / B0)
    counts[B0:] = 0.0
    var = [linear_variance(oracle, counts, (np.arange(M) < j).astype(float)) for j in range(1, B0 + 1)]
    return Option(
        "local",
        f"flat-{oracle.name}",
        {"oracle": oracle.name},
        math.sqrt(float(np.mean(var))),
        messages_per_user=1.0,
        bits_per_user=float(oracle.bits_per_user),
    )


def _plan_ranges_shuffle(*, n, epsilon, delta=0.0, domain=None, **_):
    """RMS over the prefix ranges of the exact stderr: the Hadamard node estimates' variance
    (N − x)·2^−τ/(1 − 2^−τ) at the node counts of uniform data, summed over each range's nodes."""
    if domain is None or delta <= 0:
        return None
    B0 = domain if isinstance(domain, int) else len(domain)
    B = _pad_pow2(B0)
    k = 1 + int(math.log2(B))
    try:
        proto = HadamardMultiMessage(B, n=n, epsilon=epsilon, delta=delta, k=k)
    except ValueError:
        return None
    sets = support_nd(np.arange(B0)[:, None], B)  # one point per cell, weighted by n / B0
    node_counts = np.bincount(sets[sets >= 0], minlength=B) * (n / B0)
    node_var = proto.variance(node_counts)
    var = [sum(c * c * node_var[node] for node, c in box_terms(b, B).items()) for b in _prefix_boxes(B0)]
    return Option(
        "shuffle",
        "tree-shuffle-hadamard",
        {"k": k},
        math.sqrt(float(np.mean(var))),
        messages_per_user=float(proto.messages_per_user),
        bits_per_user=float(proto.bits_per_user),
        delta=delta,
    )


def _pad_pow2(B: int) -> int:
    return 1 << math.ceil(math.log2(max(B, 2)))


def range_counts(
    values,
    ranges=None,
    *,
    domain: int,
    epsilon: float,
    delta: float | None = None,
    model: str | None = None,
    rng: RNGLike = None,
    postprocess: str = "clip",
    **options,
) -> Estimate:
    """Private counts of points in ranges (1-d) or boxes (d-dim), by the dyadic tree of §5.

    ``values``: integers in [0, domain) (1-d), or an (n, dim) integer array (each axis in
    [0, domain)).  ``ranges``: half-open ``(lo, hi)`` pairs (1-d) or boxes
    ``[(lo_1, hi_1), …]``; ``None`` (1-d only) gives all prefix counts #{x < j}, j = 1..domain.
    Shuffle: the Hadamard oracle on tree nodes (k = (1 + log₂B)^dim elements per user);
    central: discrete Laplace on the tree nodes; local: sums of a local oracle's leaf estimates.

    >>> import numpy as np
    >>> x = np.random.default_rng(0).integers(0, 8, 4000)
    >>> est = range_counts(x, [(0, 4), (2, 7)], domain=8, epsilon=1.0, model="central", rng=1)
    >>> est.value.shape
    (2,)
    """
    epsilon = check_epsilon(epsilon)
    model = _resolve_model("range_counts", model)
    check_choice(postprocess, "postprocess", ("clip", "none"))
    epsilon = check_epsilon(epsilon, model=model)
    if delta is not None:
        check_delta(delta)
    B0 = check_domain_size(domain, "domain")
    B = _pad_pow2(B0)
    pts, dim = _points(values, B0)
    boxes = _boxes(ranges, dim, B0)
    M = B**dim
    if M > MAX_CELLS:  # the tree keeps B^dim node counts (and local: B^dim cells x dim coordinates)
        raise ValueError(
            f"domain: {B}^{dim} = {M:.3g} cells exceed {MAX_CELLS} (2 GiB of counts); use a smaller "
            "domain or fewer dimensions"
        )
    c = Call.of("range_counts", locals(), n=pts.shape[0], k=(1 + int(math.log2(B))) ** dim)
    c.terms = [box_terms(b, B) for b in boxes]
    return _in_range(choose("range_counts", model, "auto").run(c), c.n, postprocess, "range_counts")


def _points(values, B0: int) -> tuple[np.ndarray, int]:
    """Item codes as an (n, dim) array and dim (values: 1-d codes or an (n, dim) array)."""
    raw = check_array(values, "values", kind="any", ndim=None)
    dim = 1 if raw.ndim == 1 else raw.shape[1] if raw.ndim == 2 else 0
    if dim == 0:
        raise ValueError("values must be a 1-d array of integers or an (n, dim) integer array")
    pts = np.column_stack(
        [as_domain_values(raw if dim == 1 else raw[:, s], B0, "values") for s in range(dim)]
    )
    return pts, dim


def _boxes(ranges, dim: int, B0: int) -> list[tuple[tuple[int, int], ...]]:
    """The queried boxes, checked: half-open integer (lo, hi) per axis inside [0, B0]; None: prefixes."""
    if ranges is None:
        if dim != 1:
            raise ValueError("ranges is required for multi-dimensional values")
        return _prefix_boxes(B0)
    boxes = []
    shape = "(lo, hi)" if dim == 1 else f"{dim} pairs (lo, hi)"
    if not hasattr(ranges, "__len__") or isinstance(ranges, (str, bytes)):
        raise ValueError(f"ranges must be a list of (lo, hi) pairs or None, got {ranges!r}")
    single = dim == 1 and len(ranges) == 2 and all(np.isscalar(e) for e in ranges)  # one (lo, hi)
    for r in [ranges] if single else ranges:
        try:
            box = ((r[0], r[1]),) if dim == 1 and len(r) == 2 else tuple((b[0], b[1]) for b in r)
            if len(box) != dim or any(len(b) != 2 for b in (r if dim > 1 else [r])):
                raise TypeError
        except (TypeError, IndexError):
            raise ValueError(
                f"ranges must be a list of {shape} (half-open, integer ends), got {r!r}"
            ) from None
        if any(not isinstance(e, (int, np.integer)) or isinstance(e, bool) for b in box for e in b):
            raise ValueError(
                f"ranges: range ends must be integers (half-open [lo, hi) over item codes), got {r!r}"
            )
        if any(not (0 <= lo <= hi <= B0) for lo, hi in box):
            raise ValueError(f"ranges: each range must be {shape} with 0 <= lo <= hi <= {B0}, got {r!r:.80}")
        boxes.append(tuple((int(lo), int(hi)) for lo, hi in box))
    return boxes


def _ranges_local(c: Call) -> Estimate:
    """Local model: one report of the flattened cell to a frequency oracle; a box sums its cells."""
    from privstats.local.choose import linear_variance, make_oracle

    pts, dim, B, n = c.pts, c.dim, c.B, c.n
    flat = np.zeros(n, dtype=np.int64)
    for s in range(dim):
        flat += pts[:, s] * B**s
    oracle = make_oracle(c.options.get("protocol", "auto"), c.M, c.epsilon)
    est = oracle.estimate(_draw_state(oracle, flat, c.rng))
    grids = np.indices((B,) * dim).reshape(
        dim, -1
    )  # axis s of flattened cell (sum id_s B^s, C-order reversed)
    coords = [np.asarray(grids[dim - 1 - s]) for s in range(dim)]
    inside = [
        np.all([(coords[s] >= lo) & (coords[s] < hi) for s, (lo, hi) in enumerate(b)], axis=0)
        for b in c.boxes
    ]
    # plug-in counts for the variance: clipped at 0, the padding cells (publicly empty) at 0, rescaled
    # to the public total n; the clipped counts alone summed to about twice n where the noise exceeds
    # the counts, and the stderr read 1.6x the spread at n = 300, ε = 0.5 (issue 26)
    plug = np.clip(est.value, 0, n) * np.all([cs < c.B0 for cs in coords], axis=0)
    total = float(plug.sum())
    plug = plug * (n / total) if total > 0 else np.full(plug.size, n / plug.size)
    value = np.array([est.value[m].sum() for m in inside])
    se = np.array([math.sqrt(max(linear_variance(oracle, plug, m.astype(float)), 0.0)) for m in inside])
    return Estimate(
        value=value,
        stderr=se,
        guarantee=est.guarantee,
        model="local",
        protocol=f"flat-{est.protocol}",
        params={**est.params, "domain": c.B0, "dims": dim},
        n=n,
        messages_per_user=est.messages_per_user,
        bits_per_user=est.bits_per_user,
    )


def _tree_estimate(c: Call, noisy, node_se, guarantee, protocol: str, params: dict, mpu, bpu) -> Estimate:
    """A box's count sums its dyadic nodes' noisy counts (shared by the central and shuffle trees)."""
    value = np.array([sum(w * noisy[node] for node, w in t.items()) for t in c.terms])
    se = np.array([math.sqrt(sum(w * w * node_se[node] ** 2 for node, w in t.items())) for t in c.terms])
    return Estimate(
        value=value,
        stderr=se,
        guarantee=guarantee,
        model=c.model,
        protocol=protocol,
        params=params,
        n=c.n,
        messages_per_user=mpu,
        bits_per_user=bpu,
        # each box's dyadic nodes and weights, and the nodes' noise variances: the boxes' covariance
        details={
            "max_terms": max((len(t) for t in c.terms), default=0),
            "terms": c.terms,
            "node_variance": np.asarray(node_se, dtype=float) ** 2,
        },
    )


def _ranges_central(c: Call) -> Estimate:
    """Central model: discrete Laplace on every node of the dyadic tree (sensitivity 2k)."""
    sets = support_nd(c.pts, c.B)
    ids = sets[sets >= 0]
    k, epsilon, M = c.k, c.epsilon, c.M
    scale = 2.0 * k / epsilon
    noisy = add_count_noise(np.bincount(ids, minlength=M), epsilon, sensitivity=2 * k, rng=c.rng).astype(
        float
    )
    node_se = np.full(M, math.sqrt(discrete_laplace_variance(scale)))
    params = {"domain": c.B0, "dims": c.dim, "tree_leaves": c.B, "k": k, "scale": scale}
    est = _tree_estimate(c, noisy, node_se, PureDP(epsilon), "tree-discrete-laplace", params, 0, 0)
    # a box's noise is the exact sum of its nodes' discrete Laplace draws: the interval is that law's
    weights = [list(t.values()) for t in c.terms]
    law = {"discrete_laplace_scale": scale, "discrete_laplace_weights": weights}
    return replace(est, details={**est.details, "ci_law": law})


def _ranges_shuffle(c: Call) -> Estimate:
    """Shuffle model: the Hadamard multi-message oracle over the k tree nodes of each user."""
    sets = support_nd(c.pts, c.B)
    delta = require_delta(c.delta, c.n)
    proto = HadamardMultiMessage(c.M, n=c.n, epsilon=c.epsilon, delta=delta, k=c.k, **c.options)
    est = proto.estimate(_draw_state(proto, sets, c.rng))
    params = {**proto.params, "domain": c.B0, "dims": c.dim, "tree_leaves": c.B}
    guarantee = ApproxDP(c.epsilon, delta)
    return _tree_estimate(
        c,
        est.value,
        est.stderr,
        guarantee,
        "tree-shuffle-hadamard",
        params,
        proto.messages_per_user,
        proto.bits_per_user,
    )


for _model, _protocol, _predictor, _run in (
    ("central", "tree-discrete-laplace", _plan_ranges_central, _ranges_central),
    ("local", "flat-oracle", _plan_ranges_local, _ranges_local),
    ("shuffle", "tree-shuffle-hadamard", _plan_ranges_shuffle, _ranges_shuffle),
):
    unit("range_counts", _model, _protocol, method="auto", predictor=_predictor)(_run)


def _leaf_se(model: str, B: int, m: int, epsilon: float, delta: float, count: float = 0.0) -> float:
    """Noise stderr of the leaf level's count of an item held by ``count`` of its ``m`` users."""
    if model == "central":
        return math.sqrt(discrete_laplace_variance(2 / epsilon))
    if model == "local":
        from privstats.local.choose import make_oracle

        counts = np.zeros(B)
        counts[0] = min(count, m)
        return float(np.sqrt(make_oracle("auto", B, epsilon).variance(m, counts)[0]))
    return _worst_se(HadamardMultiMessage(B, n=m, epsilon=epsilon, delta=delta))


def _level_estimator(model: str, epsilon: float, shuffle_delta: float, rng: RNGLike, comm: dict):
    """The prefix tree's per-level estimator of the model: ``(level, items, g) -> (counts, stderr)``;
    records the communication cost of the oracle levels in ``comm``."""

    def level_estimator(level, items, g):
        size = 1 << level
        m = max(items.size, 2)
        if items.size == 0:  # no user drew this level (tiny n): it finds nothing
            return np.zeros(size), np.full(size, np.inf)
        if model == "central":
            # one stream for all levels: re-seeding every level with the caller's int seed would
            # reuse the same noise sequence; rng=None keeps the OS CSPRNG for real data
            noisy = add_count_noise(
                np.bincount(items, minlength=size), epsilon, sensitivity=2, rng=None if rng is None else g
            )
            return noisy.astype(float), np.full(size, math.sqrt(discrete_laplace_variance(2 / epsilon)))
        if model == "local":
            from privstats.local.choose import make_oracle

            oracle = make_oracle("auto", size, epsilon)
            est = oracle.estimate(_draw_state(oracle, items, g))
        else:
            proto = HadamardMultiMessage(size, n=m, epsilon=epsilon, delta=shuffle_delta)
            est = proto.estimate(_draw_state(proto, items, g))
        comm["messages"] = est.messages_per_user
        comm["bits"] = max(comm.get("bits", 0), est.bits_per_user)
        return np.asarray(est.value, float), np.asarray(est.stderr, float)

    return level_estimator


def heavy_hitters(
    values,
    *,
    domain: int,
    epsilon: float,
    delta: float | None = None,
    threshold: float | None = None,
    model: str | None = None,
    rng: RNGLike = None,
) -> Estimate:
    """Elements whose count is at least ``threshold`` (a prefix tree over log₂B oracles; users split by level).

    ``estimate.value`` holds the found elements, ``details["counts"]``/``details["stderr"]``
    their estimated counts and stderrs (the oracle's noise and the sampling of the leaf level's
    users, a random 1/L of all).  ``threshold`` defaults to 5 noise stderrs of a leaf estimate.

    >>> import numpy as np
    >>> x = np.concatenate([np.full(3000, 7), np.random.default_rng(0).integers(0, 64, 3000)])
    >>> est = heavy_hitters(x, domain=64, epsilon=1.0, model="central", rng=1)
    >>> 7 in est.value.tolist()
    True
    """
    epsilon = check_epsilon(epsilon)
    model = _resolve_model("heavy_hitters", model)
    epsilon = check_epsilon(epsilon, model=model)
    if delta is not None:
        check_delta(delta)
    if threshold is not None:
        check_real(threshold, "threshold")
    B0 = check_domain_size(domain, "domain")
    B = _pad_pow2(B0)
    codes = as_domain_values(values, B0)
    n = codes.size
    L = int(math.log2(B))
    if model == "shuffle":
        delta = require_delta(delta, n)
    shuffle_delta = float(delta or 0.0)  # the shuffle model's δ (unused by the other models)
    comm: dict[str, Any] = {}
    level_estimator = _level_estimator(model, epsilon, shuffle_delta, rng, comm)
    if threshold is None:
        m = max(n // L, 2)
        threshold = 5 * _leaf_se(model, B, m, epsilon, shuffle_delta) * n / m
    items, counts, se = prefix_tree_heavy_hitters(
        codes, B, threshold=float(threshold), level_estimator=level_estimator, rng=rng
    )
    keep = items < B0
    guarantee = ApproxDP(epsilon, shuffle_delta) if model == "shuffle" else PureDP(epsilon)
    return Estimate(
        value=items[keep],
        stderr=None,
        guarantee=guarantee,
        model=model,
        protocol=f"prefix-tree-{model}",
        params={"domain": B0, "levels": L, "threshold": float(threshold)},
        n=n,
        messages_per_user=comm.get("messages", 0),
        bits_per_user=comm.get("bits", 0),
        details={"counts": counts[keep], "stderr": se[keep]},
    )


def _plan_heavy(model: str, *, n, epsilon, delta=0.0, domain=None, count=None, **_) -> Option | None:
    """Stderr of a found item's count (noise and level sampling) at true count ``count``
    (default: the detection threshold, the smallest count reliably found)."""
    if domain is None or (model == "shuffle" and delta <= 0):
        return None
    B = _pad_pow2(domain if isinstance(domain, int) else len(domain))
    L = max(int(math.log2(B)), 1)
    m = max(n // L, 2)
    scale = n / m
    try:
        base = _leaf_se(model, B, m, epsilon, delta)
    except ValueError:  # no shuffle protocol reaches (ε, δ) at this n
        return None
    c = 5 * base * scale if count is None else float(count)
    noise = _leaf_se(model, B, m, epsilon, delta, c / scale) * scale
    msgs, bits = 0.0, 0.0  # the leaf level's protocol: the widest a user can be asked to run
    if model == "local":
        from privstats.local.choose import make_oracle

        msgs, bits = 1.0, float(make_oracle("auto", B, epsilon).bits_per_user)
    elif model == "shuffle":
        proto = HadamardMultiMessage(B, n=m, epsilon=epsilon, delta=delta)
        msgs, bits = float(proto.messages_per_user), float(proto.bits_per_user)
    return Option(
        model,
        f"prefix-tree-{model}",
        {"levels": L, "threshold": round(5 * base * scale, 3)},
        math.sqrt(noise**2 + c * (1 - min(c / n, 1.0)) * (scale - 1)),
        messages_per_user=msgs,
        bits_per_user=bits,
        delta=delta if model == "shuffle" else 0.0,
    )


for _m in ("central", "shuffle", "local"):
    register("heavy_hitters", _m, f"prefix-tree-{_m}")(lambda _m=_m, **kw: _plan_heavy(_m, **kw))
