"""The secure model's ECDF-family release: a grid histogram, two full noise shares, the opening.

What the DAP deployment (:mod:`privstats.services.dap`, Prio3Histogram) and the in-process
``model="secure"`` simulation share, so that both release the same law:

* :class:`SecureSpec` — the public parameters (statistic, grid, ε, tree mechanism); maps a value
  (and label) to its cell of the Prio3Histogram measurement.
* :func:`server_noise` — one aggregator's noise share of the tree statistic: a full discrete
  Laplace per node (exact sampler, OS CSPRNG when ``rng`` is None), drawn as
  :class:`~privstats.secure.aggregation.AggregationServer` draws it.
* :func:`open_histogram` — the collector's post-processing of the opened noisy statistic
  (ECDF, quantiles, Hosmer–Lemeshow; the ROC's, which needs the statistics layer's AUC variance,
  is :func:`privstats.services.opening.open_result`).
* :func:`release_in_process` — the batch histogram summed in the clear plus both aggregators'
  noise shares: the law of the deployed release, at any n.

>>> import numpy as np
>>> spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=16)
>>> x = np.random.default_rng(0).uniform(size=2000)
>>> est = release_in_process(spec, x, rng=1)
>>> bool(abs(est.evaluate(0.5) - np.mean(x <= 0.5)) < 0.05)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = [
    "PROTOCOL",
    "STATISTICS",
    "SecureSpec",
    "noisy_statistic",
    "open_curve",
    "open_histogram",
    "release_in_process",
    "report_bits",
    "server_noise",
]

STATISTICS = ("ecdf", "quantiles", "roc", "hosmer_lemeshow")
PROTOCOL = "dap-09+prio3"  # what a deployed secure task runs (Prio3Histogram under DAP-09)
_LABELLED = ("roc", "hosmer_lemeshow")  # label-split contributions: one curve per class
_ROC = (
    "statistic: the ROC opening needs the statistics layer (privstats.services.opening.open_result; "
    "in process: privstats.roc_curve(..., model='secure'))"
)


@dataclass(frozen=True)
class SecureSpec:
    """Public parameters of a secure task.

    ``statistic``: ``"ecdf"`` and ``"quantiles"`` (one cell of the N+1 grid cells per report,
    the last for values above the grid; ``neighbours`` as in :func:`privstats.ecdf`), or
    ``"roc"`` (private labels: 2 (N+1) label-split cells, positives first; each class curve is
    ε/2-DP under add/remove, as ``privstats.roc_curve(..., labels="private", model="secure")``),
    or ``"hosmer_lemeshow"`` (the same over predicted probabilities, bounds within [0, 1]; see
    :mod:`privstats.secure.hosmer_lemeshow`).

    ``shift`` (``"quantiles"`` only): the grid's public dither, a fraction u in [0, 1) of a cell drawn
    when the task is made (:func:`~privstats.services.dap.task.new_dap_task`, the OS CSPRNG).  The grid
    is then ``grid`` cells of width (hi - lo)/(grid - 1) from lo - u·width
    (:func:`~privstats.cdf.tree.dithered_bounds`, as the central tree's), so a tied value's place in its
    cell is uniform over tasks and the release's rounding to the cell midpoint is unbiased noise; the
    clients' values are still checked against ``bounds``, and the Prio3Histogram length is unchanged.

    >>> SecureSpec("roc", epsilon=1.0, bounds=(0, 1), grid=7).length  # 2 classes x (7 + 1) cells
    16
    """

    statistic: str
    epsilon: float
    bounds: tuple[float, float]
    grid: int = 1024
    method: str = "auto"
    neighbours: str = "replace"
    smoothing: str | None = None
    shift: float | None = None

    def __post_init__(self):
        from privstats.validation import check_bounds, check_choice, check_epsilon, check_positive_int

        check_choice(self.statistic, "statistic", STATISTICS)
        check_epsilon(self.epsilon)
        object.__setattr__(self, "bounds", tuple(float(b) for b in check_bounds(self.bounds)))
        check_positive_int(self.grid, "grid")
        if self.shift is not None:
            self._check_shift()
        check_choice(self.neighbours, "neighbours", ("replace", "add-remove"))
        if self.statistic in _LABELLED and self.neighbours != "add-remove":
            object.__setattr__(self, "neighbours", "add-remove")
        if self.statistic == "hosmer_lemeshow" and (self.bounds[0] < 0.0 or self.bounds[1] > 1.0):
            raise ValueError(
                f"bounds: hosmer_lemeshow takes probabilities, bounds within [0, 1], got {self.bounds}"
            )

    def _check_shift(self) -> None:
        if self.statistic != "quantiles":
            raise ValueError(f"shift: only quantiles tasks dither their grid, not {self.statistic!r}")
        u = self.shift
        if isinstance(u, bool) or not isinstance(u, (int, float)) or not 0.0 <= float(u) < 1.0:
            raise ValueError(f"shift must be a fraction of a cell in [0, 1), got {u!r}")
        if self.grid < 2:
            raise ValueError("shift: a dithered grid needs grid >= 2")
        object.__setattr__(self, "shift", float(u))

    @property
    def grid_bounds(self) -> tuple[float, float]:
        """The grid's span: ``bounds``, or with a ``shift`` the dithered cells' (containing ``bounds``)."""
        if self.shift is None:
            return self.bounds
        from privstats.cdf.tree import dithered_bounds

        return dithered_bounds(self.bounds, self.grid, self.shift)[0]

    @property
    def cell_width(self) -> float:
        lo, hi = self.grid_bounds
        return (hi - lo) / self.grid

    @property
    def thresholds(self) -> np.ndarray:
        from privstats.cdf.tree import uniform_grid

        return uniform_grid(self.grid_bounds, self.grid)

    @property
    def internal(self) -> np.ndarray:
        t = self.thresholds
        return t if t[-1] >= self.bounds[1] else np.append(t, self.bounds[1])

    @property
    def n_cells(self) -> int:
        """Cells of one histogram: N + 1."""
        return int(self.internal.size) + 1

    @property
    def n_parts(self) -> int:
        """Histograms (class curves) in the measurement."""
        return 2 if self.statistic in _LABELLED else 1

    @property
    def length(self) -> int:
        """The Prio3Histogram length: ``n_parts * n_cells``."""
        return self.n_parts * self.n_cells

    @property
    def curve_epsilon(self) -> float:
        return self.epsilon / 2 if self.statistic in _LABELLED else self.epsilon

    @property
    def mechanism(self):
        from privstats.cdf.tree import choose_mechanism

        return choose_mechanism(int(self.internal.size), self.curve_epsilon, self.neighbours, self.method)

    def cells(self, values, labels=None) -> np.ndarray:
        """Cell index per report, (B, 1) int64 (the Prio3Histogram measurement); validates the inputs."""
        from privstats.validation import as_binary_labels, as_float_array, check_same_length

        x = as_float_array(values, "values", bounds=self.bounds)
        cell = np.searchsorted(self.internal, x, side="left").astype(np.int64)
        if self.statistic in _LABELLED:
            if labels is None:
                raise ValueError(f"labels are required for statistic={self.statistic!r}")
            y = as_binary_labels(labels, "labels")
            check_same_length(values=x, labels=y)
            cell = cell + np.where(y, 0, self.n_cells)
        elif labels is not None:
            raise ValueError(f"labels are only used by statistics {_LABELLED}, not {self.statistic!r}")
        return cell[:, None]

    def to_dict(self) -> dict:
        d = {
            "statistic": self.statistic,
            "epsilon": self.epsilon,
            "bounds": list(self.bounds),
            "grid": self.grid,
            "method": self.method,
            "neighbours": self.neighbours,
            "smoothing": self.smoothing,
        }
        return d if self.shift is None else {**d, "shift": self.shift}

    @classmethod
    def from_dict(cls, d: dict) -> SecureSpec:
        return cls(
            statistic=d["statistic"],
            epsilon=float(d["epsilon"]),
            bounds=tuple(d["bounds"]),
            grid=int(d.get("grid", 1024)),
            method=d.get("method", "auto"),
            neighbours=d.get("neighbours", "replace"),
            smoothing=d.get("smoothing"),
            shift=d.get("shift"),
        )


def report_bits(length: int, chunk_length: int | None = None) -> float:
    """Bits one client uploads for a Prio3Histogram of ``length`` cells under DAP-09.

    Report id (16 bytes), time (8), public share (two joint-randomness parts), the leader's
    input share (measurement + proof in Field128, a blind), the helper's (two seeds and a blind),
    each HPKE-sealed (32-byte encapsulated key, 16-byte tag).

    >>> report_bits(65, 8)
    16064.0
    """
    from privstats.secure.vdaf import vdaf_from_config

    chunk = chunk_length or max(1, math.isqrt(length))
    vdaf = vdaf_from_config({"type": "histogram", "length": int(length), "chunk_length": int(chunk)})
    size = vdaf.field.ENCODED_SIZE
    leader = size * (vdaf.flp.MEAS_LEN + vdaf.flp.PROOF_LEN) + 16
    return 8.0 * (16 + 8 + 32 + leader + 48 + 2 * (32 + 16))


def server_noise(spec: SecureSpec, party: int, rng: RNGLike = None) -> np.ndarray:
    """Aggregator ``party``'s (0 leader, 1 helper) noise shares per class curve, int64 (n_parts, n_nodes).

    Each is a full discrete Laplace per tree node, drawn by the in-process
    :class:`~privstats.secure.aggregation.AggregationServer` of the same index, so the deployed
    law is the in-process law by construction.  Exact; OS CSPRNG when ``rng`` is None.

    >>> server_noise(SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=3), 0, rng=1).shape[0]
    1
    """
    from privstats.secure.aggregation import AggregationServer

    mech = spec.mechanism
    gen = None if rng is None else np.random.default_rng(as_source(rng).uint64(4).tolist())
    out = []
    for _ in range(spec.n_parts):
        srv = AggregationServer(party, 2, mech, rng=gen)
        out.append(np.asarray(srv.noise_shares(), dtype=np.int64))
    return np.stack(out)


def noisy_statistic(spec: SecureSpec, hist, rng: RNGLike = None) -> np.ndarray:
    """The tree statistic of a batch histogram plus the leader's and the helper's noise shares (int64).

    What the collector opens from the two aggregators' noisy shares, for the same noise draws
    (the leader's drawn first).

    >>> spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=3)
    >>> noisy_statistic(spec, [1, 2, 0, 1], rng=0).dtype
    dtype('int64')
    """
    h = np.asarray(hist, dtype=np.int64)
    if h.shape != (spec.length,):
        raise ValueError(f"hist: expected {spec.length} cell counts, got shape {h.shape}")
    mech, src = spec.mechanism, None if rng is None else as_source(rng)
    noise = [server_noise(spec, p, src) for p in (0, 1)]
    parts = []
    for j in range(spec.n_parts):
        cells = h[j * spec.n_cells : (j + 1) * spec.n_cells]
        stat = np.asarray(mech.statistic(np.cumsum(cells[:-1])), dtype=np.int64)
        for z in noise:
            stat = stat + np.asarray(mech.noise_to_statistic(z[j]), dtype=np.int64)
        parts.append(stat)
    return np.concatenate(parts)


# --------------------------------------------------------------------------- the opening


def open_curve(spec: SecureSpec, noisy: np.ndarray, n: int | None, smoothing: str):
    """PrivateECDF from one class curve's opened noisy statistic, post-processed as
    ``privstats.ecdf(model="secure")``: the same mechanism, noise law, smoothing and standard errors."""
    from privstats.cdf.result import PrivateECDF
    from privstats.cdf.smoothing import smooth
    from privstats.estimate import Estimate
    from privstats.privacy import PureDP
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.noise import noise_variance_factor

    # each aggregator's share is a full discrete Laplace (the guarantee holds against an aggregator that
    # knows its share and sees the output): the opened noise has noise_variance_factor(2) x the central variance
    mech = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2))
    public_n = n is not None and spec.neighbours == "replace"
    counts = mech.estimate_counts(noisy, n if public_n else None)
    sd = np.sqrt(mech.count_variance())
    total = float(n) if public_n else max(float(counts[-1]), 1.0)  # type: ignore[arg-type]
    F, se = counts / total, sd / total
    k = spec.thresholds.size
    noise_model = {"mechanism": mech, "total": total, "public_total": public_n, "values": F}
    values = smooth(F[:k], smoothing)
    params = {
        **mech.params(),
        "smoothing": smoothing,
        "servers": 2,
        "secure_protocol": PROTOCOL,
        "validity": "Prio3Histogram (VDAF-08): the aggregators' FLP check of each report",
    }
    est = Estimate(
        values,
        stderr=se[:k],
        guarantee=PureDP(spec.curve_epsilon),
        model="secure",
        protocol=mech.name + "+" + PROTOCOL,
        params=params,
        n=int(n) if public_n else None,  # type: ignore[arg-type]
        neighbours=spec.neighbours,
        messages_per_user=1.0,
        bits_per_user=report_bits(spec.length),
        # as the in-process release's: the interval is the raw curve's, met with [0, 1]
        details={"thresholds": spec.thresholds, "raw": F[:k], "unbiased": F[:k], "noise_model": noise_model},
        support=(0.0, 1.0),
    )
    return PrivateECDF(spec.thresholds, values, se[:k], estimate=est, raw=F[:k])


def _open_quantiles(spec: SecureSpec, noisy: np.ndarray, n: int, q, meta: dict):
    from privstats.estimate import Estimate

    if q is None:
        raise ValueError("q (quantile probabilities) is required to open a quantiles task")
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qs.ndim != 1 or qs.size == 0 or not np.all(np.isfinite(qs)) or np.any((qs < 0) | (qs > 1)):
        raise ValueError("q must be probabilities in [0, 1]")
    res = open_curve(spec, noisy, n, spec.smoothing or "isotonic")
    params = {**res.estimate.params, "method": "tree", "q": qs.tolist()}
    cell = spec.cell_width
    if spec.shift is not None:
        params["grid_shift"] = spec.shift * cell  # in value units, as privstats.quantiles reports it
    return Estimate(
        np.asarray(res.quantile(qs)) - cell / 2,  # the cell's midpoint, as privstats.quantiles releases
        stderr=None,  # the release law's (privstats.services.opening.open_result: the statistics layer)
        guarantee=res.estimate.guarantee,
        model="secure",
        protocol="ecdf-tree+algorithm1",
        params=params,
        n=res.estimate.n,
        neighbours=spec.neighbours,
        messages_per_user=1.0,
        bits_per_user=res.estimate.bits_per_user,
        details={"curve": res, **meta},
    )


def prefix_noise_law(mech):
    """``draw(gen, reps)``: ``reps`` draws of one released curve's prefix-count noise by the mechanism's
    own law (:func:`privstats.cdf.tree.count_noise_draws`: each server's discrete Laplace on the tree's
    nodes, through the consistent estimate)."""
    from privstats.cdf.tree import count_noise_draws

    return lambda gen, reps: count_noise_draws(mech, gen, reps)


def _open_hl(spec: SecureSpec, parts, n: int | None, meta: dict, groups: int, rng: RNGLike):
    from privstats.estimate import Estimate
    from privstats.privacy import PureDP
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.hosmer_lemeshow import hl_from_class_counts
    from privstats.secure.noise import noise_variance_factor
    from privstats.validation import check_positive_int

    groups = check_positive_int(groups, "groups", minimum=3, maximum=spec.grid)
    mech = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2))
    pos, neg = (mech.estimate_counts(p, None) for p in parts)
    cov = mech.count_covariance()
    gen = np.random.default_rng(as_source(rng).uint64(4).tolist())
    r = hl_from_class_counts(
        pos,
        neg,
        cov,
        cov,
        spec.internal,
        spec.bounds[0],
        groups=groups,
        rng=gen,
        bootstrap=1000,
        prefix_noise=prefix_noise_law(mech),
    )
    keys = ["p_value", "unbiased", "noise_bias", "E1", "E0", "O_minus_E", "var_O_minus_E", "V_floor"]
    keys += ["unbiased_classical", "dof", "quantisation", "ci_fn"]
    return Estimate(
        r["median_unbiased"],  # >= 0; the mean-unbiased r["unbiased"] (may be < 0) stays in details
        stderr=r["stderr"],
        support=(0.0, np.inf),
        guarantee=PureDP(spec.epsilon),
        model="secure",
        protocol="hosmer-lemeshow-two-ecdfs+" + PROTOCOL,
        params={"groups": groups, "epsilon_per_curve": spec.curve_epsilon, **mech.params()},
        n=None if n is None else int(n),  # the guarantee is replace-one: the batch size is public
        neighbours="replace",
        messages_per_user=1.0,
        bits_per_user=report_bits(spec.length),
        details={
            **{k: r[k] for k in keys},
            "H_plain": r["H"],
            "p_value_method": "parametric bootstrap under calibration (Binomial per group) with the release noise",
            "stderr_method": "the servers' noise law re-added to shrunk plug-in group sums, plus the groups' moving",
            **meta,
        },
    )


def open_histogram(
    spec: SecureSpec, noisy, n: int, *, q=None, n_invalid: int = 0, groups: int = 10, rng: RNGLike = None
):
    """The statistic from the opened noisy tree statistic (int64, every class curve, flattened).

    ``ecdf`` → :class:`~privstats.cdf.result.PrivateECDF`; ``quantiles`` → an :class:`Estimate`
    at probabilities ``q`` (Algorithm 1 on the isotonic curve); ``hosmer_lemeshow`` → an Estimate
    of H over ``groups`` groups (``rng`` seeds its bootstrap).  ``n`` is the batch size (used under
    replace-one neighbours).  ``roc`` → ValueError (:func:`privstats.services.opening.open_result`).
    """
    parts = np.split(np.asarray(noisy, dtype=np.int64), spec.n_parts)
    meta = {"n_invalid": int(n_invalid)}
    if spec.statistic == "ecdf":
        res = open_curve(spec, parts[0], n, spec.smoothing or "l2")
        res.estimate.details.update(meta)
        return res
    if spec.statistic == "quantiles":
        return _open_quantiles(spec, parts[0], n, q, meta)
    if spec.statistic == "hosmer_lemeshow":
        return _open_hl(spec, parts, n, meta, groups, rng)
    raise ValueError(_ROC)


def release_in_process(
    spec: SecureSpec, values, labels=None, *, rng: RNGLike = None, q=None, groups: int = 10
):
    """The release of honest clients' values, in law identical to the deployed DAP leader and helper.

    The batch histogram is summed in the clear (what the two Prio3 aggregate shares add up to) and
    both aggregators' noise shares are drawn exactly as deployed (:func:`noisy_statistic`); no
    per-report shares, so it scales to any n.  ``roc`` is released by ``privstats.roc_curve``.
    """
    if spec.statistic == "roc":
        raise ValueError(_ROC)
    cells = spec.cells(values, labels).ravel()
    hist = np.bincount(cells, minlength=spec.length)
    src = None if rng is None else as_source(rng)
    noisy = noisy_statistic(spec, hist, src)
    return open_histogram(spec, noisy, int(cells.size), q=q, groups=groups, rng=src)
