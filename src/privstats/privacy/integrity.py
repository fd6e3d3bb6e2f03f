"""Keyed integrity (HMAC-SHA256) for every file privstats saves: ledgers, aggregator states, report
files and task files.

A saved file carries a MAC keyed by its owner's secret key; loading verifies it by default, and
an edit, a removed MAC, a file signed with another key, or (for report files) a duplicated file is
refused with :class:`IntegrityError` (a ``ValueError``).  ``verify=False`` skips the check: it
exists for forensics (reading a damaged or foreign file), never for production loading.

Key: passed explicitly (``key=``, 16 or more bytes), else the owner's default key — 32 random
bytes (OS CSPRNG) in ``integrity.key`` under the user's config directory
(``$PRIVSTATS_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/privstats``, else ``~/.config/privstats``),
created on first use with mode 0600.  A task's key lives in the owner's secrets files
(:mod:`privstats.services.tasks`).  Anyone holding the key can sign, so it must stay with the
owner; a MAC does not stop the owner's own rollback to an older signed copy.

>>> key = new_key()
>>> tag = mac(key, "example", b"payload")
>>> check_mac(key, "example", b"payload", tag, "example.bin")
>>> check_mac(key, "example", b"edited", tag, "example.bin")
Traceback (most recent call last):
privstats.privacy.integrity.IntegrityError: example.bin: the MAC does not verify ...
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import struct
from pathlib import Path
from typing import Any

__all__ = [
    "IntegrityError",
    "canonical_json",
    "check_mac",
    "config_dir",
    "default_key",
    "load_state",
    "mac",
    "new_key",
    "resolve_key",
    "save_state",
]

KEY_FILE = "integrity.key"
_STATE_MAGIC = b"PSSM"  # privstats signed state
_STATE_VERSION = 1


class IntegrityError(ValueError):
    """A saved file whose MAC is missing or does not verify (edited, signed with another key, duplicated)."""


def new_key() -> bytes:
    """A fresh 32-byte key from the OS CSPRNG."""
    return secrets.token_bytes(32)


def config_dir() -> Path:
    """The user's privstats config directory (``$PRIVSTATS_CONFIG_DIR``, ``$XDG_CONFIG_HOME/privstats``,
    or ``~/.config/privstats``)."""
    env = os.environ.get("PRIVSTATS_CONFIG_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "privstats"


def default_key() -> bytes:
    """The owner's default key, created (0600, atomically) on first use.

    Refuses (IntegrityError) a key file that others can read or write, or that is not 32 hex bytes.
    """
    d = config_dir()
    path = d / KEY_FILE
    if not path.exists():
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = d / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(new_key().hex() + "\n")
        try:
            os.link(tmp, path)  # atomic and never overwrites: concurrent first uses agree on one key
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    if path.stat().st_mode & 0o077:
        raise IntegrityError(f"{path}: the integrity key file must be private (chmod 600)")
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (ValueError, UnicodeDecodeError):
        key = b""
    if len(key) < 16:
        raise IntegrityError(f"{path}: not a privstats integrity key (hex, 32 bytes)")
    return key


def resolve_key(key: Any, what: str = "key") -> bytes:
    """``key`` as bytes (>= 16; hex strings accepted), or the default key when None."""
    if key is None:
        return default_key()
    if isinstance(key, str):
        try:
            key = bytes.fromhex(key)
        except ValueError:
            raise ValueError(f"{what} must be bytes or a hex string") from None
    if not isinstance(key, (bytes, bytearray)) or len(key) < 16:
        raise ValueError(f"{what} must be bytes of length >= 16 (e.g. privstats.privacy.integrity.new_key())")
    return bytes(key)


def canonical_json(obj: Any) -> bytes:
    """The canonical JSON bytes a MAC covers (sorted keys, no spaces, no NaN)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def mac(key: bytes, domain: str, data: bytes) -> str:
    """HMAC-SHA256 (hex) of ``data`` under ``key``, separated by ``domain`` (what kind of file)."""
    return hmac.new(key, b"privstats-" + domain.encode() + b"-v1\n" + data, hashlib.sha256).hexdigest()


def check_mac(key: bytes, domain: str, data: bytes, tag: Any, where: str) -> None:
    """Raise :class:`IntegrityError` naming ``where`` unless ``tag`` is the MAC of ``data``."""
    if not isinstance(tag, str) or not tag:
        raise IntegrityError(
            f"{where}: carries no MAC (removed, or written unsigned); refusing to load it "
            "(verify=False reads it for forensics only)"
        )
    if not hmac.compare_digest(tag, mac(key, domain, data)):
        raise IntegrityError(
            f"{where}: the MAC does not verify with this key: the file was edited or signed with "
            "another key; refusing to load it"
        )


# ---------------------------------------------------------------------------------- aggregator states
def save_state(state: Any, path: str | os.PathLike[str] | None = None, *, key: Any = None) -> bytes:
    """An aggregator state (``to_bytes()``) signed: ``magic | version | MAC (32 bytes) | state bytes``.

    Writes it to ``path`` (atomically) when given; returns the signed bytes.

    >>> from privstats.local import GRR
    >>> o = GRR(4, epsilon=1.0)
    >>> k = new_key()
    >>> st = o.aggregate(o.encode_batch([0, 1, 1], rng=0))
    >>> load_state(save_state(st, key=k), key=k) == st
    True
    """
    body: bytes = state.to_bytes()
    k = resolve_key(key)
    blob = _STATE_MAGIC + struct.pack("<H", _STATE_VERSION) + bytes.fromhex(mac(k, "state", body)) + body
    if path is not None:
        p = Path(path)
        tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, p)
    return blob


def load_state(data: bytes | str | os.PathLike[str], *, key: Any = None, verify: bool = True) -> Any:
    """The state saved by :func:`save_state` (bytes or a path), its MAC checked first.

    Also checks what a state must satisfy whatever its key: non-negative counts, and for protocols
    with one count per report (k-RR, binary RR) counts summing to ``n``.
    """
    from privstats.local.base import CountState

    where = "state"
    if not isinstance(data, (bytes, bytearray)):
        where = str(data)
        data = Path(data).read_bytes()
    data = bytes(data)
    if data[:4] != _STATE_MAGIC or len(data) < 38:
        if verify:
            raise IntegrityError(f"{where}: not a signed privstats state (no MAC); refusing to load it")
        return CountState.from_bytes(data)
    (version,) = struct.unpack("<H", data[4:6])
    if version != _STATE_VERSION:
        raise ValueError(f"{where}: unsupported signed-state version {version}")
    tag, body = data[6:38].hex(), data[38:]
    if verify:
        check_mac(resolve_key(key), "state", body, tag, where)
    state = CountState.from_bytes(body)
    if state.protocol in ("grr", "binary-rr") and int(state.counts.sum()) != state.n:
        raise IntegrityError(f"{where}: the counts do not sum to n (an edited state)")
    return state
