"""A budget ledger that refuses a release before it would overspend.

Call :meth:`BudgetLedger.spend` *before* releasing a result: it either records
the spend or raises :class:`BudgetExceededError` and records nothing.

Accounting by total and ``composition``:

* ``PureDP`` / ``ApproxDP`` total, ``composition="basic"``: ε and δ add up
  (zCDP spends are refused: convert them with ``.to_approx(delta)``).
* ``ZCDP`` total (either composition): ρ adds up, a pure ε spend counts ε²/2.
* ``ApproxDP`` total with δ > 0, ``composition="zcdp"``: spends are accumulated as ρ
  (pure ε as ε²/2) and the total ρ must convert, by :func:`zcdp_to_approx`, to at
  most the total (ε, δ).

Sums are compared with a relative tolerance of 1e-12 so that, e.g., ten spends of
0.1 fit a total of 1.0 despite floating-point rounding.

>>> from privstats.privacy.guarantees import PureDP
>>> led = BudgetLedger(PureDP(1.0))
>>> led.spend(PureDP(0.6), "histogram")
>>> led.remaining
PureDP(epsilon=0.4)
>>> led.spend(PureDP(0.5), "mean")
Traceback (most recent call last):
privstats.privacy.ledger.BudgetExceededError: spending ε=0.5 for 'mean' would exceed the total ε=1: ...
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from fractions import Fraction
from typing import Any

from privstats.privacy.composition import zcdp_to_approx
from privstats.privacy.guarantees import ZCDP, ApproxDP, Guarantee, PureDP, guarantee_from_dict
from privstats.privacy.integrity import IntegrityError, resolve_key

__all__ = ["BudgetExceededError", "BudgetLedger", "IntegrityError", "LedgerTamperedError"]

_TOL = 1e-12


class BudgetExceededError(ValueError):
    """Raised by :meth:`BudgetLedger.spend` when a spend would exceed the total."""


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + _TOL) + 1e-300


class BudgetLedger:
    """Total guarantee, entries (label, guarantee), thread-safe ``spend``, JSON round trip.

    >>> from privstats.privacy.guarantees import ZCDP, PureDP
    >>> led = BudgetLedger(ZCDP(1.0))
    >>> led.spend(PureDP(1.0), "count")          # counts rho = 0.5
    >>> led.remaining
    ZCDP(rho=0.5)
    >>> BudgetLedger.from_json(led.to_json()).entries
    [('count', PureDP(epsilon=1.0))]
    """

    def __init__(self, total: Guarantee, *, composition: str = "basic"):
        if not isinstance(total, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"total must be a PureDP, ApproxDP or ZCDP guarantee, got {type(total).__name__}")
        if composition not in ("basic", "zcdp"):
            raise ValueError(f"composition must be one of ['basic', 'zcdp'], got {composition!r}")
        if composition == "zcdp" and not isinstance(total, ZCDP) and total.delta == 0:
            raise ValueError(
                "composition='zcdp' needs a ZCDP total or an (epsilon, delta) total with delta > 0 "
                "(zCDP never implies pure epsilon-DP)"
            )
        self._total: PureDP | ApproxDP | ZCDP = total
        self._composition = composition
        # accounting mode: "eps" (ε, δ sums) or "rho" (ρ sum, checked as ρ or via conversion)
        self._mode = "rho" if (isinstance(total, ZCDP) or composition == "zcdp") else "eps"
        self._entries: list[tuple[str, Guarantee]] = []
        # exact running sums of the float costs (Fractions), rounded once when compared
        self._sums_exact: tuple[Fraction, Fraction, Fraction] = (Fraction(0), Fraction(0), Fraction(0))
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ accounting
    @property
    def total(self) -> Guarantee:
        return self._total

    @property
    def composition(self) -> str:
        return self._composition

    def _cost(self, g: Guarantee) -> tuple[float, float, float]:
        """(ε, δ, ρ) contributed by ``g`` in this ledger's mode; raises TypeError if it cannot count."""
        if not isinstance(g, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"guarantee must be a PureDP, ApproxDP or ZCDP value, got {type(g).__name__}")
        if self._mode == "eps":
            if isinstance(g, ZCDP):
                raise TypeError(
                    f"cannot spend a zCDP guarantee ({g}) from an (epsilon, delta) budget with basic composition: "
                    "convert it with .to_approx(delta) or use composition='zcdp'"
                )
            return g.epsilon, g.delta, 0.0
        if isinstance(g, ZCDP):
            return 0.0, 0.0, g.rho
        if g.delta > 0:
            raise TypeError(
                f"cannot spend an (epsilon, delta) guarantee with delta > 0 ({g}) from a zCDP budget"
            )
        return 0.0, 0.0, g.epsilon**2 / 2

    def _fits(self, eps: float, delta: float, rho: float) -> bool:
        t = self._total
        if self._mode == "eps":
            assert not isinstance(t, ZCDP)  # a zCDP total always accounts in "rho" mode
            return _le(eps, t.epsilon) and _le(delta, t.delta)
        if isinstance(t, ZCDP):
            return _le(rho, t.rho)
        if rho == 0:
            return True
        return _le(zcdp_to_approx(rho, t.delta).epsilon, t.epsilon)

    def _describe(self, eps: float, delta: float, rho: float) -> str:
        if self._mode == "rho":
            return str(ZCDP(rho))
        return f"ε={eps:.4g}" if delta == 0 else f"ε={eps:.4g}, δ={delta:.3g}"

    def _exact_after(self, extra: tuple[float, float, float] | None) -> tuple[Fraction, Fraction, Fraction]:
        if extra is None:
            return self._sums_exact
        return tuple(s + Fraction(x) for s, x in zip(self._sums_exact, extra, strict=False))  # type: ignore[return-value]

    def _sums(self, extra: tuple[float, float, float] | None = None) -> tuple[float, float, float]:
        """Correctly rounded sums of all recorded costs (plus ``extra``), like math.fsum."""
        e, d, r = self._exact_after(extra)
        return float(e), float(d), float(r)

    def can_spend(self, guarantee: Guarantee) -> bool:
        """Whether ``spend(guarantee, ...)`` would succeed now (nothing is recorded)."""
        cost = self._cost(guarantee)
        with self._lock:
            return self._fits(*self._sums(cost))

    def spend(self, guarantee: Guarantee, label: str) -> None:
        """Record ``guarantee`` under ``label``, or raise :class:`BudgetExceededError` and record nothing.

        Call it before releasing: the check and the record are one atomic step.
        """
        if not isinstance(label, str):
            raise TypeError(f"label must be a string, got {type(label).__name__}")
        cost = self._cost(guarantee)
        with self._lock:
            before = self._sums()
            after = self._sums(cost)
            if not self._fits(*after):
                raise BudgetExceededError(
                    f"spending {guarantee} for {label!r} would exceed the total {self._total}: "
                    f"spent {self._describe(*before)}, would be {self._describe(*after)}"
                )
            self._entries.append((label, guarantee))
            self._sums_exact = self._exact_after(cost)

    # ------------------------------------------------------------------ views
    @property
    def entries(self) -> list[tuple[str, Guarantee]]:
        """A copy of the recorded (label, guarantee) pairs, in order."""
        with self._lock:
            return list(self._entries)

    @property
    def spent(self) -> Guarantee:
        """The composed spend: PureDP/ApproxDP (basic) or ZCDP (ρ accounting)."""
        with self._lock:
            eps, delta, rho = self._sums()
        if self._mode == "rho":
            return ZCDP(rho)
        if isinstance(self._total, PureDP) or delta == 0:
            return PureDP(eps)
        return ApproxDP(eps, delta)

    @property
    def remaining(self) -> Guarantee:
        """What can still be spent, clamped at zero.

        For an (ε, δ) total under ``composition="zcdp"`` this is the largest ρ still
        available, as a :class:`ZCDP` (the total ρ that converts to at most the total).
        """
        with self._lock:
            eps, delta, rho = self._sums()
        t = self._total
        if self._mode == "eps":
            assert not isinstance(t, ZCDP)  # a zCDP total always accounts in "rho" mode
            e = max(0.0, t.epsilon - eps)
            if isinstance(t, PureDP):
                return PureDP(e)
            return ApproxDP(e, max(0.0, t.delta - delta))
        if isinstance(t, ZCDP):
            return ZCDP(max(0.0, t.rho - rho))
        return ZCDP(max(0.0, self._max_rho() - rho))

    def _max_rho(self) -> float:
        """Largest ρ with zcdp_to_approx(ρ, δ_total).ε <= ε_total (bisection, conservative)."""
        t = self._total
        assert not isinstance(t, ZCDP)  # called only for an (ε, δ) total

        def ok(r: float) -> bool:
            return zcdp_to_approx(r, t.delta).epsilon <= t.epsilon

        lo, hi = 0.0, max(t.epsilon, 1e-12)
        while ok(hi):
            lo, hi = hi, 2 * hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if ok(mid):
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-13 * hi:
                break
        return lo

    def __repr__(self) -> str:
        return f"BudgetLedger(total={self._total!r}, composition={self._composition!r}, entries={len(self._entries)})"

    # ------------------------------------------------------------------ persistence
    @staticmethod
    def new_key() -> bytes:
        """A fresh 32-byte key (OS CSPRNG) for signing saved ledgers; the owner keeps it apart from the file."""
        return secrets.token_bytes(32)

    def to_json(self, key: bytes | None = None) -> str:
        """The ledger as a JSON string (total, composition, entries), signed with an HMAC-SHA256.

        ``key``: bytes (>= 16; see :meth:`new_key`), or None for the owner's default key
        (:func:`privstats.privacy.integrity.default_key`, a 0600 file created on first use).  A raised
        total, an edited, added or deleted entry, or a removed ``hmac`` field is refused by
        :meth:`from_json`.  (An attacker who can replace the file with an older signed copy is not
        detected: a rollback needs a counter kept elsewhere, e.g. the services' database.)

        >>> from privstats.privacy.guarantees import PureDP
        >>> led, key = BudgetLedger(PureDP(1.0)), BudgetLedger.new_key()
        >>> led.spend(PureDP(0.5), "a")
        >>> BudgetLedger.from_json(led.to_json(key), key=key).entries
        [('a', PureDP(epsilon=0.5))]
        """
        with self._lock:
            entries = [{"label": lab, "guarantee": g.to_dict()} for lab, g in self._entries]
        body = {"total": self._total.to_dict(), "composition": self._composition, "entries": entries}
        return json.dumps({**body, "hmac": _mac(resolve_key(key), body)})

    @classmethod
    def from_json(cls, text: str, key: bytes | None = None, *, verify: bool = True) -> BudgetLedger:
        """Rebuild a ledger from :meth:`to_json`; the entries are replayed, so an overspent record is refused.

        ``key``: the owner's key (None: the default key).  The document's HMAC must be present and
        verify, else :class:`LedgerTamperedError` (an :class:`~privstats.privacy.integrity.IntegrityError`).
        ``verify=False`` skips the MAC, for forensics only.  Duplicate JSON keys are always refused.
        """
        if not isinstance(text, (str, bytes)):
            raise TypeError(f"text must be a JSON string, got {type(text).__name__}")
        try:
            d = json.loads(text, object_pairs_hook=_no_duplicates)
            if not isinstance(d, dict):
                raise TypeError("not an object")
            mac = d.pop("hmac", None)
            if verify:
                k = resolve_key(key)
                if mac is None:
                    raise LedgerTamperedError(
                        "text: the ledger carries no hmac field (removed, or saved unsigned); "
                        "refusing it (verify=False reads it for forensics only)"
                    )
                if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(k, d)):
                    raise LedgerTamperedError(
                        "text: the ledger's HMAC does not verify with this key: the file "
                        "was edited (total, entries) or signed with another key"
                    )
            total = guarantee_from_dict(d["total"])
            composition = d.get("composition", "basic")
            entries = [(e["label"], guarantee_from_dict(e["guarantee"])) for e in d["entries"]]
        except LedgerTamperedError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"text is not a BudgetLedger JSON document: {exc}") from None
        led = cls(total, composition=composition)
        for label, g in entries:
            led.spend(g, label)
        return led


class LedgerTamperedError(IntegrityError):
    """A saved ledger whose HMAC is missing or does not verify (edited, or signed with another key)."""


def _mac(key: bytes, body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return hmac.new(key, b"privstats-ledger-v1\n" + canonical, hashlib.sha256).hexdigest()


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError(f"duplicate JSON key(s) {sorted(dup)} (an edited file)")
    return dict(pairs)
