"""XofTurboShake128 of VDAF-08 (TurboSHAKE128 with domain byte 1), seeds and field-vector expansion.

pycryptodome (the ``serve`` extra) provides TurboSHAKE128; it is imported on first use, so the core
package needs only numpy and scipy.

Example:
    >>> from privstats.secure.vdaf.xof import XofTurboShake128
    >>> len(XofTurboShake128.derive_seed(bytes(16), b"dst", b"binder"))
    16
"""

from __future__ import annotations

from typing import Any

from privstats.secure.vdaf.field import Field

__all__ = ["SEED_SIZE", "VERSION", "XofTurboShake128", "format_dst"]

SEED_SIZE = 16
VERSION = 8


def format_dst(algo_class: int, algo: int, usage: int) -> bytes:
    """Domain separation tag: version, class, algorithm id (4 bytes BE) and usage (2 bytes BE)."""
    return bytes([VERSION, algo_class]) + algo.to_bytes(4, "big") + usage.to_bytes(2, "big")


_TURBOSHAKE: Any = None


def _turboshake() -> Any:
    global _TURBOSHAKE
    if _TURBOSHAKE is None:
        try:
            from Crypto.Hash import TurboSHAKE128
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("VDAF needs pycryptodome>=3.20 (pip install 'privstats[serve]')") from exc
        _TURBOSHAKE = TurboSHAKE128
    return _TURBOSHAKE


class XofTurboShake128:
    """Stream of TurboSHAKE128(len(dst) || dst || seed || binder, D=1)."""

    SEED_SIZE = SEED_SIZE

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) != SEED_SIZE:
            raise ValueError(f"seed must be {SEED_SIZE} bytes, got {len(seed)}")
        if len(dst) > 255:
            raise ValueError("dst must be at most 255 bytes")
        self._h = _turboshake().new(domain=1, data=bytes([len(dst)]) + dst + seed)
        if binder:
            self._h.update(binder)

    def next(self, length: int) -> bytes:
        """The next ``length`` output bytes."""
        return bytes(self._h.read(length))

    def next_vec(self, field: type[Field], length: int) -> list[int]:
        """The next ``length`` field elements by rejection sampling (values >= MODULUS are skipped)."""
        return self.next_vec_bytes(field, length)[0]

    def next_vec_bytes(self, field: type[Field], length: int) -> tuple[list[int], bytes]:
        """Like :meth:`next_vec`, also returning the canonical encoding of the vector."""
        size = field.ENCODED_SIZE
        raw = self.next(length * size)
        vec = field.decode_vec_unchecked(raw)
        p = field.MODULUS
        if all(x < p for x in vec):
            return vec, raw
        # Rare path: drop rejected elements and keep reading.
        vec = [x for x in vec if x < p]
        while len(vec) < length:
            x = int.from_bytes(self.next(size), "little")
            if x < p:
                vec.append(x)
        return vec, field.encode_vec(vec)

    @classmethod
    def derive_seed(cls, seed: bytes, dst: bytes, binder: bytes) -> bytes:
        """A fresh seed from (seed, dst, binder)."""
        return cls(seed, dst, binder).next(SEED_SIZE)

    @classmethod
    def expand_into_vec(
        cls, field: type[Field], seed: bytes, dst: bytes, binder: bytes, length: int
    ) -> list[int]:
        """``length`` field elements expanded from (seed, dst, binder)."""
        return cls(seed, dst, binder).next_vec(field, length)
