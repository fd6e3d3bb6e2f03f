"""Local-model ECDF: every user reports its grid cell through a hierarchical histogram of LDP oracles.

Each user maps its value to its cell on the public grid (the cell convention of the
central path: a record x is counted at threshold tau_i iff x <= tau_i) and reports it
through a :class:`~privstats.local.HierarchicalHistogram` over the N cells (ε-LDP per
user).  The analyst takes the consistent (GLS) leaf estimates and their prefix sums:
the N cumulative counts, unbiased, with the exact variance of every one from
:meth:`~privstats.local.HierarchicalHistogram.prefix_variances` (O(N h^3)).

The tree (branching b, user or budget split, level oracle among GRR / OUE / OLH or the
per-level best) minimises the mean exact prefix variance for (N, ε, n) at uniform data:
n is public in the local model (the collector counts the reports).

>>> import numpy as np
>>> hh = choose_local_hierarchy(64, 1.0, 10_000)
>>> hh.domain_size, hh.split
(64, 'users')
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from privstats.local import HierarchicalHistogram
from privstats.local.hierarchy import HierarchyState
from privstats.local.unary import OUE
from privstats.privacy.randomness import RNGLike, as_generator, as_source

__all__ = ["LocalPrefixNoise", "choose_local_hierarchy", "local_hierarchy", "release_local_prefix_counts"]

ORACLES = ("grr", "olh", "oue", "auto")
CLIENT_CHUNK = 1 << 15  # users encoded and aggregated per batch on the deployment path
MIN_USERS_PER_LEVEL = 20  # user split only when every level expects at least this many reports


def _supported(hh: HierarchicalHistogram) -> bool:
    from privstats.local.grr import GRR
    from privstats.local.olh import OLH

    return all(isinstance(o, (GRR, OUE, OLH)) for o in hh.oracles)


def mean_prefix_variance(hh: HierarchicalHistogram, n: int, at: np.ndarray | None = None) -> float:
    """Mean exact variance of the N prefix counts at uniform data (n/N per cell) and expected level sizes
    (``at``: of the prefixes in ``at`` only)."""
    N, h = hh.domain_size, hh.height
    sizes = np.full(h, n / h) if hh.split == "users" else np.full(h, float(n))
    return float(hh.prefix_variances(np.full(N, n / N), sizes, at=at).mean())


def _candidates(n_cells: int, epsilon: float, n: int) -> list[HierarchicalHistogram]:
    """The trees :func:`choose_local_hierarchy` compares, in its order."""
    out = []
    for b in sorted({*range(2, 65), max(n_cells, 2)}):  # b = N: one flat oracle over the cells
        h = HierarchicalHistogram(n_cells, epsilon, b, "grr").height
        if b > 2 and b**h > 8 * max(n_cells, 4):
            continue
        for split in ("users", "budget"):
            if split == "users" and h > 1 and n < MIN_USERS_PER_LEVEL * h:
                continue
            for oracle in ORACLES:
                hh = HierarchicalHistogram(n_cells, epsilon, b, oracle, split)
                if _supported(hh):
                    out.append(hh)
    return out


SCREEN_ABOVE = 2048
"""Grids with more cells screen the candidate trees on a sample of prefixes before comparing exactly."""
SCREENS = (
    (256, 0.25),
    (2048, 0.10),
)  # (prefixes, margin): each keeps the trees within the margin of its best


def _screen(cands: list[HierarchicalHistogram], n_cells: int, n: int) -> list[HierarchicalHistogram]:
    """The candidates whose mean prefix variance over fixed pseudo-random prefixes (the same for all,
    so their errors largely cancel) is within each screen's margin of the best."""
    for size, margin in SCREENS:
        if len(cands) <= 1 or size >= n_cells:
            break
        at = np.sort(np.random.default_rng(n_cells + size).choice(n_cells, size, replace=False))
        v = np.array([mean_prefix_variance(hh, n, at) for hh in cands])
        cands = [hh for hh, vi in zip(cands, v, strict=True) if vi <= v.min() * (1 + margin)]
    return cands


def choose_local_hierarchy(n_cells: int, epsilon: float, n: int) -> HierarchicalHistogram:
    """The hierarchical histogram with the smallest mean exact prefix variance for (N, ε, n).

    Candidates: b = 2..64 (padding b^h <= 8N) and b = N (flat), split "users" (one report at ε to a random
    level; only when every level expects >= 20 reports) or "budget" (h reports at ε/h),
    level oracles GRR, OLH, OUE or the per-level best of them.  Uses public values only.

    Above :data:`SCREEN_ABOVE` cells the ~350 candidates are first screened (:data:`SCREENS`):
    on 256 prefixes, keeping those within 25% of the best, then on 2048, keeping those within
    10%, and only these are compared exactly.  The exact prefix variances cost O(N h^3) each
    (12 s for all candidates at N = 2^14); the screened ratios to the best were within 9% (256
    prefixes) and 5% (512) of the exact ones at N = 4096..16384, so the exact winner stays on the
    short list and the choice is that of the exhaustive search.
    """
    return _choose(n_cells, epsilon, n)[0]


def chosen_mean_prefix_variance(n_cells: int, epsilon: float, n: int) -> float:
    """:func:`mean_prefix_variance` of :func:`choose_local_hierarchy`'s tree (computed there once)."""
    return _choose(n_cells, epsilon, n)[1]


@lru_cache(maxsize=64)
def _choose(n_cells: int, epsilon: float, n: int) -> tuple[HierarchicalHistogram, float]:
    cands = _candidates(n_cells, epsilon, n)
    if n_cells > SCREEN_ABOVE:
        cands = _screen(cands, n_cells, n)
    best: tuple[HierarchicalHistogram, float] | None = None
    for hh in cands:
        v = mean_prefix_variance(hh, n)
        if best is None or v < best[1] * (1 - 1e-9):
            best = (hh, v)
    assert best is not None  # the "grr" levels with split="budget" are always supported
    return best


def local_hierarchy(n_cells: int, epsilon: float, n: int, method: str = "auto") -> HierarchicalHistogram:
    """``method``: "auto" (:func:`choose_local_hierarchy`), "b-ary:<b>" (b fixed, the rest chosen), "binary"."""
    if method == "auto":
        return choose_local_hierarchy(n_cells, epsilon, n)
    if method == "binary":
        method = "b-ary:2"
    if not method.startswith("b-ary:"):
        raise ValueError(f"method must be 'auto', 'binary' or 'b-ary:<b>' for model='local', got {method!r}")
    try:
        b = int(method.split(":", 1)[1])
    except ValueError:
        raise ValueError(f"method 'b-ary:<b>' needs an integer b >= 2, got {method!r}") from None
    if b < 2:
        raise ValueError(f"method 'b-ary:<b>' needs an integer b >= 2, got {method!r}")
    h = HierarchicalHistogram(n_cells, epsilon, b, "grr").height
    splits = ("users", "budget") if h == 1 or n >= MIN_USERS_PER_LEVEL * h else ("budget",)
    cands = [HierarchicalHistogram(n_cells, epsilon, b, o, s) for s in splits for o in ORACLES]
    return min((hh for hh in cands if _supported(hh)), key=lambda hh: mean_prefix_variance(hh, n))


class LocalPrefixNoise:
    """The released counts' noise model (for :func:`privstats.cdf.covariance.raw_covariance`).

    ``count_covariance()`` is the exact covariance of the consistent prefix counts at the
    plug-in cell counts (dense, computed on demand).
    """

    name = "hierarchical-histogram"

    def __init__(self, hh: HierarchicalHistogram, plug_in_counts: np.ndarray, level_sizes: np.ndarray):
        self.hh, self.plug_in_counts, self.level_sizes = hh, plug_in_counts, level_sizes

    def count_covariance(self) -> np.ndarray:
        return self.hh.prefix_covariance(self.plug_in_counts, self.level_sizes)


def release_local_prefix_counts(
    cells: np.ndarray, hh: HierarchicalHistogram, rng: RNGLike = None, *, clients: bool | None = None
) -> tuple[np.ndarray, np.ndarray, HierarchyState, dict]:
    """(prefix counts, their exact stderr, aggregator state, noise info) from users' cells.

    ``clients`` (default: ``rng is None``) runs the real clients (``encode_batch`` from the
    OS CSPRNG, or from ``rng``) and ``aggregate`` in chunks; otherwise ``simulate`` draws the
    aggregator state directly with a seeded numpy Generator (same distribution).
    """
    clients = rng is None if clients is None else clients
    if clients:
        src = as_source(rng)
        state = hh.new_state()
        for start in range(0, cells.size, CLIENT_CHUNK):
            state = hh.aggregate(hh.encode_batch(cells[start : start + CLIENT_CHUNK], src), state)
    else:
        state = hh.simulate(cells, as_generator(rng))
    if np.any(state.level_sizes == 0):
        raise ValueError(
            f"too few users ({cells.size}) for a {hh.height}-level tree: some level got no report"
        )
    est = hh.prefix_counts(state)
    y = hh.node_estimates(state)
    plug = hh._plug_in_counts(state, y)[: hh.domain_size]
    return (
        est.value,
        est.stderr,
        state,
        {
            "plug_in_counts": plug,
            "level_sizes": state.level_sizes,
            "path": "clients" if clients else "simulate",
        },
    )
