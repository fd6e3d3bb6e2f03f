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

__all__ = ["SEED_SIZE", "VERSION", "XofTurboShake128", "format_dst", "squeeze"]

SEED_SIZE = 16
VERSION = 8


def format_dst(algo_class: int, algo: int, usage: int) -> bytes:
    """Domain separation tag: version, class, algorithm id (4 bytes BE) and usage (2 bytes BE)."""
    return bytes([VERSION, algo_class]) + algo.to_bytes(4, "big") + usage.to_bytes(2, "big")


_TURBOSHAKE: Any = None
_ONESHOT: Any = None


def _turboshake() -> Any:
    global _TURBOSHAKE, _ONESHOT
    if _TURBOSHAKE is None:
        try:
            from Crypto.Hash import TurboSHAKE128
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("VDAF needs pycryptodome>=3.20 (pip install 'privstats[serve]')") from exc
        _ONESHOT = _oneshot_or_none()
        _TURBOSHAKE = TurboSHAKE128
    return _TURBOSHAKE


def _oneshot_or_none() -> Any:
    """TurboSHAKE128(message, D=1) -> ``length`` bytes in one call into pycryptodome's C Keccak.

    Its Python wrapper costs ~15 us per hash object (state allocation, buffer wrapping), three times
    the hashing of a short message, and Prio3 hashes several short messages per report.  The raw
    ``keccak_oneshot`` (cffi backend) skips all of it; None (use the wrapper) if it is unavailable
    or disagrees with the wrapper on a known answer.
    """
    try:
        from Crypto.Hash import TurboSHAKE128
        from Crypto.Hash.keccak import _raw_keccak_lib as lib
        from Crypto.Util import _raw_api

        if _raw_api.backend != "cffi" or not hasattr(lib, "keccak_oneshot"):
            return None
        ffi = _raw_api.ffi

        def oneshot(message: bytes, length: int) -> bytes:
            out = bytearray(length)
            # capacity 32 bytes (TurboSHAKE128), 12 rounds, domain byte 1 (VDAF-08's XOF)
            if lib.keccak_oneshot(message, len(message), ffi.from_buffer(out), length, 32, 12, 1):
                raise ValueError("TurboSHAKE128 failed")
            return bytes(out)

        probe = bytes(range(200))
        if oneshot(probe, 300) != TurboSHAKE128.new(domain=1, data=probe).read(300):
            return None  # pragma: no cover - a pycryptodome whose internals changed
        return oneshot
    except Exception:  # pragma: no cover - depends on the installed pycryptodome
        return None


def squeeze(message: bytes, length: int) -> bytes:
    """TurboSHAKE128(message, D=1) truncated to ``length`` bytes, i.e. the first ``length`` bytes of
    ``XofTurboShake128(seed, dst, binder)`` for ``message = len(dst) || dst || seed || binder``
    (for callers that build many messages of one shape; no checks on the seed's length).

    Example:
        >>> dst = format_dst(0, 3, 1)
        >>> squeeze(bytes([len(dst)]) + dst + bytes(16), 8) == XofTurboShake128(bytes(16), dst, b"").next(8)
        True
    """
    _turboshake()
    if _ONESHOT is not None:
        return _ONESHOT(message, length)
    return bytes(_TURBOSHAKE.new(domain=1, data=message).read(length))


class XofTurboShake128:
    """Stream of TurboSHAKE128(len(dst) || dst || seed || binder, D=1).

    The output is squeezed in one call into a buffer (grown by squeezing again from the start when
    a reader wants more: an XOF's shorter outputs are prefixes of its longer ones)."""

    SEED_SIZE = SEED_SIZE

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) != SEED_SIZE:
            raise ValueError(f"seed must be {SEED_SIZE} bytes, got {len(seed)}")
        if len(dst) > 255:
            raise ValueError("dst must be at most 255 bytes")
        _turboshake()
        self._msg = b"".join((bytes([len(dst)]), dst, seed, binder))
        self._buf, self._pos = b"", 0

    def next(self, length: int) -> bytes:
        """The next ``length`` output bytes."""
        end = self._pos + length
        if end > len(self._buf):
            want = max(end, 2 * len(self._buf))
            if _ONESHOT is not None:
                self._buf = _ONESHOT(self._msg, want)
            else:
                self._buf = bytes(_TURBOSHAKE.new(domain=1, data=self._msg).read(want))
        out, self._pos = self._buf[self._pos : end], end
        return out

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
