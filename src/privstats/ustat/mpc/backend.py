"""Aggregator side: :class:`SpuTwoParty`, the Protocol C pair backend over SPU, and job batching.

>>> be = SpuTwoParty("greater", pair_epsilon=1.0, mechanism="rr")    # doctest: +SKIP
>>> out = be.compute(np.array([0.3, -9.0]), np.array([-0.5, 0.1]))    # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from privstats.privacy.randomness import RNGLike
from privstats.ustat.noise_law import NoiseLaw
from privstats.validation import check_choice, check_epsilon, check_positive_int

from .circuit import JobSpec, Output, require_spu, rr_variance, runtime_config
from .kernels import SPECS
from .noise import MECHANISMS, decode_low
from .session import SpuSession, default_session
from .wire import unpack_share

__all__ = [
    "SECURITY",
    "SpuTwoParty",
    "debias",
    "decode",
    "from_units",
    "noise_law",
    "noise_variance",
    "reconstruct",
    "run_batches",
]

SECURITY = (
    "two-party computation with SPU (SecretFlow) Cheetah between two processes over TCP: "
    "semi-honest adversary corrupting one party, computational security, no trusted dealer; "
    "kernel and noise computed inside the 2PC from both parties' random bits; the aggregator "
    "receives only output shares and learns only the noisy outputs"
)


def reconstruct(io, libspu, shares: tuple[list[bytes], list[bytes]], m: int, k: int) -> np.ndarray:
    """The two parties' output shares → (m, k) released integers."""
    out = io.reconstruct([unpack_share(libspu, shares[0]), unpack_share(libspu, shares[1])])
    return np.asarray(out, dtype=np.int64).reshape(m, k)


def run_batches(session: SpuSession, job: JobSpec, m: int, batch_size: int, make) -> np.ndarray:
    """Run ``m`` pairs in batches; ``make(start, stop)`` → (headers, left blob, right blob)."""
    spu, libspu = require_spu()
    io = spu.Io(2, runtime_config(libspu))
    outs = []
    for s in range(0, m, batch_size):
        e = min(s + batch_size, m)
        headers, lb, rb = make(s, e)
        shares = session.run(headers, lb, rb)
        outs.append(reconstruct(io, libspu, shares, e - s, len(job.outputs)))
    return np.concatenate(outs) if outs else np.zeros((0, len(job.outputs)), np.int64)


def noise_variance(o: Output) -> float:
    """Variance added to one released value on the kernel's scale (realised sampler)."""
    if o.mechanism == "none":
        return 0.0
    if o.mechanism == "rr":
        return rr_variance(o.spec.hi - o.spec.lo, o.plan.keep)
    return o.plan.variance * o.spec.unit**2


def noise_law(o: Output) -> NoiseLaw:
    """The exact law of this output's released noise (realised thresholds), for the simulated backend."""
    plan = o.plan
    if o.mechanism == "rr":
        return NoiseLaw(unit=o.spec.hi - o.spec.lo, variance=0.0, keep=plan.keep)
    if o.mechanism != "laplace":
        raise ValueError(f"no simulated law for mechanism {o.mechanism!r}")
    low = decode_low(o.spec.units, plan.wrap_bits)
    return NoiseLaw(o.spec.unit, plan.variance, cycle_pmf=plan.cycle_pmf(), low=low, offset=plan.offset)


def decode(o: Output, rec: np.ndarray) -> np.ndarray:
    """Reconstructed outputs → released integers (kernel + noise, grid units).  A Laplace release is
    ``(kernel + noise) mod 2^B`` in the top B bits of the word: it is read into the window of 2^B
    integers centred on the kernel range (wrong with probability ≤ 10^-6, see ``laplace_plan``)."""
    rec = np.asarray(rec, dtype=np.int64)
    B = o.plan.wrap_bits
    if o.mechanism != "laplace" or not B:
        return rec
    lo = decode_low(o.spec.units, B)
    return ((rec >> (64 - B)) - lo) % 2**B + lo


def debias(o: Output, rec: np.ndarray) -> np.ndarray:
    """Reconstructed outputs → debiased kernel values on the kernel's scale."""
    return from_units(o, decode(o, rec))


def from_units(o: Output, raw: np.ndarray) -> np.ndarray:
    """Released integers (:func:`decode`) → debiased kernel values on the kernel's scale."""
    out = np.asarray(raw, dtype=np.float64)
    if o.mechanism == "rr":
        p = o.plan.keep
        return o.spec.lo + (o.spec.hi - o.spec.lo) * (out - (1 - p)) / (2 * p - 1)
    return o.spec.lo + (out - o.plan.offset) * o.spec.unit


class SpuTwoParty:
    """Protocol C pair backend running each batch as a Cheetah 2PC (SPU) between two party processes.

    ``kernel``: one of :data:`SPECS` (``greater``/``greater_half`` for AUC with ties 0/½,
    ``sign_product`` and ``not_equal_0/1`` for Kendall tau-b, ``equal`` for collisions, ``absdiff``
    for the Gini mean difference on a ``2^-grid_bits`` grid of [0, 1]); comparisons are exact for all
    finite values.  ``mechanism``: ``"rr"`` (binary kernels) or ``"laplace"``; ``"none"`` is a
    test-only mode that releases the exact kernel.  ``session``: a :class:`SpuSession` (default: two
    local processes shared by all backends).  ``rng`` in :meth:`compute` is ignored: the noise always
    comes from both parties' OS CSPRNGs.

    >>> be = SpuTwoParty("greater_half", pair_epsilon=1.0)         # doctest: +SKIP
    >>> be.compute(np.array([0.2, 0.7]), np.array([0.2, 0.1]))      # doctest: +SKIP
    array([...])
    """

    def __init__(
        self,
        kernel: str,
        *,
        pair_epsilon: float,
        mechanism: str = "laplace",
        grid_bits: int = 10,
        session: SpuSession | None = None,
        parties: tuple[str, str] | None = None,
        batch_size: int = 50_000,
    ):
        check_choice(kernel, "kernel", (*SPECS, "raw_less"))
        check_choice(mechanism, "mechanism", MECHANISMS)
        self.job = JobSpec.build([(kernel, mechanism, check_epsilon(pair_epsilon))], grid_bits)
        self.output = self.job.outputs[0]
        self.spec, self.plan = self.output.spec, self.output.plan
        self.mechanism, self.pair_epsilon = mechanism, self.output.pair_epsilon
        self.lo, self.hi, self.width = self.spec.lo, self.spec.hi, self.spec.hi - self.spec.lo
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self._session = session
        self._parties = parties
        require_spu()

    @property
    def session(self) -> SpuSession:
        if self._session is None:
            self._session = SpuSession(self._parties) if self._parties else default_session()
        return self._session

    @property
    def noise_variance(self) -> float:
        """Variance added to each released value on the kernel's scale (realised sampler)."""
        return noise_variance(self.output)

    @property
    def delta(self) -> float:
        """Per-pair δ of the realised sampler (0 for randomized response)."""
        return self.plan.delta

    @property
    def security(self) -> str:
        return SECURITY

    @property
    def details(self) -> dict:
        return {
            "backend": "spu",
            "protocol": "SPU Cheetah (2PC, FM64)",
            "security": SECURITY,
            "kernel": self.spec.name,
            "grid_unit": self.spec.unit,
            "realised_pair_epsilon": self.plan.epsilon,
            "pair_delta": self.plan.delta,
            "random_words_per_pair": self.plan.n_random,
            "random_bits_per_pair": self.plan.n_bits,
        }

    def _header(self, m: int) -> dict:
        return {"op": "job", **self.job.header(), "m": m}

    def raw(self, x_left, x_right) -> np.ndarray:
        """The reconstructed released integers (grid units) for the pairs (x_left[i], x_right[i])."""
        a = np.ascontiguousarray(np.asarray(x_left, dtype=np.float64).reshape(len(x_left), -1))
        b = np.ascontiguousarray(np.asarray(x_right, dtype=np.float64).reshape(len(x_right), -1))
        if a.shape != b.shape or a.shape[1] != self.spec.columns:
            raise ValueError(
                f"x_left and x_right must both have shape (m, {self.spec.columns}), "
                f"got {a.shape} and {b.shape}"
            )

        def make(s, e):
            return self._header(e - s), a[s:e].tobytes(), b[s:e].tobytes()

        return decode(self.output, run_batches(self.session, self.job, len(a), self.batch_size, make)[:, 0])

    def raw_indexed(self, left_users, right_users) -> np.ndarray:
        """Like :meth:`raw`, for parties that hold their users' values themselves (runner ``--data``):
        only the user indices of each pair are sent, each party gets its own side's indices."""
        li = np.asarray(left_users, dtype=np.int64).reshape(-1)
        ri = np.asarray(right_users, dtype=np.int64).reshape(-1)
        if li.shape != ri.shape or np.any(li < 0) or np.any(ri < 0):
            raise ValueError(
                "left_users and right_users must be non-negative index arrays of the same length"
            )

        def make(s, e):
            h = self._header(e - s)
            return ({**h, "indices": li[s:e].tolist()}, {**h, "indices": ri[s:e].tolist()}), None, None

        return decode(self.output, run_batches(self.session, self.job, li.size, self.batch_size, make)[:, 0])

    def release(self, raw: np.ndarray) -> np.ndarray:
        """Released integers (:meth:`raw`) → debiased kernel values on the kernel's scale."""
        return from_units(self.output, raw)

    def compute(self, x_left, x_right, rng: RNGLike = None) -> np.ndarray:
        """Released (debiased) kernel values for each pair; ``rng`` is ignored (noise from the parties)."""
        return self.release(self.raw(x_left, x_right))
