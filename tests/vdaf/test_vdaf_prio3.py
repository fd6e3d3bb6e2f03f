"""Prio3 behaviour beyond the official vectors: rejection of invalid or tampered reports, encodings,
argument checking, the batch and closed-form paths (byte-identical to the per-report algorithm)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privstats.secure.vdaf import (
    Prio3,
    Prio3Count,
    Prio3Histogram,
    Prio3Sum,
    Prio3SumVec,
    VdafError,
    vdaf_from_config,
    vdaf_to_config,
)
from privstats.secure.vdaf.field import Field64, Field128, inv_ntt, ntt
from privstats.secure.vdaf.flp import FlpGeneric, PolyEval, Valid

KEY = bytes(range(16))


def _bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


def _run(vdaf: Prio3, public: Any, shares: list[Any], nonce: bytes) -> list[Any]:
    """Full preparation; returns the output shares or raises VdafError."""
    inits = [vdaf.prep_init(KEY, j, None, nonce, public, shares[j]) for j in range(vdaf.SHARES)]
    msg = vdaf.prep_shares_to_prep(None, [ps for _, ps in inits])
    return [vdaf.prep_next(state, msg) for state, _ in inits]


def _shard_raw(vdaf: Prio3, encoded: list[int], nonce: bytes, rand: bytes) -> tuple[Any, list[Any]]:
    """Shard an arbitrary (possibly invalid) encoded measurement, as a cheating client would."""
    original = vdaf.valid.encode
    vdaf.valid.encode = lambda _m: list(encoded)  # type: ignore[method-assign]
    try:
        return vdaf.shard(None, nonce, rand)
    finally:
        vdaf.valid.encode = original  # type: ignore[method-assign]


INSTANCES = [
    (Prio3Count(), [0, 1, 1, 0, 1], 3),
    (Prio3Sum(8), [0, 255, 17, 100], 372),
    (Prio3SumVec(3, 4, 2), [[1, 2, 3], [15, 0, 7]], [16, 2, 10]),
    (Prio3Histogram(10, 3), [0, 9, 4, 4], [1, 0, 0, 0, 2, 0, 0, 0, 0, 1]),
]


@pytest.mark.parametrize(("vdaf", "measurements", "expected"), INSTANCES)
def test_honest_run_gives_the_sum(vdaf: Prio3, measurements: list[Any], expected: Any) -> None:
    rng = np.random.default_rng(1)
    outs: list[list[Any]] = [[], []]
    for m in measurements:
        nonce = _bytes(rng, 16)
        public, shares = vdaf.shard(m, nonce, _bytes(rng, vdaf.RAND_SIZE))
        for j, o in enumerate(_run(vdaf, public, shares, nonce)):
            outs[j].append(o)
    agg = [vdaf.aggregate(None, o) for o in outs]
    assert vdaf.unshard(None, agg, len(measurements)) == expected


INVALID = [
    (Prio3Count(), [2]),
    (Prio3Sum(4), [1, 2, 0, 1]),
    (Prio3SumVec(2, 3, 2), [1, 0, 0, 0, 3, 0]),
    (Prio3Histogram(6, 2), [1, 0, 0, 1, 0, 0]),  # two ones
    (Prio3Histogram(6, 2), [0, 0, 0, 0, 0, 0]),  # no one
    (Prio3Histogram(6, 2), [0, 2, 0, 0, Field128.MODULUS - 1, 0]),  # sums to one, not 0/1
]


@pytest.mark.parametrize(("vdaf", "encoded"), INVALID)
def test_invalid_measurement_is_rejected(vdaf: Prio3, encoded: list[int]) -> None:
    rng = np.random.default_rng(2)
    for _ in range(3):
        nonce = _bytes(rng, 16)
        public, shares = _shard_raw(vdaf, encoded, nonce, _bytes(rng, vdaf.RAND_SIZE))
        inits = [vdaf.prep_init(KEY, j, None, nonce, public, shares[j]) for j in range(2)]
        with pytest.raises(VdafError):
            vdaf.prep_shares_to_prep(None, [ps for _, ps in inits])


def _honest(vdaf: Prio3, seed: int, measurement: Any) -> tuple[bytes, Any, list[Any]]:
    rng = np.random.default_rng(seed)
    nonce = _bytes(rng, 16)
    public, shares = vdaf.shard(measurement, nonce, _bytes(rng, vdaf.RAND_SIZE))
    return nonce, public, shares


@pytest.mark.parametrize("field", ["meas", "proof"])
@pytest.mark.parametrize("vdaf", [Prio3Count(), Prio3Sum(5), Prio3Histogram(8, 3), Prio3SumVec(2, 2, 3)])
def test_corrupted_leader_share_is_rejected(vdaf: Prio3, field: str) -> None:
    m = {0: 1, 1: 7, 2: [1, 2], 3: 5}[vdaf.ID]
    nonce, public, shares = _honest(vdaf, 3, m)
    meas, proof, blind = shares[0]
    p = vdaf.field.MODULUS
    if field == "meas":
        meas = [(meas[0] + 1) % p, *meas[1:]]
    else:
        proof = [*proof[:-1], (proof[-1] + 1) % p]
    with pytest.raises(VdafError):
        _run(vdaf, public, [(meas, proof, blind), shares[1]], nonce)


@pytest.mark.parametrize("vdaf", [Prio3Sum(5), Prio3Histogram(8, 3), Prio3SumVec(2, 2, 3)])
@pytest.mark.parametrize("which", [0, 1])
def test_tampered_joint_randomness_part_is_rejected(vdaf: Prio3, which: int) -> None:
    m = {1: 7, 2: [1, 2], 3: 5}[vdaf.ID]
    nonce, public, shares = _honest(vdaf, 4, m)
    assert _run(vdaf, public, shares, nonce)  # untampered: accepted
    tampered = list(public)
    tampered[which] = bytes(b ^ 1 for b in tampered[which])
    with pytest.raises(VdafError):
        _run(vdaf, tampered, shares, nonce)


def test_tampered_prep_message_and_wrong_verify_key_are_rejected() -> None:
    vdaf = Prio3Histogram(8, 3)
    nonce, public, shares = _honest(vdaf, 5, 2)
    inits = [vdaf.prep_init(KEY, j, None, nonce, public, shares[j]) for j in range(2)]
    msg = vdaf.prep_shares_to_prep(None, [ps for _, ps in inits])
    assert msg is not None
    with pytest.raises(VdafError, match="joint randomness"):
        vdaf.prep_next(inits[0][0], bytes(16))
    other = vdaf.prep_init(bytes(16), 1, None, nonce, public, shares[1])
    with pytest.raises(VdafError):
        vdaf.prep_shares_to_prep(None, [inits[0][1], other[1]])


@pytest.mark.parametrize(("vdaf", "m"), [(Prio3Count(), 1), (Prio3Sum(6), 33), (Prio3Histogram(5, 2), 3)])
def test_encodings_round_trip(vdaf: Prio3, m: Any) -> None:
    nonce, public, shares = _honest(vdaf, 6, m)
    assert vdaf.decode_public_share(vdaf.encode_public_share(public)) == public
    for j, share in enumerate(shares):
        enc = vdaf.encode_input_share(share)
        assert vdaf.decode_input_share(j, enc) == share
        with pytest.raises(VdafError):
            vdaf.decode_input_share(j, enc + b"\x00")
    state, prep_share = vdaf.prep_init(KEY, 0, None, nonce, public, shares[0])
    assert vdaf.decode_prep_share(state, vdaf.encode_prep_share(prep_share)) == prep_share
    with pytest.raises(VdafError):
        vdaf.decode_prep_share(state, vdaf.encode_prep_share(prep_share)[:-1])
    agg = vdaf.aggregate(None, [state[0]])
    assert vdaf.decode_agg_share(vdaf.encode_agg_share(agg)) == agg
    persisted = vdaf.decode_prep_state(vdaf.encode_prep_state(state))
    assert persisted[1] == state[1] and vdaf.aggregate(None, [persisted[0]]) == agg
    too_big = (vdaf.field.MODULUS).to_bytes(vdaf.field.ENCODED_SIZE, "little")
    with pytest.raises(VdafError, match="out of range"):
        vdaf.decode_agg_share(too_big * vdaf.flp.OUTPUT_LEN)
    with pytest.raises(VdafError):
        vdaf.decode_prep_msg(state, b"\x01" * 3)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: Prio3Histogram(0, 1), "length"),
        (lambda: Prio3Histogram(4, 0), "chunk_length"),
        (lambda: Prio3Sum(0), "bits"),
        (lambda: Prio3Sum(65), "bits"),
        (lambda: Prio3SumVec(3, 0, 1), "bits"),
        (lambda: Prio3SumVec(0, 2, 1), "length"),
        (lambda: Prio3Count(shares=1), "shares"),
        (lambda: Prio3Histogram(4, 2).shard(4, bytes(16), bytes(80)), "measurement"),
        (lambda: Prio3Count().shard(1, bytes(15), bytes(48)), "nonce"),
        (lambda: Prio3Count().shard(1, bytes(16), bytes(47)), "rand"),
        (
            lambda: Prio3Count().prep_init(bytes(3), 0, None, bytes(16), None, ([0], [0] * 5, None)),
            "verify_key",
        ),
        (lambda: Prio3Count().prep_init(bytes(16), 2, None, bytes(16), None, ([0], [0] * 5, None)), "agg_id"),
        (lambda: vdaf_from_config({"type": "poplar"}), "type"),
        (lambda: vdaf_from_config({"type": "histogram", "length": 4}), "chunk_length"),
        (lambda: vdaf_from_config({"type": "sum", "bits": 4, "length": 2}), "length"),
    ],
)
def test_bad_arguments_name_the_argument(make: Any, name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        make()


def test_non_int_arguments_raise_type_error() -> None:
    with pytest.raises(TypeError, match="bits"):
        Prio3Sum(4.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="measurement"):
        Prio3Count().shard(True, bytes(16), bytes(48))


def test_config_round_trip_and_divviup_names() -> None:
    for cfg in [
        {"type": "count"},
        {"type": "sum", "bits": 8},
        {"type": "sumVec", "length": 3, "bits": 2, "chunk_length": 2},
        {"type": "histogram", "length": 64, "chunk_length": 8},
    ]:
        assert vdaf_to_config(vdaf_from_config(cfg)) == cfg
    vdaf = vdaf_from_config({"type": "histogram", "length": 16, "chunkLength": 4})
    assert (vdaf.ID, vdaf.SHARES, vdaf.NONCE_SIZE, vdaf.VERIFY_KEY_SIZE) == (3, 2, 16, 16)
    assert vdaf.RAND_SIZE == 16 * 5 and vdaf.field is Field128
    assert Prio3Count().field is Field64 and Prio3Count().RAND_SIZE == 48


@pytest.mark.parametrize(
    "vdaf",
    [Prio3Histogram(8, 3), Prio3Histogram(64, 8), Prio3SumVec(4, 3, 5), Prio3SumVec(2, 8, 16), Prio3Sum(3)],
)
def test_batch_preparation_matches_prep_init(vdaf: Prio3) -> None:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(5):
        valid: Any = vdaf.valid
        m = [int(x) for x in rng.integers(0, 2**valid.bits, valid.length)] if vdaf.ID == 2 else i
        nonce = _bytes(rng, 16)
        public, shares = vdaf.shard(m, nonce, _bytes(rng, vdaf.RAND_SIZE))
        rows.append((nonce, public, shares))
    per_agg = []
    for j in range(2):
        encoded = [vdaf.encode_input_share(s[j]) for _, _, s in rows]
        encoded[2] = encoded[2][:-1]  # one malformed report
        res = vdaf.prep_init_batch(
            KEY, j, None, [n for n, _, _ in rows], [vdaf.encode_public_share(p) for _, p, _ in rows], encoded
        )
        per_agg.append(res)
        assert isinstance(res[2], VdafError)
        for i, (nonce, public, shares) in enumerate(rows):
            if i == 2:
                continue
            state, share = vdaf.prep_init(KEY, j, None, nonce, public, shares[j])
            assert res[i][1] == vdaf.encode_prep_share(share)
            assert res[i][0][1] == state[1]
            assert vdaf.aggregate(None, [res[i][0][0]]) == vdaf.aggregate(None, [state[0]])
    ok = [i for i in range(5) if i != 2]
    pairs = [[per_agg[0][i][1], per_agg[1][i][1]] for i in ok]
    pairs[1] = [pairs[1][0], pairs[1][1][:-1]]  # malformed prep share
    flipped = bytearray(pairs[3][1])
    flipped[0] ^= 1  # altered verifier share
    pairs[3][1] = bytes(flipped)
    msgs = vdaf.prep_shares_to_prep_batch(None, pairs)
    assert isinstance(msgs[1], VdafError) and isinstance(msgs[3], VdafError)
    for row in (0, 2):
        i = ok[row]
        shares = [vdaf.decode_prep_share(None, per_agg[j][i][1]) for j in range(2)]
        assert msgs[row] == vdaf.prep_shares_to_prep(None, shares)
        assert vdaf.prep_next(per_agg[0][i][0], msgs[row]) == per_agg[0][i][0][0]


def test_batch_rejects_an_invalid_histogram() -> None:
    vdaf = Prio3Histogram(12, 4)
    rng = np.random.default_rng(8)
    nonce = _bytes(rng, 16)
    public, shares = _shard_raw(vdaf, [0, 1] * 6, nonce, _bytes(rng, vdaf.RAND_SIZE))
    enc_public = vdaf.encode_public_share(public)
    preps = [
        vdaf.prep_init_batch(KEY, j, None, [nonce], [enc_public], [vdaf.encode_input_share(shares[j])])[0]
        for j in range(2)
    ]
    with pytest.raises(VdafError):
        vdaf.prep_shares_to_prep(None, [vdaf.decode_prep_share(state, ps) for state, ps in preps])
    [msg] = vdaf.prep_shares_to_prep_batch(None, [[ps for _, ps in preps]])
    assert isinstance(msg, VdafError)


@pytest.mark.parametrize(
    "vdaf", [Prio3Histogram(1, 1), Prio3Histogram(33, 5), Prio3Histogram(7, 3, shares=3)]
)
def test_closed_form_histogram_sharding_matches_generic(vdaf: Prio3) -> None:
    rng = np.random.default_rng(9)
    for m in sorted({0, vdaf.valid.length - 1, vdaf.valid.length // 2}):  # type: ignore[attr-defined]
        nonce, rand = _bytes(rng, 16), _bytes(rng, vdaf.RAND_SIZE)
        public, shares = vdaf.shard_encoded(m, nonce, rand)
        ref_public, ref_shares = _shard_raw(vdaf, vdaf.valid.encode(m), nonce, rand)
        assert public == vdaf.encode_public_share(ref_public)
        assert shares == [vdaf.encode_input_share(s) for s in ref_shares]
        # and the generic prover agrees with the closed form
        meas = vdaf.valid.encode(m)
        prove_rand = [int(x) for x in rng.integers(0, 2**62, vdaf.flp.PROVE_RAND_LEN)]
        joint_rand = [int(x) for x in rng.integers(0, 2**62, vdaf.flp.JOINT_RAND_LEN)]
        assert vdaf._prove(meas, prove_rand, joint_rand) == vdaf.flp.prove(meas, prove_rand, joint_rand)


class _Range3(Valid):
    """Test circuit: every entry in {0, 1, 2}, via the PolyEval gadget x (x - 1) (x - 2)."""

    FIELD = Field64
    MEAS_LEN = OUTPUT_LEN = 3
    JOINT_RAND_LEN = 1

    def __init__(self) -> None:
        self.GADGETS = [PolyEval([0, 2, -3, 1])]
        self.GADGET_CALLS = [3]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: Any) -> int:
        p, r = self.FIELD.MODULUS, joint_rand[0]
        return sum(pow(r, i + 1, p) * gadgets[0]([x]) for i, x in enumerate(meas)) % p


def test_generic_flp_with_polyeval_gadget() -> None:
    flp, p = FlpGeneric(_Range3()), Field64.MODULUS
    assert flp.PROOF_LEN == 1 + 3 * 3 + 1 and flp.VERIFIER_LEN == 3
    rng = np.random.default_rng(10)
    for meas, ok in [([0, 1, 2], True), ([2, 2, 0], True), ([3, 0, 0], False), ([0, p - 1, 1], False)]:
        prove_rand = [int(rng.integers(1, 2**62))]
        joint_rand, query_rand = [int(rng.integers(1, 2**62))], [int(rng.integers(1, 2**62))]
        proof = flp.prove(meas, prove_rand, joint_rand)
        # two additive shares of the measurement and proof
        m0 = [int(x) for x in rng.integers(0, 2**62, 3)]
        pr0 = [int(x) for x in rng.integers(0, 2**62, len(proof))]
        shares = [
            (m0, pr0),
            (
                [(a - b) % p for a, b in zip(meas, m0, strict=False)],
                [(a - b) % p for a, b in zip(proof, pr0, strict=False)],
            ),
        ]
        ver = [flp.query(m, pr, query_rand, joint_rand, 2) for m, pr in shares]
        assert flp.decide([(a + b) % p for a, b in zip(*ver, strict=False)]) is ok


def test_ntt_round_trip_and_roots() -> None:
    p = Field128.MODULUS
    vals = [3, 1, 4, 1, 5, 9, 2, 6]
    root = Field128.root(8)
    assert pow(root, 8, p) == 1 and pow(root, 4, p) != 1
    assert inv_ntt(ntt(vals, root, p), root, p) == vals
    with pytest.raises(ValueError, match="order"):
        Field64.root(3)


def test_integer_noise_added_to_aggregate_shares_survives_unsharding() -> None:
    vdaf = Prio3Histogram(4, 2)
    rng = np.random.default_rng(11)
    outs: list[list[Any]] = [[], []]
    for m in [0, 1, 1, 3]:
        nonce = _bytes(rng, 16)
        public, shares = vdaf.shard_encoded(m, nonce, _bytes(rng, vdaf.RAND_SIZE))
        preps = [vdaf.prep_init_batch(KEY, j, None, [nonce], [public], [shares[j]])[0] for j in range(2)]
        [msg] = vdaf.prep_shares_to_prep_batch(None, [[ps for _, ps in preps]])
        for j in range(2):
            outs[j].append(vdaf.prep_next(preps[j][0], msg))
    noise = [[-5, 2, 0, -1], [3, -4, 7, 0]]
    wire = [
        vdaf.encode_agg_share([a + z for a, z in zip(vdaf.aggregate(None, o), nz, strict=True)])
        for o, nz in zip(outs, noise, strict=True)
    ]
    result = vdaf.unshard(None, [vdaf.decode_agg_share(w) for w in wire], 4)
    assert [vdaf.field.to_signed(x) for x in result] == [1 - 2, 2 - 2, 0 + 7, 1 - 1]
    assert Field64.to_signed(Field64.MODULUS - 3) == -3 and Field128.to_signed(5) == 5


def test_ping_pong_flow_and_rejections() -> None:
    from privstats.secure.vdaf import pingpong as pp

    for vdaf, ms in [(Prio3Histogram(6, 2), [0, 5, 2]), (Prio3Count(), [1, 0, 1])]:
        rng = np.random.default_rng(12)
        nonces = [_bytes(rng, 16) for _ in ms]
        sharded = [
            vdaf.shard_encoded(m, n, _bytes(rng, vdaf.RAND_SIZE)) for m, n in zip(ms, nonces, strict=True)
        ]
        publics = [pub for pub, _ in sharded]
        lead = pp.leader_init_batch(vdaf, KEY, nonces, publics, [s[0] for _, s in sharded])
        pings = [ping for _, ping in lead]
        assert all(p is not None and p[0] == pp.INITIALIZE for p in pings)
        pings[1] = pp.encode_message(pp.FINISH, prep_msg=b"")  # wrong message type for report 1
        helper = pp.helper_init_batch(vdaf, KEY, nonces, publics, [s[1] for _, s in sharded], pings)
        assert isinstance(helper[1][0], VdafError) and helper[1][1] is None
        outs: list[list[Any]] = [[], []]
        for i in (0, 2):
            pong = helper[i][1]
            assert pong is not None
            outs[0].append(pp.leader_continued(vdaf, lead[i][0], pong))
            outs[1].append(helper[i][0])
        expected = vdaf.unshard(None, [vdaf.aggregate(None, o) for o in outs], 2)
        assert expected == ([1, 0, 1, 0, 0, 0] if vdaf.ID == 3 else 2)  # reports 0 and 2
    kind, fields = pp.decode_message(pp.encode_message(pp.CONTINUE, prep_share=b"ab", prep_msg=b"c"))
    assert kind == pp.CONTINUE and fields == {"prep_msg": b"c", "prep_share": b"ab"}
    for bad in [b"", b"\x07", b"\x00\x00\x00\x00\x05ab", b"\x02\x00\x00\x00\x00x"]:
        with pytest.raises(VdafError):
            pp.decode_message(bad)


@pytest.mark.parametrize("vdaf", [Prio3Histogram(20, 6), Prio3SumVec(3, 5, 4)])
def test_batch_matches_prep_init_on_arbitrary_shares(vdaf: Prio3) -> None:
    """The closed form is plain linear algebra: it must agree with the draft on garbage shares too."""
    rng = np.random.default_rng(13)
    size = vdaf.field.ENCODED_SIZE
    n_elems = vdaf.flp.MEAS_LEN + vdaf.flp.PROOF_LEN
    for _ in range(4):
        nonce = _bytes(rng, 16)
        raw = bytearray(_bytes(rng, n_elems * size))
        raw[size - 1 :: size] = bytes([0x7F]) * n_elems  # keep every element below p
        leader = bytes(raw) + _bytes(rng, 16)
        public = _bytes(rng, 32)
        for agg_id, share in [(0, leader), (1, _bytes(rng, 48))]:
            [(state, prep_share)] = vdaf.prep_init_batch(KEY, agg_id, None, [nonce], [public], [share])
            ref_state, ref_share = vdaf.prep_init(
                KEY,
                agg_id,
                None,
                nonce,
                vdaf.decode_public_share(public),
                vdaf.decode_input_share(agg_id, share),
            )
            assert prep_share == vdaf.encode_prep_share(ref_share)
            assert state[1] == ref_state[1]


@pytest.mark.parametrize("oneshot", [True, False])
def test_xof_stream_reads_are_prefixes_of_one_turboshake_output(oneshot: bool, monkeypatch: Any) -> None:
    """XofTurboShake128 squeezes into a buffer (one C call, or pycryptodome's object when the raw call
    is unavailable) and grows it when a reader wants more: any chunking of reads gives the bytes of
    TurboSHAKE128(len(dst) || dst || seed || binder, D=1) read in one piece."""
    from Crypto.Hash import TurboSHAKE128

    from privstats.secure.vdaf import xof

    xof._turboshake()
    if not oneshot:
        monkeypatch.setattr(xof, "_ONESHOT", None)
    elif xof._ONESHOT is None:
        pytest.skip("this pycryptodome has no cffi keccak_oneshot")
    seed, dst, binder = bytes(range(16)), b"dst-\x01", bytes(range(40, 90))
    want = TurboSHAKE128.new(domain=1, data=bytes([len(dst)]) + dst + seed + binder).read(5000)
    for chunks in ([5000], [16, 16, 16, 4952], [1] * 40 + [4960], [3000, 1999, 1]):
        x = xof.XofTurboShake128(seed, dst, binder)
        assert b"".join(x.next(n) for n in chunks) == want
    assert xof.XofTurboShake128.derive_seed(seed, dst, binder) == want[:16]
