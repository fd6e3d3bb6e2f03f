"""Secure (leader/helper) task files, HPKE and tokens.

A secure task is a public part every party may read (task id, statistic and its
parameters, minimum batch size, the leader's and helper's URLs, the HPKE public keys of
the leader, the helper and the collector (analyst), the clients' upload token) and one
secret file per role:

* leader: its HPKE private key, the verify key it shares with the helper, the
  server-to-server token, the collect token;
* helper: its HPKE private key, the verify key, the server-to-server token;
* collector (analyst): the collect token and its HPKE private key (the servers encrypt
  their partials to it).

HPKE (RFC 9180; DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, from
``cryptography``) binds each ciphertext to its purpose through the ``info`` string:
role, task id and report id (or batch id), so a share cannot be replayed under another
report, task or server.

>>> pub, secrets = new_secure_task("ecdf", epsilon=1.0, bounds=(0, 1), grid=8, min_batch=10)
>>> sorted(secrets), pub["model"]
(['collector', 'helper', 'leader'], 'secure')
>>> ct = seal(pub["hpke"]["helper"], b"seed" * 4, hpke_info("helper", pub["task_id"], bytes(16)))
>>> open_sealed(secrets["helper"]["hpke_private"], ct, hpke_info("helper", pub["task_id"], bytes(16)))
b'seedseedseedseed'
"""

from __future__ import annotations

import hmac
import json
import os
import secrets as _secrets
from pathlib import Path
from typing import Any

from privstats.secure.leader_helper import SecureSpec

__all__ = ["new_secure_task", "write_secure_task", "load_secure_task", "load_secret", "seal", "open_sealed",
           "hpke_info", "tokens_equal", "spec_of"]

DEFAULT_LEADER = "http://127.0.0.1:8701"
DEFAULT_HELPER = "http://127.0.0.1:8702"


def _suite():
    from cryptography.hazmat.primitives import hpke

    return hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_128_GCM)


def _keypair() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    sk = X25519PrivateKey.generate()
    raw_sk = sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                              serialization.NoEncryption())
    raw_pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw_pk.hex(), raw_sk.hex()


_PK_CACHE: dict[str, Any] = {}
_SK_CACHE: dict[str, Any] = {}


def _public(pk_hex: str):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    if pk_hex not in _PK_CACHE:
        _PK_CACHE[pk_hex] = X25519PublicKey.from_public_bytes(bytes.fromhex(pk_hex))
    return _PK_CACHE[pk_hex]


def _private(sk_hex: str):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    if sk_hex not in _SK_CACHE:
        _SK_CACHE[sk_hex] = X25519PrivateKey.from_private_bytes(bytes.fromhex(sk_hex))
    return _SK_CACHE[sk_hex]


def hpke_info(role: str, task_id: str, item: bytes) -> bytes:
    """The HPKE context string: purpose, recipient role, task id and report (or batch) id."""
    return b"privstats/secure/v1|" + role.encode() + b"|" + task_id.encode() + b"|" + bytes(item)


def seal(pk_hex: str, plaintext: bytes, info: bytes) -> bytes:
    """HPKE base-mode single-shot encryption to ``pk_hex`` (enc ‖ ciphertext)."""
    return _suite().encrypt(plaintext, _public(pk_hex), info=info)


def open_sealed(sk_hex: str, ciphertext: bytes, info: bytes) -> bytes:
    """HPKE decryption; raises ValueError if the ciphertext or its context is wrong."""
    try:
        return _suite().decrypt(ciphertext, _private(sk_hex), info=info)
    except Exception as exc:          # InvalidTag, bad encapsulation, …
        raise ValueError("HPKE decryption failed (wrong key, context or a corrupted ciphertext)") from exc


def tokens_equal(given: str | None, expected: str) -> bool:
    """Constant-time token comparison."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def new_secure_task(statistic: str, *, epsilon: float, bounds, grid: int = 1024, method: str = "auto",
                    neighbours: str = "replace", min_batch: int = 100, leader_url: str = DEFAULT_LEADER,
                    helper_url: str = DEFAULT_HELPER, smoothing: str | None = None) -> tuple[dict, dict]:
    """A fresh secure task: ``(public, {"leader": …, "helper": …, "collector": …})``."""
    spec = SecureSpec(statistic, epsilon=epsilon, bounds=tuple(bounds), grid=grid, method=method,
                      neighbours=neighbours, smoothing=smoothing)
    if not isinstance(min_batch, int) or min_batch < 1:
        raise ValueError(f"min_batch must be a positive integer, got {min_batch!r}")
    task_id = _secrets.token_hex(16)
    keys = {role: _keypair() for role in ("leader", "helper", "collector")}
    verify_key = os.urandom(32).hex()
    agg_token = _secrets.token_urlsafe(32)
    collect_token = _secrets.token_urlsafe(32)
    public = {"task_id": task_id, "model": "secure", "statistic": statistic, "spec": spec.to_dict(),
              "epsilon": spec.epsilon, "min_batch": int(min_batch), "leader_url": leader_url,
              "helper_url": helper_url, "hpke": {r: keys[r][0] for r in keys},
              "upload_token": _secrets.token_urlsafe(32),
              "soundness_error": spec.soundness_error}
    secret = {
        "leader": {"role": "leader", "task_id": task_id, "hpke_private": keys["leader"][1],
                   "verify_key": verify_key, "aggregator_token": agg_token, "collect_token": collect_token},
        "helper": {"role": "helper", "task_id": task_id, "hpke_private": keys["helper"][1],
                   "verify_key": verify_key, "aggregator_token": agg_token},
        "collector": {"role": "collector", "task_id": task_id, "hpke_private": keys["collector"][1],
                      "collect_token": collect_token},
    }
    return public, secret


def write_secure_task(path, public: dict, secret: dict) -> dict[str, Path]:
    """Write ``path`` (public) and ``<stem>.<role>.secret.json`` (mode 0600) next to it."""
    p = Path(path)
    p.write_text(json.dumps(public, indent=2))
    out = {"task": p}
    for role, body in secret.items():
        sp = p.with_name(f"{p.stem}.{role}.secret.json")
        fd = os.open(sp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(body, indent=2))
        out[role] = sp
    return out


def load_secure_task(task) -> dict:
    """The public part, from a dict or a JSON file path; checks it is a secure task."""
    data = task if isinstance(task, dict) else json.loads(Path(task).read_text())
    if data.get("model") != "secure":
        raise ValueError("task: not a secure (leader/helper) task")
    for key in ("task_id", "spec", "min_batch", "leader_url", "helper_url", "hpke"):
        if key not in data:
            raise ValueError(f"task: missing field {key!r}")
    return data


def load_secret(task_path, role: str, secret=None) -> dict:
    """A role's secrets: ``secret`` (dict or path) or ``<stem>.<role>.secret.json`` next to the task."""
    if isinstance(secret, dict):
        data = secret
    else:
        sp = Path(secret) if secret is not None else Path(task_path).with_name(
            f"{Path(task_path).stem}.{role}.secret.json")
        data = json.loads(sp.read_text())
    if data.get("role") != role:
        raise ValueError(f"secret file is for role {data.get('role')!r}, not {role!r}")
    return data


def spec_of(task: dict) -> SecureSpec:
    return SecureSpec.from_dict(task["spec"])
