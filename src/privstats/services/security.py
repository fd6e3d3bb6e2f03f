"""Bearer tokens and HPKE for the services.

Tokens: servers keep only ``sha256(token)`` and compare digests with :func:`hmac.compare_digest`
(constant time).  :func:`check_bearer` maps an ``Authorization`` header to 401 (missing or not a
bearer token) or 403 (wrong token).

HPKE (RFC 9180, base mode) from ``cryptography``'s maintained implementation: DHKEM(X25519,
HKDF-SHA256), HKDF-SHA256, AES-128-GCM.  The ciphertext is ``enc (32 bytes) || AEAD ciphertext``.
What a ciphertext is bound to goes in the HPKE ``info`` string (it enters the key schedule, so a
ciphertext opened with any other info fails authentication), built by :func:`hpke_info`::

    b"privstats/v1 " + purpose + b" " + task id (16 bytes) [+ report id (16 bytes)]

DAP binds the task id and report id as associated data; ``cryptography``'s single-shot API takes
``info`` only, which binds them just as firmly.  The shuffle model binds the task id only (the
analyzer must not learn report ids, which would link a user's messages).  The secure model speaks
DAP-09, whose own HPKE binding (aad) is in :mod:`privstats.services.dap.hpke`.

>>> sk, pk = generate_keypair()
>>> info = hpke_info("shuffle", bytes(16))
>>> hpke_open(sk, hpke_seal(pk, b"hello", info), info)
b'hello'
>>> len(hpke_seal(pk, b"hello", info)) == HPKE_OVERHEAD + 5
True
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = [
    "HPKE_OVERHEAD",
    "HPKEError",
    "check_bearer",
    "generate_keypair",
    "hpke_info",
    "hpke_open",
    "hpke_open_many",
    "hpke_seal",
    "hpke_seal_many",
    "token_hash",
]

#: bytes an HPKE ciphertext adds to its plaintext: enc (32) + AES-GCM tag (16)
HPKE_OVERHEAD = 48


class HPKEError(ValueError):
    """A ciphertext that does not open (wrong key, wrong info, tampered or truncated)."""


def token_hash(token: str) -> str:
    """sha256 hex digest of a token (what a server stores).

    >>> len(token_hash("secret"))
    64
    """
    if not isinstance(token, str):
        raise TypeError(f"token must be a string, got {type(token).__name__}")
    return hashlib.sha256(token.encode()).hexdigest()


def check_bearer(authorization: str | None, expected_hash: str | None) -> int:
    """HTTP status for an ``Authorization`` header: 200 (valid), 401 (missing/not bearer), 403 (wrong).

    The comparison of digests is constant-time.  ``expected_hash=None`` (the role checks no such
    token) refuses everything with 403.

    >>> h = token_hash("t0k")
    >>> check_bearer("Bearer t0k", h), check_bearer(None, h), check_bearer("Bearer nope", h)
    (200, 401, 403)
    """
    if not authorization:
        return 401
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return 401
    presented = hashlib.sha256(value.strip().encode()).hexdigest()
    if expected_hash is None:
        hmac.compare_digest(presented, presented)
        return 403
    return 200 if hmac.compare_digest(presented, str(expected_hash)) else 403


def _suite():
    from cryptography.hazmat.primitives import hpke

    return hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_128_GCM)


def generate_keypair() -> tuple[bytes, bytes]:
    """A fresh X25519 key pair ``(private 32 bytes, public 32 bytes)`` from the OS CSPRNG."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    sk = X25519PrivateKey.generate()
    return (
        sk.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()),
        sk.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw),
    )


def hpke_info(purpose: str, task_id: bytes, report_id: bytes | None = None) -> bytes:
    """The HPKE info string binding a ciphertext to a purpose, a task and (optionally) a report."""
    if len(task_id) != 16 or (report_id is not None and len(report_id) != 16):
        raise ValueError("task_id and report_id must be 16 bytes")
    return b"privstats/v1 " + purpose.encode() + b" " + task_id + (report_id or b"")


def _public(pk: bytes):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    return X25519PublicKey.from_public_bytes(pk)


def _private(sk: bytes):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return X25519PrivateKey.from_private_bytes(sk)


def hpke_seal(public_key: bytes, plaintext: bytes, info: bytes) -> bytes:
    """Encrypt ``plaintext`` to ``public_key`` (raw X25519), bound to ``info``."""
    return bytes(_suite().encrypt(plaintext, _public(public_key), info=info))


def hpke_open(private_key: bytes, ciphertext: bytes, info: bytes) -> bytes:
    """Decrypt; :class:`HPKEError` if the ciphertext does not open under this key and info."""
    from cryptography.exceptions import InvalidTag

    try:
        return bytes(_suite().decrypt(ciphertext, _private(private_key), info=info))
    except (InvalidTag, ValueError) as exc:
        raise HPKEError(f"ciphertext does not open: {type(exc).__name__}") from None


def hpke_seal_many(public_key: bytes, plaintexts, info: bytes) -> list[bytes]:
    """:func:`hpke_seal` of each plaintext, each with its own fresh encapsulated key (unlinkable)."""
    suite, pk = _suite(), _public(public_key)
    return [bytes(suite.encrypt(bytes(p), pk, info=info)) for p in plaintexts]


def hpke_open_many(private_key: bytes, ciphertexts, info: bytes) -> tuple[list[bytes], int]:
    """Open each ciphertext; ``(plaintexts that opened, number that did not)``."""
    from cryptography.exceptions import InvalidTag

    suite, sk = _suite(), _private(private_key)
    out: list[bytes] = []
    bad = 0
    for c in ciphertexts:
        try:
            out.append(bytes(suite.decrypt(bytes(c), sk, info=info)))
        except (InvalidTag, ValueError):
            bad += 1
    return out, bad
