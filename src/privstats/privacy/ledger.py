"""A budget ledger that refuses a release before it would overspend. To be implemented."""

from __future__ import annotations

from privstats.privacy.guarantees import Guarantee

__all__ = ["BudgetLedger", "BudgetExceededError"]


class BudgetExceededError(ValueError):
    """Raised by :meth:`BudgetLedger.spend` when a spend would exceed the total."""


class BudgetLedger:
    """Total guarantee, entries (label, guarantee), thread-safe ``spend``, JSON round trip."""

    def __init__(self, total: Guarantee, *, composition: str = "basic"):
        raise NotImplementedError

    def spend(self, guarantee: Guarantee, label: str) -> None:
        raise NotImplementedError
