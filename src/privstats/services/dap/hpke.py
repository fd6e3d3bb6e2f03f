"""HPKE base mode (RFC 9180) with associated data, as DAP-09 uses it.

DAP binds a ciphertext to its task, report metadata and public share through the HPKE *aad*;
``cryptography``'s single-shot HPKE API takes no aad, so this module runs the RFC 9180 key schedule
itself on ``cryptography``'s primitives (X25519, HMAC-SHA256, AES-128-GCM): DHKEM(X25519,
HKDF-SHA256) = 0x0020, HKDF-SHA256 = 0x0001, AES-128-GCM = 0x0001 — the suite every DAP client
(``@divviup/dap`` included) supports.  With empty aad the output opens under ``cryptography``'s own
HPKE (a test checks both directions).

>>> sk, config = generate_config(7)
>>> ct = seal(config, b"info", b"aad", b"hello")
>>> open_(sk, config, ct, b"info", b"aad")
b'hello'
>>> ct.config_id
7
"""

from __future__ import annotations

import functools
import hmac
import struct
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privstats.services.dap.codec import HpkeCiphertext, HpkeConfig

__all__ = ["AEAD_AES128GCM", "KDF_SHA256", "KEM_X25519", "HPKEOpenError", "generate_config", "open_", "seal"]

KEM_X25519, KDF_SHA256, AEAD_AES128GCM = 0x0020, 0x0001, 0x0001
_KEM_SUITE = b"KEM" + struct.pack(">H", KEM_X25519)
_HPKE_SUITE = b"HPKE" + struct.pack(">HHH", KEM_X25519, KDF_SHA256, AEAD_AES128GCM)
_SUITE_IDS = (KEM_X25519, KDF_SHA256, AEAD_AES128GCM)


class HPKEOpenError(ValueError):
    """A ciphertext that does not open (wrong key, config, info or aad; tampered; truncated)."""


def _extract(salt: bytes, ikm: bytes) -> bytes:
    return hmac.digest(salt, ikm, "sha256")


def _expand(prk: bytes, info: bytes, length: int) -> bytes:
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.digest(prk, block + info + bytes([i]), "sha256")
        out += block
        i += 1
    return out[:length]


def _labeled_extract(suite: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return _extract(salt, b"HPKE-v1" + suite + label + ikm)


def _labeled_expand(suite: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    return _expand(prk, struct.pack(">H", length) + b"HPKE-v1" + suite + label + info, length)


def _shared_secret(dh: bytes, enc: bytes, pk_r: bytes) -> bytes:
    prk = _labeled_extract(_KEM_SUITE, b"", b"eae_prk", dh)
    return _labeled_expand(_KEM_SUITE, prk, b"shared_secret", enc + pk_r, 32)


@functools.lru_cache(maxsize=64)
def _context(info: bytes) -> bytes:
    """The base-mode key schedule context of ``info`` (the same for every message with that info)."""
    psk_id_hash = _labeled_extract(_HPKE_SUITE, b"", b"psk_id_hash", b"")
    info_hash = _labeled_extract(_HPKE_SUITE, b"", b"info_hash", info)
    return b"\x00" + psk_id_hash + info_hash


def _key_schedule(shared_secret: bytes, info: bytes) -> tuple[bytes, bytes]:
    context = _context(bytes(info))
    secret = _labeled_extract(_HPKE_SUITE, shared_secret, b"secret", b"")
    key = _labeled_expand(_HPKE_SUITE, secret, b"key", context, 16)
    nonce = _labeled_expand(_HPKE_SUITE, secret, b"base_nonce", context, 12)
    return key, nonce


_EAE_PRK = b"HPKE-v1" + _KEM_SUITE + b"eae_prk"
_SHARED = struct.pack(">H", 32) + b"HPKE-v1" + _KEM_SUITE + b"shared_secret"
_SECRET = b"HPKE-v1" + _HPKE_SUITE + b"secret"


@functools.lru_cache(maxsize=64)
def _expand_infos(info: bytes) -> tuple[bytes, bytes]:
    """The (single-block) HKDF-Expand inputs of the AEAD key and base nonce for ``info``."""
    context = _context(info)
    key = struct.pack(">H", 16) + b"HPKE-v1" + _HPKE_SUITE + b"key" + context + b"\x01"
    nonce = struct.pack(">H", 12) + b"HPKE-v1" + _HPKE_SUITE + b"base_nonce" + context + b"\x01"
    return key, nonce


def _aead_key_nonce(dh: bytes, enc: bytes, pk_r: bytes, info: bytes) -> tuple[bytes, bytes]:
    """:func:`_shared_secret` then :func:`_key_schedule` in five HMACs, the labels prebuilt (every
    expansion here is one SHA-256 block): the per-message path of :func:`open_` and :func:`seal`."""
    prk = hmac.digest(b"", _EAE_PRK + dh, "sha256")
    shared = hmac.digest(prk, _SHARED + enc + pk_r + b"\x01", "sha256")
    secret = hmac.digest(shared, _SECRET, "sha256")
    key_info, nonce_info = _expand_infos(info)
    return hmac.digest(secret, key_info, "sha256")[:16], hmac.digest(secret, nonce_info, "sha256")[:12]


def _check_suite(config: HpkeConfig) -> None:
    if (config.kem_id, config.kdf_id, config.aead_id) != (KEM_X25519, KDF_SHA256, AEAD_AES128GCM):
        raise ValueError(
            "config: only DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-128-GCM is supported, got "
            f"({config.kem_id:#06x}, {config.kdf_id:#06x}, {config.aead_id:#06x})"
        )


def generate_config(config_id: int) -> tuple[bytes, HpkeConfig]:
    """A fresh X25519 key pair from the OS CSPRNG: ``(raw private key, HpkeConfig)``."""
    from privstats.services.security import generate_keypair

    if not 0 <= int(config_id) <= 255:
        raise ValueError(f"config_id must be in [0, 255], got {config_id}")
    sk, pk = generate_keypair()
    return sk, HpkeConfig(int(config_id), KEM_X25519, KDF_SHA256, AEAD_AES128GCM, pk)


def seal(config: HpkeConfig, info: bytes, aad: bytes, plaintext: bytes) -> HpkeCiphertext:
    """SealBase to ``config``'s public key (fresh ephemeral key from the OS CSPRNG)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    _check_suite(config)
    esk = X25519PrivateKey.generate()
    enc = esk.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    dh = esk.exchange(X25519PublicKey.from_public_bytes(config.public_key))
    key, nonce = _aead_key_nonce(dh, enc, config.public_key, bytes(info))
    return HpkeCiphertext(config.id, enc, AESGCM(key).encrypt(nonce, bytes(plaintext), bytes(aad)))


def open_(private_key: Any, config: HpkeConfig, ct: HpkeCiphertext, info: bytes, aad: bytes) -> bytes:
    """OpenBase; :class:`HPKEOpenError` if it does not open (the caller checks ``config_id`` first).

    ``private_key``: raw 32 bytes or an ``X25519PrivateKey`` (parse once, open many).
    """
    if (config.kem_id, config.kdf_id, config.aead_id) != _SUITE_IDS:
        _check_suite(config)
    try:
        sk = (
            X25519PrivateKey.from_private_bytes(private_key)
            if isinstance(private_key, (bytes, bytearray))
            else private_key
        )
        dh = sk.exchange(X25519PublicKey.from_public_bytes(ct.enc))
        key, nonce = _aead_key_nonce(dh, ct.enc, config.public_key, bytes(info))
        return AESGCM(key).decrypt(nonce, ct.payload, bytes(aad))
    except (InvalidTag, ValueError) as exc:
        raise HPKEOpenError(f"ciphertext does not open: {type(exc).__name__}") from None
