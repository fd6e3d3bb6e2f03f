"""Shuffle-model protocols as engine oracles: one stored row per *message*, not per user.

The shuffle-model protocols of :mod:`privstats.shuffle` encode users' values into
a numpy array of messages and aggregate arrays of messages.  The engine (and the
report format) work with dicts of named columns, so :class:`ShuffledMessages` wraps
a protocol with the frequency-oracle interface the engine expects (``name``,
``params``, ``report_fields``, ``new_state``, ``encode_batch`` → dict of columns,
``aggregate(dict, state)``) and delegates everything to it.  This is the
analyzer's side of the shuffle model: messages come out of the shuffler, are
stored, and are folded into the protocol's exact :class:`~privstats.local.CountState`.

**Rows are messages.**  For multi-message protocols (Hadamard, Count-Min, summation)
one user's values give several rows, unlinkable to each other and to the user; the
``n`` of a report file and of the state counts messages.  ``protocol.estimate``
knows how many messages a user sends.

The wrapper's ``params`` are exactly the protocol's (derived ones included, e.g.
γ, ε0, ρ), so states and files match the unwrapped protocol's; the registry rebuilds
the protocol from them by passing the derived values back to its constructor
(``gamma=``, ``epsilon0=``, ``rho=``), without re-running the calibration.

>>> from privstats.shuffle import ShuffledKRR
>>> protocol = ShuffledKRR(4, n=1000, epsilon=1.0, delta=1e-6, gamma=0.5)
>>> oracle = ShuffledMessages(protocol)
>>> reports = oracle.encode_batch([0, 1, 2, 3] * 5, rng=0)
>>> sorted(reports), len(reports["value"])
(['value'], 20)
>>> oracle.aggregate(reports) == protocol.aggregate(reports["value"])
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source

__all__ = ["ShuffledMessages", "build_shuffled", "shuffle_message_columns"]


def shuffle_message_columns(protocol) -> dict[str, Any]:
    """``report_fields`` of a shuffle protocol's messages: one column, its dtype and per-row width.

    * ``shuffle-krr``: ``value`` int64 in [0, d)
    * ``shuffle-rappor``: ``bits`` uint8 × ceil(d/8) (packed noisy indicator, big-endian bit order
      of ``numpy.packbits``; padding bits 0)
    * ``shuffle-hadamard``: ``message`` uint32 × (1 + m), m = log2(b_prime): ``[d, basis_1..basis_d,
      0 padding]``, the kernel's dimension then its canonical basis
    * ``shuffle-countmin``: ``cell`` uint64, a cell id in [0, τ·buckets)
    * ``shuffle-sum``: ``bit`` uint8 in {0, 1}
    """
    name = getattr(protocol, "name", None)
    if name == "shuffle-krr":
        return {"value": "int64"}
    if name == "shuffle-rappor":
        return {"bits": ("uint8", (protocol.domain_size + 7) // 8)}
    if name == "shuffle-hadamard":
        return {"message": ("uint32", 1 + protocol.m)}
    if name == "shuffle-countmin":
        return {"cell": "uint64"}
    if name == "shuffle-sum":
        return {"bit": "uint8"}
    raise ValueError(f"protocol {name!r} is not a known shuffle-model protocol")


class ShuffledMessages:
    """A shuffle-model protocol with the engine's oracle interface; one report row per message.

    Parameters
    ----------
    protocol : a :mod:`privstats.shuffle` protocol (``ShuffledKRR``, ``ShuffledRAPPOR``,
        ``HadamardMultiMessage``, ``CountMinMultiMessage``, ``ShuffledSum``).

    Notes
    -----
    ``encode_batch`` (the clients of one batch, then the shuffler) permutes the batch's
    messages with the same randomness source, so a stored file is never in user order;
    it stands in for the shuffler in simulations and benchmarks only (anonymity within
    a batch).  In a deployment, store what :class:`privstats.shuffle.Shuffler` releases.

    Examples
    --------
    >>> from privstats.shuffle import HadamardMultiMessage
    >>> h = ShuffledMessages(HadamardMultiMessage(9, n=1000, epsilon=1.0, delta=1e-6, rho=3, tau=6))
    >>> h.report_fields, h.encode_batch([1, 2], rng=0)["message"].shape   # 2 users x (k + rho) messages
    ({'message': ('uint32', 5)}, (8, 5))
    """

    def __init__(self, protocol):
        self.report_fields = shuffle_message_columns(protocol)
        self.protocol = protocol
        self._field = next(iter(self.report_fields))
        spec = self.report_fields[self._field]
        self._dtype = np.dtype(spec[0] if isinstance(spec, tuple) else spec)
        self._width = spec[1] if isinstance(spec, tuple) else None

    # ---- description (all delegated) ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.protocol.name

    @property
    def params(self) -> dict:
        return self.protocol.params

    @property
    def domain_size(self) -> int | None:
        """The protocol's domain size (None for ``shuffle-sum``, whose inputs are reals in [0, 1])."""
        return getattr(self.protocol, "domain_size", None)

    @property
    def messages_per_user(self) -> float:
        return self.protocol.messages_per_user

    def __repr__(self) -> str:
        return f"ShuffledMessages({type(self.protocol).__name__}, {self.params})"

    # ---- roles --------------------------------------------------------------------------------------------
    def new_state(self):
        return self.protocol.new_state()

    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """The batch's messages (clients, then a permutation) as ``{field: rows}``; CSPRNG by default."""
        src = as_source(rng)
        msgs = np.asarray(self.protocol.encode_batch(values, src))
        if self._width is not None and msgs.ndim == 2 and msgs.shape[1] < self._width:
            # Hadamard rows are as wide as the batch's largest kernel: pad to the fixed 1 + m
            msgs = np.pad(msgs, ((0, 0), (0, self._width - msgs.shape[1])))
        msgs = msgs.astype(self._dtype, copy=False)
        if len(msgs) > 1:
            msgs = msgs[src.permutation(len(msgs))]
        return {self._field: msgs}

    def aggregate(self, reports, state=None):
        """Fold message rows (a dict ``{field: rows}`` or the rows themselves) with ``protocol.aggregate``."""
        if isinstance(reports, Mapping):
            if self._field not in reports:
                raise ValueError(f"reports lack the column {self._field!r} of {self.name}")
            msgs = np.asarray(reports[self._field])
        else:
            msgs = np.asarray(reports)
        if self.name == "shuffle-rappor" and msgs.ndim == 2 and msgs.size:
            pad = 8 * msgs.shape[1] - self.protocol.domain_size
            if pad and np.any(msgs[:, -1] & np.uint8((1 << pad) - 1)):
                raise ValueError("messages have nonzero padding bits")
        return self.protocol.aggregate(msgs, state)

    def estimate(self, state):
        return self.protocol.estimate(state)


def _take(params: Mapping[str, Any], name: str, required: tuple[str, ...], derived: tuple[str, ...] = ()):
    missing = [k for k in required if k not in params]
    extra = set(params) - set(required) - set(derived)
    if missing or extra:
        raise ValueError(
            f"{name} params need {list(required) + list(derived)}; "
            f"missing {missing}, unexpected {sorted(extra)}"
        )
    return {k: params[k] for k in required}


def build_shuffled(name: str, params: Mapping[str, Any]) -> ShuffledMessages:
    """Rebuild a shuffle protocol from its ``params`` (derived values passed back, not recalibrated)."""
    from privstats.shuffle import (
        CountMinMultiMessage,
        HadamardMultiMessage,
        ShuffledKRR,
        ShuffledRAPPOR,
        ShuffledSum,
    )

    base = ("domain_size", "n", "epsilon", "delta")
    protocol: Any
    if name == "shuffle-krr":
        p = _take(params, name, (*base, "gamma"), ("epsilon0",))
        protocol = ShuffledKRR(p.pop("domain_size"), **p)
    elif name == "shuffle-rappor":
        p = _take(params, name, (*base, "epsilon0"), ("flip_probability",))
        protocol = ShuffledRAPPOR(p.pop("domain_size"), **p)
    elif name == "shuffle-hadamard":
        p = _take(params, name, (*base, "k", "rho", "tau"), ("b_prime",))
        protocol = HadamardMultiMessage(p.pop("domain_size"), **p)
    elif name == "shuffle-countmin":
        p = _take(params, name, (*base, "tau", "buckets", "gamma", "seed"))
        protocol = CountMinMultiMessage(p.pop("domain_size"), **p)
    elif name == "shuffle-sum":
        protocol = ShuffledSum(**_take(params, name, ("n", "epsilon", "delta", "blanket", "gamma", "inputs")))
    else:
        raise ValueError(f"{name!r} is not a shuffle-model protocol")
    return ShuffledMessages(protocol)
