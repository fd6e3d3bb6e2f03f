"""DAP-09 message encodings and HPKE with associated data."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("cryptography")

from privstats.services.dap import codec as c
from privstats.services.dap.hpke import HPKEOpenError, generate_config, open_, seal


def _ct(i: int = 1) -> c.HpkeCiphertext:
    return c.HpkeCiphertext(i, os.urandom(32), os.urandom(50))


def test_round_trips():
    md = c.ReportMetadata(os.urandom(16), 1_700_000_000)
    rep = c.Report(md, os.urandom(33), _ct(), _ct(2))
    assert c.Report.decode(rep.encode()) == rep
    init = c.PrepareInit(c.ReportShare(md, b"pub", _ct()), c.PingPong(0, prep_share=b"ps").encode())
    req = c.AggregationJobInitReq(b"", (init, init))
    assert c.AggregationJobInitReq.decode(req.encode()) == req
    # the leader builds its request from encoded PrepareInits (its stored bytes)
    assert c.encode_job_init_req([init.encode(), init.encode()]) == req.encode()
    resp = c.AggregationJobResp(
        (
            c.PrepareResp(
                md.report_id, c.PrepareResp.CONTINUE, payload=c.PingPong(2, prep_msg=b"m").encode()
            ),
            c.PrepareResp(md.report_id, c.PrepareResp.REJECT, error=c.PrepareError.REPORT_REPLAYED),
            c.PrepareResp(md.report_id, c.PrepareResp.FINISHED),
        )
    )
    assert c.AggregationJobResp.decode(resp.encode()) == resp
    iv = c.Interval(3600, 7200)
    assert c.CollectionReq.decode(c.CollectionReq(iv).encode()) == c.CollectionReq(iv)
    col = c.Collection(17, iv, _ct(), _ct())
    assert c.Collection.decode(col.encode()) == col
    asr = c.AggregateShareReq(iv, b"", 5, os.urandom(32))
    assert c.AggregateShareReq.decode(asr.encode()) == asr
    for kind, msg in (
        (0, c.PingPong(0, prep_share=b"a")),
        (1, c.PingPong(1, b"m", b"s")),
        (2, c.PingPong(2, b"m")),
    ):
        assert c.PingPong.decode(msg.encode()) == msg and msg.encode()[0] == kind
    cfgs = [generate_config(3)[1], generate_config(4)[1]]
    assert c.decode_hpke_config_list(c.encode_hpke_config_list(cfgs)) == cfgs


def test_report_layout_matches_dap09():
    """ReportMetadata is id[16] || uint64 time; opaque<0..2^32-1> has a 4-byte length."""
    md = c.ReportMetadata(bytes(range(16)), 0x0102030405)
    rep = c.Report(md, b"xy", c.HpkeCiphertext(7, b"E", b"P"), c.HpkeCiphertext(8, b"F", b"Q"))
    want = bytes(range(16)) + (0x0102030405).to_bytes(8, "big") + b"\0\0\0\2xy"
    want += b"\x07\0\x01E\0\0\0\x01P" + b"\x08\0\x01F\0\0\0\x01Q"
    assert rep.encode() == want


@pytest.mark.parametrize(
    "cls, data",
    [
        (c.Report, b""),
        (c.Report, b"\0" * 23),
        (c.Interval, b"\0" * 17),  # trailing byte
        (c.CollectionReq, b"\x02" + b"\0" * 20),  # fixed_size query type
        (c.AggregateShareReq, b"\x01" + b"\0" * 16 + b"\0\0\0\0" + b"\0" * 8 + b"\0" * 31),
        (c.PingPong, b"\x03\0\0\0\0"),
        (c.AggregationJobInitReq, b"\0\0\0\0\x01\0\0\0\0"),  # no reports
        (c.AggregationJobResp, b"\0\0\0\x11" + b"\0" * 16 + b"\x07"),  # bad state
    ],
)
def test_decode_refuses_malformed(cls, data):
    with pytest.raises(c.DecodeError):
        cls.decode(data)


def test_sub_readers_are_bounded_by_their_length():
    """A sub-reader views its parent's bytes without copying, but never reads past its own end."""
    r = c.Reader(c.opaque32(b"ab") + b"cd")
    sub = r.sub32()
    assert sub.take(2) == b"ab" and sub.done
    with pytest.raises(c.DecodeError):
        sub.take(1)
    assert r.take(2) == b"cd"
    r.end()


def test_hpke_binds_info_and_aad():
    sk, cfg = generate_config(1)
    ct = seal(cfg, b"info", b"aad", b"secret")
    assert open_(sk, cfg, ct, b"info", b"aad") == b"secret"
    with pytest.raises(HPKEOpenError):
        open_(sk, cfg, ct, b"info", b"aaD")
    with pytest.raises(HPKEOpenError):
        open_(sk, cfg, ct, b"inf0", b"aad")
    bad = c.HpkeCiphertext(ct.config_id, ct.enc, ct.payload[:-1] + bytes([ct.payload[-1] ^ 1]))
    with pytest.raises(HPKEOpenError):
        open_(sk, cfg, bad, b"info", b"aad")
    other_sk, _ = generate_config(1)
    with pytest.raises(HPKEOpenError):
        open_(other_sk, cfg, ct, b"info", b"aad")


def test_hpke_interoperates_with_cryptography():
    """With empty aad the RFC 9180 key schedule here and cryptography's HPKE open each other's output."""
    hpke = pytest.importorskip("cryptography.hazmat.primitives.hpke")
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

    suite = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_128_GCM)
    sk, cfg = generate_config(1)
    ct = seal(cfg, b"i", b"", b"ours")
    assert suite.decrypt(ct.enc + ct.payload, X25519PrivateKey.from_private_bytes(sk), info=b"i") == b"ours"
    theirs = bytes(suite.encrypt(b"theirs", X25519PublicKey.from_public_bytes(cfg.public_key), info=b"j"))
    assert open_(sk, cfg, c.HpkeCiphertext(1, theirs[:32], theirs[32:]), b"j", b"") == b"theirs"


def test_hpke_fast_key_schedule_matches_rfc9180_steps():
    """The per-message path (five HMACs, labels prebuilt) gives the key and nonce of RFC 9180's
    steps written out (LabeledExtract / LabeledExpand of the shared secret, then the key schedule)."""
    from privstats.services.dap import hpke

    rng = __import__("random").Random(9)
    for n in range(20):
        dh, enc, pk = (rng.randbytes(32) for _ in range(3))
        info = rng.randbytes(n)
        want = hpke._key_schedule(hpke._shared_secret(dh, enc, pk), info)
        assert hpke._aead_key_nonce(dh, enc, pk, info) == want


def test_unsupported_suite_is_refused():
    _, cfg = generate_config(1)
    with pytest.raises(ValueError, match="config"):
        seal(c.HpkeConfig(1, 0x0010, 1, 1, cfg.public_key), b"", b"", b"x")
