"""Leader/helper secure aggregation of ECDFs, quantiles and ROC curves, robust to malicious clients.

The roles of a two-server deployment (DAP's leader and helper), as pure classes that
the HTTP services (:mod:`privstats.services.aggregators`) and the in-process
simulation share:

* :class:`SecureSpec` — what the parties agree on: statistic, grid, ε, mechanism; it
  maps a value (and label) to the contribution, one-hot blocks over F_p
  (:mod:`privstats.secure.validity`).
* :func:`encode` (client) — per report: a fresh 16-byte report id, the leader's explicit
  share (contribution + square-pair proof, minus the helper's share) and the helper's
  16-byte seed.  OS CSPRNG unless a simulation ``rng`` is given.
* :class:`SecureAggregator` (leader = party 0, helper = party 1) — decodes its shares,
  runs the two verification steps with the other server (messages: the d shares,
  then the W shares), adds the accepted shares to the batch total and, once per
  batch, releases its ``partial``: its share of the tree statistic plus its own noise
  share (drawn exactly as the in-process :class:`~privstats.secure.aggregation.AggregationServer`
  draws it).
* :func:`open_result` (analyst) — adds the two partials and post-processes exactly as
  ``privstats.ecdf(..., model="secure")`` does: same mechanism, same noise law, same
  smoothing, same standard errors.

>>> import numpy as np
>>> spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=16)
>>> x = np.random.default_rng(0).uniform(size=2000)
>>> est = run_in_process(spec, x, rng=1)
>>> bool(abs(est.evaluate(0.5) - np.mean(x <= 0.5)) < 0.05)
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.secure.validity import (
    FIELD,
    OneHotLayout,
    PrepState,
    check_value,
    decide,
    expand_seeds,
    joint_randomness,
    prepare,
    share_contributions,
    soundness_error,
)

__all__ = [
    "STATISTICS",
    "BatchTotal",
    "SecureAggregator",
    "SecureReport",
    "SecureSpec",
    "encode",
    "open_result",
    "release_in_process",
    "run_in_process",
]

STATISTICS = ("ecdf", "quantiles", "roc", "hosmer_lemeshow")
_LABELLED = ("roc", "hosmer_lemeshow")  # label-split contributions: one curve per class
_F = FIELD


@dataclass(frozen=True)
class SecureSpec:
    """Public parameters of a secure task.

    ``statistic``: ``"ecdf"`` and ``"quantiles"`` (one-hot over the N+1 grid cells,
    the last for values above the grid; ``neighbours`` as in :func:`privstats.ecdf`),
    or ``"roc"`` (private labels: one-hot over 2 (N+1) label-split cells, positives
    first; each class curve is ε/2-DP under add/remove, as
    ``privstats.roc_curve(..., labels="private", model="secure")``), or
    ``"hosmer_lemeshow"`` (the same contribution over predicted probabilities, bounds (0, 1);
    see :mod:`privstats.secure.hosmer_lemeshow`).
    """

    statistic: str
    epsilon: float
    bounds: tuple[float, float]
    grid: int = 1024
    method: str = "auto"
    neighbours: str = "replace"
    smoothing: str | None = None

    def __post_init__(self):
        from privstats.validation import check_bounds, check_choice, check_epsilon, check_positive_int

        check_choice(self.statistic, "statistic", STATISTICS)
        check_epsilon(self.epsilon)
        object.__setattr__(self, "bounds", tuple(float(b) for b in check_bounds(self.bounds)))
        check_positive_int(self.grid, "grid")
        check_choice(self.neighbours, "neighbours", ("replace", "add-remove"))
        if self.statistic in _LABELLED and self.neighbours != "add-remove":
            object.__setattr__(self, "neighbours", "add-remove")
        if self.statistic == "hosmer_lemeshow" and self.bounds != (0.0, 1.0):
            raise ValueError(f"bounds: hosmer_lemeshow takes probabilities, bounds (0, 1), got {self.bounds}")

    # ---------------------------------------------------------------- public structure
    @property
    def thresholds(self) -> np.ndarray:
        from privstats.cdf.tree import uniform_grid

        return uniform_grid(self.bounds, self.grid)

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
        """Histograms (class curves) in the contribution."""
        return 2 if self.statistic in _LABELLED else 1

    @property
    def layout(self) -> OneHotLayout:
        return OneHotLayout((self.n_parts * self.n_cells,))

    @property
    def curve_epsilon(self) -> float:
        return self.epsilon / 2 if self.statistic in _LABELLED else self.epsilon

    @property
    def mechanism(self):
        from privstats.cdf.tree import choose_mechanism

        return choose_mechanism(int(self.internal.size), self.curve_epsilon, self.neighbours, self.method)

    @property
    def soundness_error(self) -> float:
        return soundness_error(self.layout)

    def cells(self, values, labels=None) -> np.ndarray:
        """Block-relative one-hot index per report, (B, 1) int64; validates the inputs."""
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
        return {
            "statistic": self.statistic,
            "epsilon": self.epsilon,
            "bounds": list(self.bounds),
            "grid": self.grid,
            "method": self.method,
            "neighbours": self.neighbours,
            "smoothing": self.smoothing,
        }

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
        )


# ---------------------------------------------------------------------------- client


@dataclass(frozen=True)
class SecureReport:
    """One client's upload (before HPKE): report id, the leader's share, the helper's seed."""

    report_id: bytes
    leader_share: bytes  # share_length little-endian uint64 field elements
    helper_seed: bytes  # 16 bytes


def encode(spec: SecureSpec, values, labels=None, *, rng: RNGLike = None) -> list[SecureReport]:
    """The client role for a batch of values: shares + proof + report ids (OS CSPRNG by default).

    >>> reps = encode(SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=4), [0.3], rng=0)
    >>> len(reps[0].report_id), len(reps[0].leader_share), len(reps[0].helper_seed)
    (16, 56, 16)
    """
    cells = spec.cells(values, labels)
    x = spec.layout.one_hot(cells)
    return encode_vectors(spec, x, rng=rng)


def encode_vectors(spec: SecureSpec, x, *, rng: RNGLike = None, square_error=None) -> list[SecureReport]:
    """Reports for arbitrary contribution vectors ``x`` (honest ones are one-hot; tests cheat here)."""
    src = as_source(rng)
    B = int(np.asarray(x).shape[0])
    raw = src.uint64((B, 4)).astype("<u8").tobytes() if rng is not None else os.urandom(32 * B)
    ids = [raw[32 * i : 32 * i + 16] for i in range(B)]
    seeds = [raw[32 * i + 16 : 32 * i + 32] for i in range(B)]
    leader, _ = share_contributions(x, spec.layout, rng=src, seeds=seeds, square_error=square_error)
    lb = leader.astype("<u8")
    return [SecureReport(ids[i], lb[i].tobytes(), seeds[i]) for i in range(B)]


def decode_shares(spec: SecureSpec, payloads: list[bytes], party: int) -> np.ndarray:
    """(B, share_length) field shares from the decrypted payloads of one party.

    Leader payloads are the explicit vectors, helper payloads the 16-byte seeds.
    Raises ValueError for a malformed payload (wrong length, element >= p).
    """
    L = spec.layout.share_length
    if party == 0:
        if any(len(p) != 8 * L for p in payloads):
            raise ValueError(f"a leader share must be {8 * L} bytes")
        arr = np.frombuffer(b"".join(payloads), dtype="<u8").astype(np.uint64).reshape(len(payloads), L)
        if np.any(arr >= np.uint64(_F.p)):
            raise ValueError("a leader share has an element outside the field")
        return arr
    if any(len(p) != 16 for p in payloads):
        raise ValueError("a helper share must be a 16-byte seed")
    return _F.from_words(expand_seeds(payloads, L)) if payloads else np.zeros((0, L), dtype=np.uint64)


# --------------------------------------------------------------------------- servers


def _field_colsum(a: np.ndarray) -> np.ndarray:
    """Column sums of field elements (rows < 2^31)."""
    lo = np.sum(a & np.uint64(0xFFFFFFFF), axis=0, dtype=np.uint64)
    hi = np.sum(a >> np.uint64(32), axis=0, dtype=np.uint64)
    return _F.add(_F.reduce(lo), _F.mul(_F.reduce(hi), np.uint64(1 << 32)))


@dataclass
class BatchTotal:
    """A server's running share of a batch's histogram (mergeable)."""

    total: np.ndarray
    n_valid: int = 0
    n_invalid: int = 0

    @classmethod
    def empty(cls, spec: SecureSpec) -> BatchTotal:
        return cls(np.zeros(spec.layout.length, dtype=np.uint64))

    def add(self, shares: np.ndarray, accept: np.ndarray) -> None:
        acc = np.asarray(accept, dtype=bool)
        self.total = _F.add(self.total, _field_colsum(shares[acc, : self.total.size]))
        self.n_valid += int(acc.sum())
        self.n_invalid += int((~acc).sum())

    def merge(self, other: BatchTotal) -> BatchTotal:
        return BatchTotal(
            _F.add(self.total, other.total), self.n_valid + other.n_valid, self.n_invalid + other.n_invalid
        )

    def to_bytes(self) -> bytes:
        return self.total.astype("<u8").tobytes()


def _linear_in_field(fn, share: np.ndarray) -> np.ndarray:
    """Apply an integer linear map ``fn`` (int64 in/out, small coefficients) to field elements.

    Each element is split in three 21-bit limbs, the map runs in int64 on each limb, and
    the results are recombined mod p.
    """
    out = None
    for k in range(3):
        limb = ((share >> np.uint64(21 * k)) & np.uint64((1 << 21) - 1)).astype(np.int64)
        part = _F.from_int64(np.asarray(fn(limb), dtype=np.int64) % _F.p)
        part = _F.mul(part, np.uint64(pow(2, 21 * k, _F.p)))
        out = part if out is None else _F.add(out, part)
    assert out is not None
    return out


def server_noise(spec: SecureSpec, party: int, rng: RNGLike = None) -> np.ndarray:
    """One server's noise shares for each class curve (int64, (n_parts, n_nodes)).

    Drawn by the in-process :class:`~privstats.secure.aggregation.AggregationServer`
    of the same index, so the deployed law is the in-process law by construction.
    """
    from privstats.secure.aggregation import AggregationServer

    mech = spec.mechanism
    gen = None if rng is None else np.random.default_rng(as_source(rng).uint64(4).tolist())
    out = []
    for _ in range(spec.n_parts):
        srv = AggregationServer(party, 2, mech, rng=gen)
        out.append(np.asarray(srv.noise_shares(), dtype=np.int64))
    return np.stack(out)


class SecureAggregator:
    """Leader (party 0) or helper (party 1) of a secure task, for any number of batches.

    Stateless between calls except for what the caller stores: the services keep the
    shares and batch totals in their database; this class only computes.
    """

    def __init__(self, spec: SecureSpec, party: int, verify_key: bytes, task_id: bytes):
        if party not in (0, 1):
            raise ValueError("party must be 0 (leader) or 1 (helper)")
        self.spec, self.party, self.verify_key, self.task_id = spec, party, bytes(verify_key), bytes(task_id)

    def prepare(self, report_ids: list[bytes], shares: np.ndarray, job_id: bytes) -> PrepState:
        """Verification step 1 for a job: the state, whose ``d_share`` is sent to the other server."""
        rand = joint_randomness(
            self.verify_key, self.task_id, report_ids, self.spec.layout.n_blocks, job_id=job_id
        )
        return prepare(shares, self.party, self.spec.layout, rand)

    def check(self, state: PrepState, other_d: np.ndarray) -> np.ndarray:
        """Verification step 2: this server's W shares (sent to the other server)."""
        other = np.asarray(other_d, dtype=np.uint64)
        if other.shape != state.d_share.shape:
            raise ValueError("the other server's d shares do not match this batch")
        return check_value(state, other)

    @staticmethod
    def decide(w_leader: np.ndarray, w_helper: np.ndarray) -> np.ndarray:
        return decide(w_leader, w_helper)

    def partial(self, total: BatchTotal, rng: RNGLike = None) -> np.ndarray:
        """This server's share of the noisy statistic of every class curve (field, flattened).

        Call once per batch: the noise is drawn here (OS CSPRNG when ``rng`` is None).
        """
        spec, mech = self.spec, self.spec.mechanism
        noise = server_noise(spec, self.party, rng)
        parts = []
        for j in range(spec.n_parts):
            hist = total.total[j * spec.n_cells : (j + 1) * spec.n_cells]
            stat = _linear_in_field(lambda h: mech.statistic(np.cumsum(h[:-1])), hist)
            parts.append(_F.add(stat, _F.from_int64(mech.noise_to_statistic(noise[j]))))
        return np.concatenate(parts)


# --------------------------------------------------------------------------- analyst


def _curve(spec: SecureSpec, noisy: np.ndarray, n: int | None, smoothing: str):
    """PrivateECDF from an opened noisy statistic, post-processed as privstats.ecdf(model='secure')."""
    from privstats.cdf.result import PrivateECDF
    from privstats.cdf.smoothing import smooth
    from privstats.estimate import Estimate
    from privstats.privacy import PureDP
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.noise import noise_variance_factor

    # each server's share is a full discrete Laplace (the guarantee holds against a server that knows
    # its share and sees the output): the opened noise has noise_variance_factor(2) = 2 x the central variance
    mech = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2))
    counts = mech.estimate_counts(noisy, n if spec.neighbours == "replace" else None)
    sd = np.sqrt(mech.count_variance())
    total = float(n) if (n is not None and spec.neighbours == "replace") else max(float(counts[-1]), 1.0)
    F, se = counts / total, sd / total
    k = spec.thresholds.size
    noise_model = {
        "mechanism": mech,
        "total": total,
        "public_total": spec.neighbours == "replace",
        "values": F,
    }
    values = smooth(F[:k], smoothing)
    params = {
        **mech.params(),
        "smoothing": smoothing,
        "servers": 2,
        "secure_protocol": "leader-helper",
        "validity": "sketch (P(t)^2 = P(t^2), sum = 1) over F_p, p = 2^61 - 1",
        "soundness_error": spec.soundness_error,
    }
    est = Estimate(
        values,
        stderr=se[:k],
        guarantee=PureDP(spec.curve_epsilon),
        model="secure",
        protocol=mech.name + "+leader-helper",
        params=params,
        n=int(n) if (n is not None and spec.neighbours == "replace") else None,
        neighbours=spec.neighbours,
        messages_per_user=2.0,
        bits_per_user=64.0 * spec.layout.share_length + 128.0 + 128.0,
        details={"thresholds": spec.thresholds, "raw": F[:k], "noise_model": noise_model},
    )
    return PrivateECDF(spec.thresholds, values, se[:k], estimate=est, raw=F[:k])


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
    """The analyst's opening of the two partials.

    ``ecdf`` → :class:`~privstats.cdf.result.PrivateECDF`; ``quantiles`` → an
    :class:`Estimate` (values at probabilities ``q``, Algorithm 1 on the isotonic curve);
    ``roc`` → ``(fpr, tpr, thresholds, estimate)`` with the AUC and its stderr, as
    :func:`privstats.roc_curve`; ``hosmer_lemeshow`` → an :class:`Estimate` of H over
    ``groups`` groups (``rng`` seeds its bootstrap).  ``n`` is the number of valid reports.
    """
    lp = (
        np.frombuffer(leader_partial, dtype="<u8").astype(np.uint64)
        if isinstance(leader_partial, (bytes, bytearray))
        else np.asarray(leader_partial, dtype=np.uint64)
    )
    hp = (
        np.frombuffer(helper_partial, dtype="<u8").astype(np.uint64)
        if isinstance(helper_partial, (bytes, bytearray))
        else np.asarray(helper_partial, dtype=np.uint64)
    )
    if lp.shape != hp.shape:
        raise ValueError("the two partials have different lengths")
    noisy = _F.to_int64(_F.add(lp, hp))
    parts = np.split(noisy, spec.n_parts)
    meta = {"n_invalid": int(n_invalid), "soundness_error": spec.soundness_error}
    if spec.statistic == "ecdf":
        res = _curve(spec, parts[0], n, spec.smoothing or "l2")
        res.estimate.details.update(meta)
        return res
    if spec.statistic == "quantiles":
        from privstats.estimate import Estimate

        if q is None:
            raise ValueError("q (quantile probabilities) is required to open a quantiles task")
        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if qs.ndim != 1 or qs.size == 0 or not np.all(np.isfinite(qs)) or np.any((qs < 0) | (qs > 1)):
            raise ValueError("q must be probabilities in [0, 1]")
        res = _curve(spec, parts[0], n, spec.smoothing or "isotonic")
        values = np.asarray(res.quantile(qs))
        params = {**res.estimate.params, "method": "tree", "q": qs.tolist()}
        return Estimate(
            values,
            stderr=None,
            guarantee=res.estimate.guarantee,
            model="secure",
            protocol="ecdf-tree+algorithm1",
            params=params,
            n=res.estimate.n,
            neighbours=spec.neighbours,
            messages_per_user=2.0,
            bits_per_user=res.estimate.bits_per_user,
            details={"curve": res, **meta},
        )
    if spec.statistic == "hosmer_lemeshow":
        return _open_hl(spec, parts, meta, groups, rng)
    return _open_roc(spec, parts, meta)


def _open_hl(spec: SecureSpec, parts, meta, groups: int, rng: RNGLike):
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
        pos, neg, cov, cov, spec.internal, spec.bounds[0], groups=groups, rng=gen, bootstrap=1000
    )
    return Estimate(
        max(r["unbiased"], 0.0),
        stderr=r["stderr"],
        support=(0.0, np.inf),
        guarantee=PureDP(spec.epsilon),
        model="secure",
        protocol="hosmer-lemeshow-two-ecdfs+leader-helper",
        params={"groups": groups, "epsilon_per_curve": spec.curve_epsilon, **mech.params()},
        n=None,
        neighbours="replace",
        messages_per_user=2.0,
        bits_per_user=64.0 * spec.layout.share_length + 256.0,
        details={
            "p_value": r["p_value"],
            "unbiased": r["unbiased"],
            "H_plain": r["H"],
            "noise_bias": r["noise_bias"],
            "E1": r["E1"],
            "E0": r["E0"],
            "O_minus_E": r["O_minus_E"],
            "var_O_minus_E": r["var_O_minus_E"],
            "V_floor": r["V_floor"],
            "unbiased_classical": r["unbiased_classical"],
            "dof": r["dof"],
            "quantisation": r["quantisation"],
            "p_value_method": "parametric bootstrap under calibration (Binomial per group) with the release noise",
            "stderr_method": "normal re-noising of shrunk plug-in group sums with their exact noise covariance",
            **meta,
        },
    )


def _open_roc(spec: SecureSpec, parts, meta):
    from privstats.cdf.covariance import roc_points
    from privstats.estimate import Estimate
    from privstats.privacy import PureDP

    smoothing = spec.smoothing or "isotonic"
    pos, neg = (_curve(spec, p, None, smoothing) for p in parts)
    fpr, tpr, thresholds, auc, auc_raw, var_hat = roc_points(pos, neg)
    est = Estimate(
        auc,
        stderr=float(np.sqrt(var_hat)),
        guarantee=PureDP(spec.epsilon),
        model="secure",
        protocol="roc-two-ecdfs+leader-helper",
        params={
            "labels": "private",
            "epsilon_per_curve": spec.curve_epsilon,
            "smoothing": smoothing,
            **{f"curve_{k}": v for k, v in pos.estimate.params.items()},
        },
        n=None,
        neighbours="replace",
        messages_per_user=2.0,
        bits_per_user=pos.estimate.bits_per_user,
        details={
            "fpr": fpr,
            "tpr": tpr,
            "thresholds": thresholds,
            "auc_raw": auc_raw,
            "stderr_method": "delta method (curves divided by noisy class totals)",
            "positives": pos,
            "negatives": neg,
            **meta,
        },
    )
    return fpr, tpr, thresholds, est


# ------------------------------------------------------------------ in-process run


def release_in_process(
    spec: SecureSpec, values, labels=None, *, rng: RNGLike = None, q=None, groups: int = 10
):
    """The release of honest clients' contributions, in law identical to the deployed leader and helper.

    The batch histogram is summed in the clear and given to the leader's total (the helper's is
    zero): their sum is what the two servers' shares add up to, and each server's ``partial``
    draws its own noise share exactly as deployed.  No per-report shares, so it scales to any n.
    """
    cells = spec.cells(values, labels).ravel()
    hist = np.bincount(cells, minlength=spec.layout.length).astype(np.uint64)
    src = as_source(rng)
    agg = [SecureAggregator(spec, p, b"", b"in-process") for p in (0, 1)]
    totals = [BatchTotal(hist, int(cells.size)), BatchTotal(np.zeros_like(hist), int(cells.size))]
    parts = [agg[p].partial(totals[p], rng=None if rng is None else src) for p in (0, 1)]
    return open_result(
        spec, parts[0], parts[1], int(cells.size), q=q, groups=groups, rng=None if rng is None else src
    )


def verify_batch(
    leader: SecureAggregator,
    helper: SecureAggregator,
    report_ids: list[bytes],
    leader_shares: np.ndarray,
    helper_shares: np.ndarray,
    job_id: bytes = b"",
) -> np.ndarray:
    """Both servers' verification steps in process (the services exchange the same messages)."""
    s0 = leader.prepare(report_ids, leader_shares, job_id)
    s1 = helper.prepare(report_ids, helper_shares, job_id)
    w1 = helper.check(s1, s0.d_share)
    w0 = leader.check(s0, s1.d_share)
    return decide(w0, w1)


@dataclass
class _Run:
    totals: list[BatchTotal] = field(default_factory=list)


def run_in_process(
    spec: SecureSpec,
    values,
    labels=None,
    *,
    rng: RNGLike = None,
    q=None,
    groups: int = 10,
    chunk: int = 4096,
    reports: list[SecureReport] | None = None,
) -> Any:
    """Clients → leader + helper (verification, aggregation, noise) → analyst, in one process.

    Real per-report messages (shares, seeds, proofs), no network and no HPKE.
    """
    src = as_source(rng)
    if reports is None:
        reports = encode(spec, values, labels, rng=src if rng is not None else None)
    verify_key = src.uint64(2).astype("<u8").tobytes() if rng is not None else os.urandom(16)
    task_id = b"in-process"
    agg = [SecureAggregator(spec, p, verify_key, task_id) for p in (0, 1)]
    totals = [BatchTotal.empty(spec), BatchTotal.empty(spec)]
    for start in range(0, len(reports), chunk):
        block = reports[start : start + chunk]
        ids = [r.report_id for r in block]
        sh0 = decode_shares(spec, [r.leader_share for r in block], 0)
        sh1 = decode_shares(spec, [r.helper_seed for r in block], 1)
        ok = verify_batch(agg[0], agg[1], ids, sh0, sh1, job_id=start.to_bytes(8, "little"))
        totals[0].add(sh0, ok)
        totals[1].add(sh1, ok)
    parts = [agg[p].partial(totals[p], rng=None if rng is None else src) for p in (0, 1)]
    return open_result(
        spec,
        parts[0],
        parts[1],
        totals[0].n_valid,
        q=q,
        n_invalid=totals[0].n_invalid,
        groups=groups,
        rng=None if rng is None else src,
    )
