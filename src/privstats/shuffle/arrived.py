"""The guarantee of a shuffled estimate is computed for the users who took part, never for the planned n.

A shuffle protocol is calibrated for ``n`` users: the other users' noise hides each one.  When fewer
reports arrive (a batch cut short, a simulation of a few values) the same local randomizers give a
weaker shuffled guarantee.  :func:`arrived_guarantee` recomputes ε at the planned δ for the arrived
n' with the protocol's own accountant (capped at the local ε0 when the randomizer is ε0-LDP, since
the shuffled output of ε0-LDP reports is ε0-DP whatever n'), warns with
:class:`WeakerGuaranteeWarning` and records the planned guarantee in the estimate's details.  When
no finite ε up to :data:`EPS_SEARCH_MAX` holds (a protocol whose messages carry the data in clear,
hidden only by the blanket), the estimate is refused with :class:`TooFewUsersError`.

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     g, d = arrived_guarantee(1.0, 1e-6, 200, 2, lambda e: 1.0 if e < 1.98 else 0.0, cap=1.98)
>>> round(g.epsilon, 2), d["guarantee_weaker_than_planned"]
(1.98, True)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from privstats.privacy.guarantees import ApproxDP

__all__ = ["EPS_SEARCH_MAX", "TooFewUsersError", "WeakerGuaranteeWarning", "arrived_guarantee"]

#: the largest ε searched when a protocol has no local ε0 to fall back on
EPS_SEARCH_MAX = 64.0


class TooFewUsersError(ValueError):
    """Too few users arrived for the protocol to give any finite ε at the planned δ."""


class WeakerGuaranteeWarning(UserWarning):
    """Fewer users arrived than planned: the estimate's guarantee is weaker than the planned one."""


def _smallest_eps(delta_of_eps: Callable[[float], float], delta: float, lo: float, hi: float) -> float:
    """An ε in [lo, hi] with delta_of_eps(ε) <= δ, within 1e-6 of the smallest (hi must satisfy it)."""
    if delta_of_eps(lo) <= delta:
        return lo
    while hi - lo > 1e-6 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if delta_of_eps(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi  # always a value where the bound was checked


def arrived_guarantee(
    epsilon: float,
    delta: float,
    n_planned: int,
    n_arrived: int,
    delta_of_eps: Callable[[float], float],
    *,
    cap: float | None = None,
    stacklevel: int = 3,
) -> tuple[ApproxDP, dict]:
    """(guarantee, details) for ``n_arrived`` users of a protocol planned at (ε, δ) for ``n_planned``.

    ``delta_of_eps(ε)`` is the protocol's valid upper bound on δ(ε) at n_arrived users; ``cap`` the
    local ε0 of its randomizer (None: not locally private).  At n_arrived >= n_planned (or 0 users:
    nobody's data is in the output) the planned guarantee stands and details are empty.
    ``stacklevel`` points the warning at the caller of the protocol's ``estimate``.
    """
    planned = ApproxDP(epsilon, delta)
    if n_arrived >= n_planned or n_arrived <= 0:
        return planned, {}
    top = EPS_SEARCH_MAX if cap is None else max(float(cap), epsilon)
    if cap is not None and (n_arrived == 1 or delta_of_eps(top) > delta):
        eps = top  # the shuffled output of ε0-LDP reports is ε0-DP outright
    elif delta_of_eps(top) > delta:
        raise TooFewUsersError(
            f"too few values: only {n_arrived} of the planned n={n_planned} users arrived: the protocol gives no "
            f"epsilon <= {EPS_SEARCH_MAX:g} at delta={delta:g} for so few users (its messages are hidden "
            "only by the other users' blanket); collect at least the planned n"
        )
    else:
        eps = _smallest_eps(delta_of_eps, delta, float(epsilon), top)
    if eps <= epsilon:  # the planned ε still holds for the users who came
        return planned, {"guarantee_n": int(n_arrived)}
    guarantee = ApproxDP(eps, delta)
    warnings.warn(
        f"{n_arrived} users arrived, {n_planned} were planned: the guarantee is recomputed for "
        f"{n_arrived} users ({guarantee}), weaker than the planned ({planned})",
        WeakerGuaranteeWarning,
        stacklevel=stacklevel,
    )
    return guarantee, {
        "guarantee_weaker_than_planned": True,
        "planned_guarantee": {"epsilon": float(epsilon), "delta": float(delta), "n": int(n_planned)},
        "guarantee_n": int(n_arrived),
    }
