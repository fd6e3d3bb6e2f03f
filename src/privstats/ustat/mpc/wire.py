"""Wire format between the aggregator and a party: length-prefixed JSON header + binary blobs.

>>> unframe(frame([b"ab", b"c"]))
[b'ab', b'c']
"""

from __future__ import annotations

import json
import socket
import struct

__all__ = [
    "addr",
    "frame",
    "free_port",
    "own_share",
    "pack_share",
    "recv_msg",
    "send_msg",
    "unframe",
    "unpack_share",
]


_ISSUED: set[int] = set()


def free_port() -> int:
    """A free TCP port on 127.0.0.1 that this process has not handed out before.

    Closing the probing socket frees the port, so the kernel may offer it again to the next call; two
    servers given the same port would collide.
    """
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _ISSUED:
            _ISSUED.add(port)
            return port


def send_msg(sock: socket.socket, header: dict, blobs: list[bytes] = ()) -> None:  # type: ignore[assignment]
    h = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    sock.sendall(struct.pack("!I", len(h)) + h)
    for b in blobs:
        sock.sendall(b)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv_msg(sock: socket.socket) -> tuple[dict, list[bytes]]:
    (hl,) = struct.unpack("!I", _recv_exact(sock, 4))
    header = json.loads(_recv_exact(sock, hl))
    return header, [_recv_exact(sock, n) for n in header.pop("blobs")]


def pack_share(share) -> list[bytes]:
    return [bytes(share.meta), *[bytes(c) for c in share.share_chunks]]


def unpack_share(libspu, blobs: list[bytes]):
    s = libspu.Share()
    s.meta = blobs[0]
    s.share_chunks = list(blobs[1:])
    return s


def frame(blobs: list[bytes]) -> bytes:
    return struct.pack(f"!I{len(blobs)}Q", len(blobs), *[len(b) for b in blobs]) + b"".join(blobs)


def unframe(data: bytes) -> list[bytes]:
    (k,) = struct.unpack_from("!I", data)
    lens = struct.unpack_from(f"!{k}Q", data, 4)
    out, pos = [], 4 + 8 * k
    for n in lens:
        out.append(data[pos : pos + n])
        pos += n
    return out


def addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address must be HOST:PORT, got {text!r}")
    return host, int(port)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def _field(num: int, payload: bytes) -> bytes:  # protobuf length-delimited field
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


BOOL, INT64 = 1, 8  # SPU's DataType codes (DT_I1, DT_I64)
WORDS = 64  # int64 words in 64-bit boolean sharing (DT_I64): 64 pairs' random bits per word
_STORAGE = {INT64: b"cheetah.AShr<FM64>", BOOL: b"cheetah.BShr<FM64,1>", WORDS: b"cheetah.BShr<FM64,64>"}


def own_share(libspu, arr, kind: int):
    """This party's share of a secret FM64 input whose value is the sum (``INT64``: arithmetic sharing)
    or XOR (``BOOL``: one-bit boolean sharing; ``WORDS``: 64-bit boolean sharing of int64 words) of
    both parties' contributions: the share *is* this party's contribution, so nothing is sent.  SPU's
    ValueMetaProto / ValueChunkProto written directly (data type, secret visibility, shape, storage
    type; one chunk of little-endian 64-bit words)."""
    import numpy as np

    a = np.ascontiguousarray(arr).astype(np.uint64)
    storage = _STORAGE[kind]
    dtype = BOOL if kind == BOOL else INT64
    shape = _field(1, b"".join(_varint(d) for d in a.shape))
    meta = _varint(1 << 3) + _varint(dtype) + _varint(3 << 3) + _varint(1) + _field(4, shape)
    content = a.tobytes()
    s = libspu.Share()
    s.meta = meta + _field(5, storage)
    s.share_chunks = [_varint(1 << 3) + _varint(len(content)) + _field(3, content)]
    return s
