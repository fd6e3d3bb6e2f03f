"""The three roles of the protocol.  Each keeps its own data private and talks only in
:mod:`~privstats.summarization.messages`.

* :class:`DataOwner` — holds ``D_i``; bids its best unsent point each round with the
  corrected marginal-gain score (research note E1/E2)
  ``g̃ᵀh1(x) − (s/(s+1))·g_ℓᵀh1(x) − ‖h1(x)‖²/(2(s+1))``, ``s = |D_s|`` before adding
  (the last term is the exact self-similarity; it is the constant 1/(2(s+1)) for the
  exact RBF kernel).  The printed bid swaps g̃ and g_ℓ and would pick points *away*
  from the target.  Handles are keyed hashes of row numbers, so the curator can count
  repeated bids (τ rule) without learning which rows they are.
* :class:`Consumer` — holds the target ``D_v``; sends it to the trusted curator and
  receives the summary.
* :class:`Curator` — trusted: builds the sketches (discrete Gaussian, the paper's MWEM,
  or exact), runs the auction,
  keeps the pool of received points and selects the pool's best point each round,
  re-scored at the current broadcast (consistent with the owners' bids, which keeps
  the selection equal to greedy on the released sketches).  Without summary releases
  (the default Gaussian mode) no owner sees anything that depends on D_s, so the
  curator scores its pool by the exact (RFF) greedy gain instead, and each owner
  bids against the public prior corrected by its own sent rows.

>>> import numpy as np
>>> owner = DataOwner(np.zeros((3, 2)), owner_id=0)
>>> owner.n_points
3
"""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from typing import Any

import numpy as np

from privstats.central import add_count_noise
from privstats.privacy.randomness import RNGLike, as_source
from privstats.summarization.auction import PrivateAuction
from privstats.summarization.budget import PrivateParams
from privstats.summarization.features import RandomFourierFeatures
from privstats.summarization.gaussian import GaussianParams, noisy_count, release_rounds, shrink
from privstats.summarization.messages import (
    Bid,
    FetchRequest,
    PointTransfer,
    RoundBroadcast,
    Setup,
    SummaryDelivery,
    TargetData,
)
from privstats.summarization.mwem import MWEMSketch, quantize

__all__ = ["Consumer", "Curator", "DataOwner", "ProtocolError"]


class ProtocolError(RuntimeError):
    """A message that breaks the protocol (unknown handle, re-offered point, bid that does not verify)."""


def _with_own_rows(prior, sent_sum, n_sent: int, target_sketch, s: int):
    """The broadcast prior of the summary mean with the owner's own sent rows in place of g̃ guesses."""
    return prior + (sent_sum - n_sent * target_sketch) / s


def _score(H, target_sketch, summary_sketch, s: int):
    c = s / (s + 1.0)
    return H @ target_sketch - c * (H @ summary_sketch) - (H * H).sum(-1) / (2.0 * (s + 1))


class DataOwner:
    """Owner ``owner_id`` of the rows of ``data`` (never modified, never sent except on request)."""

    def __init__(self, data, owner_id: int):
        self._data = np.asarray(data, dtype=np.float64)
        self.owner_id = int(owner_id)
        self._key = secrets.token_bytes(16)
        self._sent = np.zeros(self._data.shape[0], dtype=bool)
        self._handles: dict[str, int] = {}
        self._H: np.ndarray = None  # type: ignore[assignment]  # set by receive_setup

    @property
    def n_points(self) -> int:
        return self._data.shape[0]

    @property
    def n_inputs(self) -> int:
        return self._data.shape[1]

    def _handle(self, row: int) -> str:
        return hashlib.blake2b(row.to_bytes(8, "little"), key=self._key, digest_size=12).hexdigest()

    def receive_setup(self, msg: Setup) -> None:
        h1 = RandomFourierFeatures(msg.n_inputs, msg.n_features, msg.gamma, msg.feature_seed)
        self._H = np.asfortranarray(h1.transform(self._data))  # column access for sparse updates
        self._base = self._H @ np.asarray(msg.target_sketch, dtype=np.float64)
        self._self = (self._H * self._H).sum(1)
        self._last_g = np.zeros(msg.n_features)
        self._last_prod = np.zeros(self.n_points)
        self._feedback = bool(msg.own_feedback)
        self._target_sketch = np.asarray(msg.target_sketch, dtype=np.float64)
        self._sent_sum = np.zeros(msg.n_features)
        self._n_fed = 0  # rows sent on a bid (the uniform pool rows are not assumed selected)

    def _product(self, g: np.ndarray) -> np.ndarray:
        """H @ g, updated on the coordinates that changed (MWEM changes few per round)."""
        diff = g - self._last_g
        nz = np.flatnonzero(diff)
        if nz.size == 0:
            return self._last_prod
        if nz.size <= g.size // 8:
            self._last_prod = self._last_prod + self._H[:, nz] @ diff[nz]
        else:
            self._last_prod = self._H @ g
        self._last_g = g.copy()
        return self._last_prod

    def bid(self, msg: RoundBroadcast) -> Bid:
        """The best unsent point's score and handle (value None when nothing is left)."""
        if self._H is None:
            raise ProtocolError("bid before setup")
        if self._sent.all():
            return Bid(self.owner_id, msg.round, None, None)
        s = int(msg.summary_size)
        g = np.asarray(msg.summary_sketch, dtype=np.float64)
        if self._feedback and s:
            g = _with_own_rows(g, self._sent_sum, self._n_fed, self._target_sketch, s)
        scores = self._base - (s / (s + 1.0)) * self._product(g) - self._self / (2.0 * (s + 1))
        scores[self._sent] = -np.inf
        row = int(np.argmax(scores))
        handle = self._handle(row)
        self._handles[handle] = row
        return Bid(self.owner_id, msg.round, float(scores[row]), handle)

    def send(self, req: FetchRequest) -> PointTransfer:
        """Send the requested point; it is never offered again."""
        row = self._handles.get(req.handle)
        if row is None or req.owner != self.owner_id:
            raise ProtocolError(f"owner {self.owner_id}: unknown handle {req.handle!r}")
        if self._sent[row]:
            raise ProtocolError(f"owner {self.owner_id}: point already sent")
        self._sent[row] = True
        if self._H is not None:
            self._sent_sum += self._H[row]
            self._n_fed += 1
        return PointTransfer(self.owner_id, req.round, req.handle, row, self._data[row].copy())

    def send_rows(self, rows, round: int) -> list[PointTransfer]:
        """Send rows chosen independently of the data (the uniform baseline)."""
        out = []
        for row in np.asarray(rows, dtype=np.int64).tolist():
            if self._sent[row]:
                raise ProtocolError(f"owner {self.owner_id}: point already sent")
            self._sent[row] = True
            out.append(PointTransfer(self.owner_id, round, self._handle(row), row, self._data[row].copy()))
        return out


class Consumer:
    """Holds the target set D_v and receives the summary."""

    def __init__(self, target):
        self._target = np.asarray(target, dtype=np.float64)
        self.summary: SummaryDelivery | None = None

    def send_target(self) -> TargetData:
        return TargetData(self._target.copy())

    def receive(self, delivery: SummaryDelivery) -> None:
        self.summary = delivery


class Curator:
    """The trusted aggregator.

    ``sketch`` is ``"gaussian"`` (discrete-Gaussian mean embeddings, ``params`` a
    :class:`~privstats.summarization.gaussian.GaussianParams`), ``"mwem"`` (the paper's h2,
    ``params`` a :class:`~privstats.summarization.budget.PrivateParams`) or ``"exact"``
    (non-private means; optional ``params`` only for ``epsilon_auc``/``tau`` of the auction,
    where ``epsilon_auc=inf`` asks only the winner).
    ``seed_set`` is public: it is in the summary during selection but not in the output.
    """

    params: Any  # PrivateParams for "mwem", GaussianParams for "gaussian" (checked in __init__)

    def __init__(
        self,
        *,
        size: int,
        n_features: int,
        gamma: float,
        feature_seed: int,
        sketch: str = "mwem",
        params: PrivateParams | GaussianParams | None = None,
        grid: int = 64,
        sensitivity: int = 2,
        seed_set=None,
        rng: RNGLike = None,
        verify: bool = True,
        target_count: int | None = None,
    ):
        if sketch not in ("gaussian", "mwem", "exact"):
            raise ValueError(f"sketch must be 'gaussian', 'mwem' or 'exact', got {sketch!r}")
        if sketch == "mwem" and not isinstance(params, PrivateParams):
            raise ValueError("PrivateParams are required for the mwem sketch")
        if sketch == "gaussian" and not isinstance(params, GaussianParams):
            raise ValueError("GaussianParams are required for the gaussian sketch")
        self.size, self.n_features, self.gamma, self.feature_seed = (
            int(size),
            int(n_features),
            float(gamma),
            int(feature_seed),
        )
        self.sketch, self.params, self.grid, self.sensitivity = sketch, params, int(grid), int(sensitivity)
        self._src = as_source(rng)
        self.verify = verify
        self._seed = None if seed_set is None else np.asarray(seed_set, dtype=np.float64)
        self._target_count = None if target_count is None else int(target_count)
        eps_auc = params.epsilon_auc if params is not None else math.inf
        tau = params.tau if params is not None and math.isfinite(eps_auc) else None
        self.auction = PrivateAuction(eps_auc, tau, rng=self._src)
        self.round = 0
        self.accessed = 0
        self.accessed_target = 0
        self.mwem_seconds = 0.0
        self.selected: list[tuple[int, int, np.ndarray]] = []  # (owner, row, point)
        self._pool: list[PointTransfer | None] = []  # received, not yet selected (None once selected)
        self._pool_H = np.zeros((0, n_features))
        self._pool_base = np.zeros(0)
        self._pool_self = np.zeros(0)
        self._n_rows = 0
        self.pool_sizes: list[int] = []
        self.sketch_errors: list[float] = []  # ‖g_ℓ − exact mean‖_∞ per round
        self.sketch_errors_l2: list[float] = []  # ‖g_ℓ − exact mean‖₂ per round
        self.shrink_factors: list[float] = []  # James–Stein λ per Gaussian release
        self._bids: dict = {}
        self.pool_uniform = 0  # rows of the data-independent uniform sample in the pool

    # ---------------------------------------------------------------- setup
    def receive_target(self, msg: TargetData) -> None:
        self._target = np.asarray(msg.points, dtype=np.float64)
        self.accessed_target = self._target.shape[0]

    def noisy_target_size(self) -> int:
        """The target size the sketch divides by: exact under replace-one (public), else the released
        ``max(1, m + noise)`` (given as ``target_count``, or drawn here from the params' count noise)."""
        m = self._target.shape[0]
        if self.sketch == "exact" or self.sensitivity == 2:
            return m
        if self._target_count is None:
            if isinstance(self.params, GaussianParams) and self.params.count_sigma is not None:
                self._target_count = noisy_count(m, self.params.count_sigma, rng=self._src)
            elif isinstance(self.params, PrivateParams) and self.params.epsilon_count is not None:
                noise = add_count_noise(np.zeros(1, np.int64), self.params.epsilon_count, rng=self._src)
                self._target_count = max(1, m + int(noise[0]))
            else:
                raise ValueError(
                    "add/remove neighbours (sensitivity=1) need a noisy target size: params.count_sigma "
                    "(GaussianParams) or params.epsilon_count (PrivateParams), or target_count"
                )
        return self._target_count

    def setup(self) -> Setup:
        """Build h1, sketch the target (g̃, computed once) and open the summary's sketch state."""
        n_inputs = self._target.shape[1]
        self.h1 = RandomFourierFeatures(n_inputs, self.n_features, self.gamma, self.feature_seed)
        b = self.h1.bound
        Hv = self.h1.transform(self._target)
        m_released = self.noisy_target_size()
        if self.sketch == "exact":
            self.target_sketch = Hv.mean(0)
            self._releases = {}
        elif self.sketch == "gaussian":
            t0 = time.perf_counter()
            self._gauss = self.params.sketch(self.n_features, self.sensitivity)
            U = self._gauss.encode(Hv, rng=self._src).sum(0)
            self.target_sketch = self._gauss.release(U, self.params.target_sigma, rng=self._src) / m_released
            self._releases = {
                r: i for i, r in enumerate(release_rounds(self.size, self.params.release_every))
            }
            self.mwem_seconds += time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            U = quantize(Hv, b, self.grid, rng=self._src).sum(0)
            state = MWEMSketch(self.n_features, self.grid, self.sensitivity)
            self.target_sketch = b * state.release(
                U, m_released, self.params.t_init, self.params.epsilon_target_iter, rng=self._src
            )
            self._releases = {}
            self.mwem_seconds += time.perf_counter() - t0
        self._target_mean = Hv.mean(0)
        self.target_sketch_error = float(np.abs(self.target_sketch - self._target_mean).max())
        # no summary release: nothing the owners see depends on D_s, so the curator selects from its pool by
        # the exact (RFF) greedy gain; otherwise the pool is scored like the owners' bids
        self.pool_greedy = self.sketch == "gaussian" and not self._releases
        self._owner_sent: dict[int, tuple[np.ndarray, int]] = {}
        # the summary: public seed rows plus the selected rows
        self._sum_h = np.zeros(self.n_features)
        self._sum_q = np.zeros(self.n_features, dtype=np.int64)
        self._s = 0
        self._state: Any = (
            MWEMSketch(self.n_features, self.grid, self.sensitivity) if self.sketch == "mwem" else None
        )
        self._seed_sum = np.zeros(self.n_features)
        self._s0 = 0
        if self._seed is not None and self._seed.shape[0]:
            Hs = self.h1.transform(self._seed)
            self._add_rows(Hs)
            self._seed_sum, self._s0 = Hs.sum(0), Hs.shape[0]
            if self._state is not None:
                self._state.init_from_means(Hs.mean(0) / b)
        self._g_last: np.ndarray | None = None
        self._s_last = 0
        return Setup(
            n_inputs,
            self.n_features,
            self.gamma,
            self.feature_seed,
            self.target_sketch.copy(),
            own_feedback=self.pool_greedy,
        )

    def _add_rows(self, H: np.ndarray) -> None:
        self._sum_h += H.sum(0)
        if self._state is not None:
            self._sum_q += quantize(H, self.h1.bound, self.grid, rng=self._src).sum(0)
        elif self.sketch == "gaussian":
            self._sum_q += self._gauss.encode(H, rng=self._src).sum(0)
        self._s += H.shape[0]

    # ---------------------------------------------------------------- rounds
    def broadcast(self) -> RoundBroadcast:
        """g_ℓ for the current summary: exact for a public (seed-only) or empty summary, else the sketch."""
        self.round += 1
        s = self._s
        exact = self._sum_h / s if s else np.zeros(self.n_features)
        if self.sketch == "exact" or not self.selected:
            g = exact
        elif self.sketch == "gaussian":
            t0 = time.perf_counter()
            g = self._gaussian_mean(s)
            self.mwem_seconds += time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            g = self.h1.bound * self._state.release(
                self._sum_q, s, self.params.t_sub, self.params.epsilon_summary_iter, rng=self._src
            )
            self.mwem_seconds += time.perf_counter() - t0
        self.sketch_errors.append(float(np.abs(g - exact).max()))
        self.sketch_errors_l2.append(float(np.linalg.norm(g - exact)))
        self._g = g
        return RoundBroadcast(self.round, s, g.copy())

    def _prior(self, s: int) -> np.ndarray:
        """Public prior for the summary mean: the seed exactly, each selected row ≈ the target sketch g̃."""
        return (self._seed_sum + (s - self._s0) * self.target_sketch) / s

    def _gaussian_mean(self, s: int) -> np.ndarray:
        """The discrete-Gaussian release of this round (shrunk toward the prior), or, between releases, the
        last estimate with the rows added since predicted by the prior (both post-processing)."""
        k = self._releases.get(self.round)
        if k is None:
            if self._g_last is None:
                return self._prior(s)
            return (self._s_last * self._g_last + (s - self._s_last) * self.target_sketch) / s
        sigma = self.params.summary_sigmas[k]
        noisy = self._gauss.release(self._sum_q, sigma, rng=self._src) / s
        g = noisy
        if self.params.shrinkage:
            g, lam = shrink(noisy, self._prior(s), (sigma * self._gauss.step / s) ** 2)
            self.shrink_factors.append(lam)
        self._g_last, self._s_last = g, s
        return g

    def requests(self, bids: list[Bid]) -> list[FetchRequest]:
        """Run the auction on this round's bids."""
        self._bids = {(b.owner, b.handle): b.value for b in bids if b.value is not None}
        return self.auction.requests(bids, self.round)

    def _check_bid(self, t: PointTransfer, h: np.ndarray) -> None:
        """The owner's bid of this round must be the score of the point it sent."""
        bid = self._bids.get((t.owner, t.handle)) if t.round == self.round else None
        if self.verify and bid is not None:
            g = self._g
            if self.pool_greedy and self._s:
                sent_sum, n_sent = self._owner_sent.get(t.owner, (0.0, 0))
                g = _with_own_rows(g, sent_sum, n_sent, self.target_sketch, self._s)
            check = float(_score(h, self.target_sketch, g, self._s))
            if abs(check - bid) > 1e-8 * (1.0 + abs(bid)):
                raise ProtocolError(f"owner {t.owner}: bid {bid} does not match its point ({check})")

    def receive_uniform(self, transfers: list[PointTransfer]) -> None:
        """Add a data-independent uniform sample of rows to the pool (requested before round 1).

        The rows were chosen without looking at any data, so the request tells an owner nothing;
        the curator's exact greedy step may select them like fetched rows."""
        self.pool_uniform += len(transfers)
        self.receive_points(transfers, bid_rows=False)

    def receive_points(self, transfers: list[PointTransfer], bid_rows: bool = True) -> None:
        """Add fetched points to the pool, verifying this round's bids against the raw points."""
        if not transfers:
            return
        H = self.h1.transform(np.stack([t.point for t in transfers]))
        for t, h in zip(transfers, H, strict=False):
            self.accessed += 1
            if bid_rows:
                self._check_bid(t, h)
                total, count = self._owner_sent.get(t.owner, (np.zeros(self.n_features), 0))
                self._owner_sent[t.owner] = (total + h, count + 1)
            self._pool.append(t)
        n_old, n_new = self._n_rows, self._n_rows + H.shape[0]
        if n_new > self._pool_H.shape[0]:  # grow the buffers geometrically
            cap = max(2 * self._pool_H.shape[0], n_new, 64)
            self._pool_H = np.resize(self._pool_H, (cap, self.n_features))
            self._pool_base = np.resize(self._pool_base, cap)
            self._pool_self = np.resize(self._pool_self, cap)
        self._pool_H[n_old:n_new] = H
        self._pool_base[n_old:n_new] = H @ (self._target_mean if self.pool_greedy else self.target_sketch)
        self._pool_self[n_old:n_new] = (H * H).sum(1)
        self._n_rows = n_new

    def select(self) -> None:
        """Move the pool's best point (scored at the current broadcast) into the summary."""
        if self._n_pooled() == 0:
            raise ProtocolError("empty pool: no owner has points left")
        s = self._s
        n = self._n_rows
        exact = self.pool_greedy or self.sketch == "exact"  # (exact: the broadcast is the exact mean)
        g = (self._sum_h / s if s else np.zeros(self.n_features)) if exact else self._g
        scores = (
            self._pool_base[:n]
            - (s / (s + 1.0)) * (self._pool_H[:n] @ g)
            - self._pool_self[:n] / (2.0 * (s + 1))
        )
        best = np.flatnonzero(scores == scores.max())
        j = int(best[0]) if best.size == 1 else int(best[self._src.integers(best.size)])
        t = self._pool[j]
        assert t is not None  # a selected row scores -inf
        self._pool[j] = None
        self._pool_base[j] = -np.inf  # never selected again
        self.selected.append((t.owner, t.row, t.point))
        self._add_rows(self._pool_H[j][None, :])
        self.pool_sizes.append(self._n_pooled())

    def _n_pooled(self) -> int:
        return len(self._pool) - len(self.selected)

    def add_uniform(self, transfers: list[PointTransfer]) -> None:
        """The uniform baseline: take the transferred points as they are."""
        for t in transfers:
            self.accessed += 1
            self.selected.append((t.owner, t.row, t.point))

    def deliver(self) -> SummaryDelivery:
        pts = np.stack([p for _, _, p in self.selected]) if self.selected else np.zeros((0, 0))
        return SummaryDelivery(
            pts,
            np.array([o for o, _, _ in self.selected], dtype=np.int64),
            np.array([r for _, r, _ in self.selected], dtype=np.int64),
        )
