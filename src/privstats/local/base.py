"""Roles shared by every local-model frequency oracle.

A frequency oracle over the domain ``{0, ..., d-1}`` has the roles of DESIGN.md:

* ``encode(value, rng=None)`` — the client.  Returns a *report batch*: a dict of
  numpy columns (one row per user).  ``encode_batch(values, rng)`` encodes many
  users at once with one batched draw of secure randomness.
* ``aggregate(reports, state=None)`` — the aggregator.  Accepts report batches in
  any order and size and folds them into a :class:`CountState`, which merges with
  another state and serializes to versioned bytes.
* ``estimate(state)`` — the analyst.  Unbiased counts with their exact variance.
* ``simulate(values, rng)`` — draws the aggregator state for a whole population
  directly, with exactly the distribution of encoding every user and aggregating.

>>> from privstats.local import GRR
>>> oracle = GRR(4, epsilon=2.0)
>>> state = oracle.aggregate(oracle.encode_batch([0, 1, 1, 3], rng=1))
>>> state.n, int(state.counts.sum())
(4, 4)
"""

from __future__ import annotations

import json
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from privstats.estimate import Estimate
from privstats.privacy.guarantees import PureDP
from privstats.privacy.randomness import RNGLike
from privstats.validation import as_domain_values, check_domain_size, check_epsilon

__all__ = ["CountState", "FrequencyOracle", "Reports", "SupportOracle", "pack_versioned", "unpack_versioned"]

Reports = Mapping[str, np.ndarray]
"""A batch of reports in columnar form: column name -> array with one row per user."""

_MAGIC = b"PSCS"
_STATE_VERSION = 1


@dataclass
class CountState:
    """Aggregator state of a count-based protocol: ``n`` reports folded into int64 ``counts``.

    States of the same protocol and parameters merge by addition, so partitions can
    be aggregated anywhere (threads, Dask workers, service replicas) and combined.
    """

    protocol: str
    params: dict
    n: int = 0
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def merge(self, other: CountState) -> CountState:
        """A new state holding the reports of both (neither input is changed)."""
        if not isinstance(other, CountState):
            raise TypeError(f"can only merge a CountState, not {type(other).__name__}")
        if other.protocol != self.protocol or other.params != self.params:
            raise ValueError(
                f"cannot merge states of different protocols or parameters: "
                f"{self.protocol}{self.params} vs {other.protocol}{other.params}"
            )
        return CountState(self.protocol, dict(self.params), self.n + other.n, self.counts + other.counts)

    __add__ = merge

    def to_bytes(self) -> bytes:
        """Versioned binary form: magic, version, JSON header, little-endian int64 counts."""
        header = {
            "protocol": self.protocol,
            "params": self.params,
            "n": int(self.n),
            "size": int(self.counts.size),
        }
        return pack_versioned(
            _MAGIC, _STATE_VERSION, header, np.ascontiguousarray(self.counts, dtype="<i8").tobytes()
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> CountState:
        """Inverse of :meth:`to_bytes`; raises ValueError on a corrupted or foreign blob."""
        header, body = unpack_versioned(data, _MAGIC, _STATE_VERSION, "CountState")
        _check_header(header)
        if len(body) != 8 * header["size"]:
            raise ValueError(f"data is truncated: expected {header['size']} counts, got {len(body) // 8}")
        counts = np.frombuffer(body, dtype="<i8").astype(np.int64)
        if counts.size and counts.min() < 0:
            raise ValueError(f"data has a corrupted CountState: {int((counts < 0).sum())} negative counts")
        return cls(header["protocol"], header["params"], int(header["n"]), counts)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CountState)
            and self.protocol == other.protocol
            and self.params == other.params
            and self.n == other.n
            and np.array_equal(self.counts, other.counts)
        )


def _check_header(header: dict) -> None:
    """A CountState header: protocol name, params dict, n >= 0 and size >= 0 as plain integers."""

    def is_int(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if set(header) != {"protocol", "params", "n", "size"}:
        raise ValueError(f"data has a corrupted CountState header: keys {sorted(header)}")
    if not isinstance(header["protocol"], str) or not isinstance(header["params"], dict):
        raise ValueError(
            "data has a corrupted CountState header: protocol must be a string and params a dict"
        )
    for key in ("n", "size"):
        if not is_int(header[key]) or not 0 <= header[key] <= 1 << 62:
            raise ValueError(
                f"data has a corrupted CountState header: {key} must be an integer >= 0, "
                f"got {header[key]!r:.40}"
            )


def pack_versioned(magic: bytes, version: int, header: dict, body: bytes) -> bytes:
    """``magic | version (u16) | header length (u32) | JSON header | body`` — the state wire format."""
    h = json.dumps(header, sort_keys=True).encode()
    return magic + struct.pack("<HI", version, len(h)) + h + body


def unpack_versioned(data: bytes, magic: bytes, version: int, kind: str) -> tuple[dict, bytes]:
    """Inverse of :func:`pack_versioned`: ``(header, body)``; ValueError naming ``kind`` if foreign or corrupted."""
    if len(data) < 10 or data[:4] != magic:
        raise ValueError(f"data is not a privstats {kind} (bad magic)")
    got, hlen = struct.unpack("<HI", data[4:10])
    if got != version:
        raise ValueError(f"unsupported {kind} version {got} (this privstats reads {version})")
    try:
        header = json.loads(data[10 : 10 + hlen])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"data has a corrupted {kind} header") from None
    if not isinstance(header, dict):
        raise ValueError(f"data has a corrupted {kind} header")
    return header, data[10 + hlen :]


def local_estimate(protocol: Any, value: Any, stderr: Any, n: int, **extra: Any) -> Estimate:
    """The Estimate of a local protocol (its name, parameters, guarantee and message counts).

    >>> from privstats.local import GRR
    >>> grr = GRR(4, epsilon=1.0)
    >>> local_estimate(grr, [1.0, 2.0, 3.0, 4.0], [0.5] * 4, 10).model
    'local'
    """
    return Estimate(
        value=value,
        stderr=stderr,
        guarantee=protocol.guarantee,
        model="local",
        protocol=protocol.name,
        params=protocol.params,
        n=n,
        messages_per_user=protocol.messages_per_user,
        bits_per_user=protocol.bits_per_user,
        **extra,
    )


class FrequencyOracle(ABC):
    """An ε-LDP frequency oracle over ``{0, ..., domain_size - 1}``."""

    name: ClassVar[str] = ""
    #: columnar report layout: column name -> numpy dtype (OUE adds a width)
    report_fields: ClassVar[dict[str, str]] = {}

    def __init__(self, domain_size: int, epsilon: float):
        self.domain_size = check_domain_size(domain_size)
        self.epsilon = check_epsilon(epsilon)

    # ---- public description -------------------------------------------------
    @property
    def guarantee(self) -> PureDP:
        """Each user's report is ε-LDP (replace-one neighbouring of a single user's value)."""
        return PureDP(self.epsilon)

    @property
    def params(self) -> dict:
        """Public parameters; two states merge only when these agree."""
        return {"domain_size": self.domain_size, "epsilon": self.epsilon}

    @property
    def state_size(self) -> int:
        """Length of the aggregator's count vector."""
        return self.domain_size

    messages_per_user: ClassVar[int] = 1

    @property
    @abstractmethod
    def bits_per_user(self) -> float:
        """Bits a user sends (not counting public randomness derived from a shared seed)."""

    # ---- client ---------------------------------------------------------------
    def encode(self, value: int, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """One user's report (a batch of one), drawn from the OS CSPRNG by default."""
        return self.encode_batch(np.asarray([value]), rng)

    @abstractmethod
    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """Reports of many users, with one batched draw of randomness."""

    @abstractmethod
    def output_probabilities(self, value: int) -> np.ndarray:
        """Exact probability of each possible report given ``value`` (for privacy checks).

        For protocols with public randomness (OLH's hash seed) this is conditional on it.
        """

    # ---- aggregator -------------------------------------------------------------
    def new_state(self) -> CountState:
        return CountState(self.name, self.params, 0, np.zeros(self.state_size, dtype=np.int64))

    def aggregate(self, reports: Reports, state: CountState | None = None) -> CountState:
        """Fold a batch of reports into ``state`` (a new state if ``None``); returns the result.

        Validation happens before anything is folded, so a bad batch changes nothing.
        """
        state = self.new_state() if state is None else state
        if state.protocol != self.name or state.params != self.params:
            raise ValueError("state belongs to a different protocol or parameters")
        missing = set(self.report_fields) - set(reports)
        if missing:
            raise ValueError(f"reports is missing column(s) {sorted(missing)} for {self.name}")
        cols = {k: np.asarray(reports[k]) for k in self.report_fields}
        lengths = {len(v) for v in cols.values()}
        if len(lengths) != 1:
            raise ValueError(
                f"reports columns have different lengths: { {k: len(v) for k, v in cols.items()} }"
            )
        counts = self._accumulate(cols)
        return CountState(self.name, self.params, state.n + lengths.pop(), state.counts + counts)

    @abstractmethod
    def _accumulate(self, reports: dict[str, np.ndarray]) -> np.ndarray:
        """Validated count vector of one batch (raise ValueError naming ``reports`` on bad rows)."""

    # ---- simulation --------------------------------------------------------------
    def simulate(self, values, rng: RNGLike = None) -> CountState:
        """Aggregator state for the whole population, drawn directly (vectorized)."""
        values = as_domain_values(values, self.domain_size)
        return self.simulate_counts(np.bincount(values, minlength=self.domain_size), rng)

    @abstractmethod
    def simulate_counts(self, true_counts, rng: RNGLike = None) -> CountState:
        """As :meth:`simulate`, from the histogram of the users' values (O(d) memory)."""

    # ---- analyst ---------------------------------------------------------------------
    @abstractmethod
    def _debias(self, state: CountState) -> np.ndarray:
        """Unbiased count estimates from a state."""

    @abstractmethod
    def variance(self, n: int, true_counts) -> np.ndarray:
        """Exact variance of each item's count estimate for ``n`` users with these true counts."""

    def estimate(self, state: CountState) -> Estimate:
        """Unbiased counts with standard errors (the exact variance at the plug-in counts)."""
        if not isinstance(state, CountState) or state.protocol != self.name or state.params != self.params:
            raise ValueError(f"state must be a CountState of {self.name} with parameters {self.params}")
        est = self._debias(state)
        plug_in = np.clip(est, 0, state.n)
        stderr = np.sqrt(np.maximum(self.variance(state.n, plug_in), 0.0))
        return local_estimate(self, est, stderr, state.n)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    # helpers for subclasses
    def _check_true_counts(self, true_counts: Any) -> np.ndarray:
        c = np.asarray(true_counts)
        if c.shape != (self.domain_size,) or c.dtype.kind not in "iu" or (c.size and c.min() < 0):
            raise ValueError(f"true_counts must be {self.domain_size} non-negative integers")
        return c.astype(np.int64)

    @staticmethod
    def _bits(k: int) -> int:
        return max(1, math.ceil(math.log2(k)))


class SupportOracle(FrequencyOracle):
    """A "pure" oracle (Wang et al. 2017): each report supports a set of items.

    A report supports item v with probability ``p*`` when the user's value is v and
    ``q*`` otherwise, independently across users, so the support count S_v gives the
    unbiased n̂_v = (S_v − n q*)/(p* − q*) with variance
    (n_v p*(1 − p*) + (n − n_v) q*(1 − q*))/(p* − q*)².  GRR, OUE, OLH and Hadamard
    response all have this form; they differ in p*, q* and how S is counted.
    """

    @property
    @abstractmethod
    def support_probabilities(self) -> tuple[float, float]:
        """``(p*, q*)``."""

    @property
    @abstractmethod
    def gap(self) -> float:
        """p* − q*, computed without cancellation for tiny ε."""

    def _support_counts(self, state: CountState) -> np.ndarray:
        return state.counts

    def _debias(self, state: CountState) -> np.ndarray:
        return (self._support_counts(state) - state.n * self.support_probabilities[1]) / self.gap

    def variance(self, n: int, true_counts) -> np.ndarray:
        c = np.asarray(true_counts, dtype=float)
        p, q = self.support_probabilities
        return (c * p * (1 - p) + (n - c) * q * (1 - q)) / self.gap**2
