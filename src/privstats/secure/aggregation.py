"""Secure aggregation of a private ECDF among m >= 2 non-colluding servers.

Roles (all messages serialise to bytes):

* client — ``encode_client(cell, n_cells, n_servers)``: the one-hot histogram of its
  grid cell, additively shared over Z_2^64; servers 0..m-2 get a 16-byte AES-CTR
  seed, server m-1 the explicit vector (:class:`ClientShare`).
* :class:`AggregationServer` — one server's state for one *batch*: sums the shares it
  receives (any order, mergeable), draws its own noise share once
  (:func:`privstats.secure.noise.server_noise_share`: exact discrete Laplace, OS
  CSPRNG when ``rng`` is None) and publishes ``partial()``: its share of the tree
  statistic plus its noise share.  The first ``partial()`` *closes* the batch: later
  reports are refused (they go to a new batch, with fresh noise and its own budget),
  so two releases never differ by one client's contribution under the same noise.
* analyst — ``open_partials`` adds the partials; the result is the tree statistic plus
  the sum of the m noise shares.

Privacy against one server that sees the output: by default (``tolerate = m − 1``)
each server's share alone is a full discrete Laplace with the mechanism's scale, so
the output minus any m - 1 servers' own shares is still the ε-DP tree mechanism.  The
price is variance: the opened noise has m times the central variance
(:func:`privstats.secure.noise.noise_variance_factor`).  One server's message view
(uniform shares, or PRG seeds) is independent of the inputs.

>>> import numpy as np
>>> from privstats.cdf.tree import BinaryTreeMechanism
>>> mech = BinaryTreeMechanism(4, epsilon=1e6)
>>> protocol = SecureECDFAggregation(mech, n_servers=2, rng=0)
>>> noisy = protocol.run(np.array([0, 1, 1, 3]))
>>> noisy.tolist()
[1, 3, 3, 4]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.secure.noise import discrete_laplace_shares, noise_variance_factor, share_generator
from privstats.secure.sharing import expand_seed_shares, new_seed, prg_expand

__all__ = [
    "AggregationServer",
    "BatchClosedError",
    "ClientShare",
    "DistributedNoiseMechanism",
    "SecureECDFAggregation",
    "encode_client",
    "open_partials",
]

_MAGIC = b"PSC1"


@dataclass(frozen=True)
class ClientShare:
    """One client's message to one server: a PRG seed (16 bytes) or an explicit uint64 vector."""

    server: int
    n_cells: int
    seed: bytes | None = None
    vector: np.ndarray | None = None

    def to_bytes(self) -> bytes:
        kind = 0 if self.seed is not None else 1
        body = self.seed if self.seed is not None else np.asarray(self.vector, dtype="<u8").tobytes()
        return _MAGIC + struct.pack("<BII", kind, self.server, self.n_cells) + body

    @classmethod
    def from_bytes(cls, data: bytes) -> ClientShare:
        if data[:4] != _MAGIC:
            raise ValueError("not a ClientShare message")
        kind, server, n_cells = struct.unpack("<BII", data[4:13])
        body = data[13:]
        if kind == 0:
            if len(body) != 16:
                raise ValueError("seed share must be 16 bytes")
            return cls(server, n_cells, seed=bytes(body))
        vec = np.frombuffer(body, dtype="<u8").astype(np.uint64)
        if vec.size != n_cells:
            raise ValueError("vector share has the wrong length")
        return cls(server, n_cells, vector=vec)


def encode_client(cell: int, n_cells: int, n_servers: int, rng: RNGLike = None) -> list[ClientShare]:
    """Shares of the one-hot vector e_cell (length n_cells) for each server."""
    if not 0 <= cell < n_cells:
        raise ValueError(f"cell must be in [0, {n_cells})")
    seeds = [new_seed(rng) for _ in range(n_servers - 1)]
    last = np.zeros(n_cells, dtype=np.uint64)
    last[cell] = 1
    for s in seeds:
        last -= prg_expand(s, n_cells)
    return [ClientShare(j, n_cells, seed=s) for j, s in enumerate(seeds)] + [
        ClientShare(n_servers - 1, n_cells, vector=last)
    ]


class BatchClosedError(RuntimeError):
    """A report or merge reached a batch whose noisy aggregate was already released."""


class AggregationServer:
    """Server ``index`` of ``n_servers`` for one batch of a tree mechanism over ``mechanism.n_points`` cells.

    The histogram has ``n_points + 1`` cells (the last counts values above the grid).
    ``tolerate`` (default ``n_servers - 1``) is the number of servers, each seeing the
    output and knowing its own share, against which the guarantee holds; see
    :mod:`privstats.secure.noise`.  After the first :meth:`partial` the batch is closed:
    :meth:`receive`, :meth:`receive_aggregate` and :meth:`merge` raise
    :class:`BatchClosedError` (start a new ``AggregationServer`` for later reports).
    """

    def __init__(
        self, index: int, n_servers: int, mechanism, *, tolerate: int | None = None, rng: RNGLike = None
    ):
        if n_servers < 2:
            raise ValueError("secure aggregation needs n_servers >= 2")
        if not 0 <= index < n_servers:
            raise ValueError(f"index must be in [0, {n_servers - 1}], got {index}")
        self.index, self.n_servers, self.mechanism = index, n_servers, mechanism
        self.tolerate = n_servers - 1 if tolerate is None else tolerate
        noise_variance_factor(n_servers, self.tolerate)  # validates tolerate
        self.n_cells = mechanism.n_points + 1
        self.total = np.zeros(self.n_cells, dtype=np.uint64)
        self.n_reports = 0
        self._seeds: list[bytes] = []
        self._rng = rng
        self._noise: np.ndarray | None = None
        self._released: np.ndarray | None = None

    @property
    def closed(self) -> bool:
        """True once this batch's partial has been released."""
        return self._released is not None

    def _check_open(self) -> None:
        if self._released is not None:
            raise BatchClosedError(
                "this batch's noisy aggregate was already released; later reports must go to "
                "a new batch (a new AggregationServer, with fresh noise and its own budget)"
            )

    def receive(self, message: ClientShare | bytes) -> None:
        self._check_open()
        msg = ClientShare.from_bytes(message) if isinstance(message, (bytes, bytearray)) else message
        if msg.server != self.index or msg.n_cells != self.n_cells:
            raise ValueError("message addressed to another server or grid")
        if msg.seed is not None:
            self._seeds.append(msg.seed)
        else:
            self.total += msg.vector
        self.n_reports += 1

    def _receive_seeds(self, seeds: list[bytes]) -> None:
        self._check_open()
        self._seeds += seeds
        self.n_reports += len(seeds)

    def receive_aggregate(self, share_sum: np.ndarray, n_reports: int) -> None:
        """Add an already summed block of shares (e.g. from a sub-aggregator)."""
        self._check_open()
        self.total += np.asarray(share_sum, dtype=np.uint64)
        self.n_reports += n_reports

    def merge(self, other: AggregationServer) -> AggregationServer:
        self._check_open()
        other._check_open()
        self.total += other.total
        self._seeds += other._seeds
        self.n_reports += other.n_reports
        return self

    def noise_shares(self) -> np.ndarray:
        """This server's per-node noise shares (int64): drawn once per batch, exactly."""
        if self._noise is None:
            if self.tolerate == self.n_servers - 1:
                from privstats.secure.noise import server_noise_share

                self._noise = server_noise_share(
                    self.mechanism.scale,
                    self.mechanism.n_nodes,
                    server=self.index,
                    n_servers=self.n_servers,
                    rng=self._rng,
                )
            else:
                self._noise = discrete_laplace_shares(
                    self.mechanism.scale,
                    self.mechanism.n_nodes,
                    self.n_servers,
                    tolerate=self.tolerate,
                    rng=self._rng,
                )[self.index]
        return self._noise

    def partial(self) -> np.ndarray:
        """Share of the noisy tree statistic (uint64); releases and closes the batch."""
        if self._released is None:
            hist = self.total + expand_seed_shares(self._seeds, self.n_cells)
            cum = np.cumsum(hist[:-1], dtype=np.uint64)
            stat = np.asarray(self.mechanism.statistic(cum), dtype=np.uint64)
            noise = self.mechanism.noise_to_statistic(self.noise_shares().view(np.uint64))
            self._released = stat + noise
        return self._released.copy()

    def partial_bytes(self) -> bytes:
        return self.partial().astype("<u8").tobytes()


def open_partials(partials) -> np.ndarray:
    """The opened noisy statistic (int64) from all servers' partials (arrays or bytes)."""
    arrs = [
        np.frombuffer(p, dtype="<u8").astype(np.uint64)
        if isinstance(p, (bytes, bytearray))
        else np.asarray(p, dtype=np.uint64)
        for p in partials
    ]
    total = np.zeros_like(arrs[0])
    for a in arrs:
        total += a
    return total.view(np.int64)


class SecureECDFAggregation:
    """Runs the whole protocol in process: clients, ``n_servers`` servers, analyst.

    ``run(cells)`` sends real per-client messages (vectorized in chunks: each
    client's seed shares are expanded by AES-CTR, the last share is explicit);
    ``simulate(cells)`` draws each server's aggregated share directly (the sum of
    uniform shares is uniform), with the same output distribution.  One object runs one
    batch: a second ``run``/``simulate`` raises :class:`BatchClosedError`.  The opened noise
    has :attr:`variance_factor` times the central mechanism's variance.
    """

    def __init__(self, mechanism, *, n_servers: int = 2, tolerate: int | None = None, rng: RNGLike = None):
        self.mechanism = mechanism
        self.n_servers = n_servers
        self.tolerate = n_servers - 1 if tolerate is None else tolerate
        self.variance_factor = noise_variance_factor(n_servers, self.tolerate)
        if rng is None:
            self._share_rng = None
            self.servers = [
                AggregationServer(j, n_servers, mechanism, tolerate=self.tolerate, rng=None)
                for j in range(n_servers)
            ]
            return
        gen = share_generator(rng)
        self._share_rng = np.random.default_rng(gen.integers(2**63))
        self.servers = [
            AggregationServer(
                j,
                n_servers,
                mechanism,
                tolerate=self.tolerate,
                rng=np.random.default_rng(gen.integers(2**63)),
            )
            for j in range(n_servers)
        ]

    def run(self, cells: np.ndarray, chunk: int = 4096) -> np.ndarray:
        n_cells = self.mechanism.n_points + 1
        cells = np.asarray(cells, dtype=np.int64)
        for start in range(0, cells.size, chunk):
            block = cells[start : start + chunk]
            onehot_sum = np.bincount(block, minlength=n_cells).astype(np.uint64)
            last = onehot_sum
            for j in range(self.n_servers - 1):
                seeds = [new_seed(self._share_rng) for _ in range(block.size)]
                expanded = np.zeros(n_cells, dtype=np.uint64)
                for s in seeds:  # each client's own PRG stream
                    expanded += prg_expand(s, n_cells)
                last = last - expanded
                self.servers[j]._receive_seeds(seeds)
            self.servers[-1].receive_aggregate(last, block.size)
        return open_partials([s.partial() for s in self.servers])

    def simulate(self, cells: np.ndarray) -> np.ndarray:
        n_cells = self.mechanism.n_points + 1
        hist = np.bincount(np.asarray(cells, dtype=np.int64), minlength=n_cells).astype(np.uint64)
        src = as_source(self._share_rng)
        last = hist.copy()
        for j in range(self.n_servers - 1):
            r = np.asarray(src.uint64(n_cells), dtype=np.uint64)
            self.servers[j].receive_aggregate(r, 0)
            last -= r
        self.servers[-1].receive_aggregate(last, int(np.asarray(cells).size))
        return open_partials([s.partial() for s in self.servers])


class DistributedNoiseMechanism:
    """A tree mechanism whose opened noise is the sum of m servers' shares.

    Delegates everything to ``mechanism`` except the noise moments, which are
    ``variance_factor`` times the central ones (m for the default design; see
    :func:`privstats.secure.noise.noise_variance_factor`).

    >>> from privstats.cdf.tree import BinaryTreeMechanism
    >>> m = BinaryTreeMechanism(8, 1.0)
    >>> d = DistributedNoiseMechanism(m, 2.0)
    >>> bool(abs(d.count_variance()[0] / m.count_variance()[0] - 2.0) < 1e-12)
    True
    """

    def __init__(self, mechanism, variance_factor: float):
        self.mechanism = mechanism
        self.variance_factor = float(variance_factor)

    def __getattr__(self, name: str):
        return getattr(self.mechanism, name)

    def count_variance(self) -> np.ndarray:
        return self.variance_factor * np.asarray(self.mechanism.count_variance())

    def count_covariance(self) -> np.ndarray:
        return self.variance_factor * np.asarray(self.mechanism.count_covariance())

    def params(self) -> dict:
        return {**self.mechanism.params(), "noise_variance_factor": self.variance_factor}
