"""Ping-pong preparation of VDAF-08 (section 5.8) for two aggregators and 1-round Prio3, in batches.

DAP-09 carries these messages in aggregation jobs: the leader sends ``initialize(prep_share)``, the
helper answers ``finish(prep_msg)`` (and already holds its output share), and the leader finishes with
the prep message. A rejected report comes back as the :class:`VdafError` that rejected it.

Example:
    >>> from privstats.secure.vdaf import Prio3Histogram
    >>> vdaf = Prio3Histogram(4, 2)
    >>> key, nonce = bytes(16), bytes(16)
    >>> public, shares = vdaf.shard_encoded(1, nonce, bytes(vdaf.RAND_SIZE))
    >>> [(state, ping)] = leader_init_batch(vdaf, key, [nonce], [public], [shares[0]])
    >>> [(helper_out, pong)] = helper_init_batch(vdaf, key, [nonce], [public], [shares[1]], [ping])
    >>> leader_out = leader_continued(vdaf, state, pong)
    >>> vdaf.unshard(None, [vdaf.aggregate(None, [leader_out]), vdaf.aggregate(None, [helper_out])], 1)
    [0, 1, 0, 0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from privstats.secure.vdaf.errors import VdafError

if TYPE_CHECKING:
    from privstats.secure.vdaf.prio3 import Prio3

__all__ = [
    "CONTINUE",
    "FINISH",
    "INITIALIZE",
    "decode_message",
    "encode_message",
    "helper_init_batch",
    "leader_continued",
    "leader_init_batch",
]

INITIALIZE, CONTINUE, FINISH = 0, 1, 2


def _opaque32(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def encode_message(kind: int, prep_share: bytes | None = None, prep_msg: bytes | None = None) -> bytes:
    """TLS encoding of a ping-pong Message (type byte, then opaque<0..2^32-1> fields)."""
    if kind == INITIALIZE and prep_share is not None:
        return bytes([kind]) + _opaque32(prep_share)
    if kind == CONTINUE and prep_share is not None and prep_msg is not None:
        return bytes([kind]) + _opaque32(prep_msg) + _opaque32(prep_share)
    if kind == FINISH and prep_msg is not None:
        return bytes([kind]) + _opaque32(prep_msg)
    raise ValueError(f"kind={kind} needs {'prep_share' if kind == INITIALIZE else 'prep_msg'}")


def decode_message(data: bytes) -> tuple[int, dict[str, bytes]]:
    """(type, fields) of an encoded Message; VdafError if malformed."""
    if not data or data[0] not in (INITIALIZE, CONTINUE, FINISH):
        raise VdafError("ping-pong message has an unknown type")
    names = {INITIALIZE: ("prep_share",), CONTINUE: ("prep_msg", "prep_share"), FINISH: ("prep_msg",)}[
        data[0]
    ]
    fields, pos = {}, 1
    for name in names:
        if pos + 4 > len(data):
            raise VdafError("ping-pong message is truncated")
        n = int.from_bytes(data[pos : pos + 4], "big")
        if pos + 4 + n > len(data):
            raise VdafError("ping-pong message is truncated")
        fields[name] = data[pos + 4 : pos + 4 + n]
        pos += 4 + n
    if pos != len(data):
        raise VdafError("ping-pong message has trailing bytes")
    return data[0], fields


def leader_init_batch(
    vdaf: Prio3, verify_key: bytes, nonces: list[bytes], public_shares: list[bytes], input_shares: list[bytes]
) -> list[tuple[Any, bytes | None]]:
    """Leader's first step per report: (prep_state, initialize message) or (VdafError, None)."""
    out: list[tuple[Any, bytes | None]] = []
    for res in vdaf.prep_init_batch(verify_key, 0, None, nonces, public_shares, input_shares):
        if isinstance(res, VdafError):
            out.append((res, None))
        else:
            out.append((res[0], encode_message(INITIALIZE, prep_share=res[1])))
    return out


def helper_init_batch(
    vdaf: Prio3,
    verify_key: bytes,
    nonces: list[bytes],
    public_shares: list[bytes],
    input_shares: list[bytes],
    inbound: list[bytes],
) -> list[tuple[Any, bytes | None]]:
    """Helper's step per report: (output share, finish message) or (VdafError, None)."""
    if len(inbound) != len(nonces):
        raise ValueError("inbound must have one message per report")
    preps = vdaf.prep_init_batch(verify_key, 1, None, nonces, public_shares, input_shares)
    results: list[tuple[Any, bytes | None]] = [(None, None)] * len(nonces)
    pairs, idx = [], []
    for i, (prep, msg) in enumerate(zip(preps, inbound, strict=True)):
        if isinstance(prep, VdafError):
            results[i] = (prep, None)
            continue
        try:
            kind, fields = decode_message(msg)
            if kind != INITIALIZE:
                raise VdafError("expected an initialize message")
        except VdafError as exc:
            results[i] = (exc, None)
            continue
        pairs.append([fields["prep_share"], prep[1]])
        idx.append(i)
    for i, prep_msg in zip(idx, vdaf.prep_shares_to_prep_batch(None, pairs), strict=True):
        if isinstance(prep_msg, VdafError):
            results[i] = (prep_msg, None)
            continue
        try:
            out_share = vdaf.prep_next(preps[i][0], prep_msg)
        except VdafError as exc:
            results[i] = (exc, None)
            continue
        results[i] = (out_share, encode_message(FINISH, prep_msg=vdaf.encode_prep_msg(prep_msg)))
    return results


def leader_continued(vdaf: Prio3, prep_state: Any, inbound: bytes) -> Any:
    """Leader's last step: the output share from the helper's finish message (VdafError if rejected)."""
    kind, fields = decode_message(inbound)
    if kind != FINISH:
        raise VdafError("expected a finish message for a 1-round VDAF")
    return vdaf.prep_next(prep_state, vdaf.decode_prep_msg(prep_state, fields["prep_msg"]))
