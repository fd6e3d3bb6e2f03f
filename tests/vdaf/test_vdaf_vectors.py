"""Official VDAF-08 test vectors (poc/test_vec/08 of draft-irtf-cfrg-vdaf), reproduced byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from privstats.secure.vdaf import Field128, Prio3, Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec
from privstats.secure.vdaf.xof import XofTurboShake128

VECTORS = Path(__file__).parent / "vectors"
PRIO3_FILES = sorted(p.name for p in VECTORS.glob("Prio3*.json"))


def _load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / name).read_text())


def _make(name: str, d: dict[str, Any]) -> Prio3:
    shares = d["shares"]
    if name.startswith("Prio3Count"):
        return Prio3Count(shares=shares)
    if name.startswith("Prio3SumVec"):
        return Prio3SumVec(d["length"], d["bits"], d["chunk_length"], shares=shares)
    if name.startswith("Prio3Sum"):
        return Prio3Sum(d["bits"], shares=shares)
    assert name.startswith("Prio3Histogram")
    return Prio3Histogram(d["length"], d["chunk_length"], shares=shares)


def test_all_four_prio3_types_have_two_vectors() -> None:
    kinds = sorted({name.rsplit("_", 1)[0] for name in PRIO3_FILES})
    assert kinds == ["Prio3Count", "Prio3Histogram", "Prio3Sum", "Prio3SumVec"]
    assert len(PRIO3_FILES) == 8


def test_xof_turboshake128_vector() -> None:
    d = _load("XofTurboShake128.json")
    seed, dst, binder = (bytes.fromhex(d[k]) for k in ("seed", "dst", "binder"))
    assert XofTurboShake128.derive_seed(seed, dst, binder).hex() == d["derived_seed"]
    vec = XofTurboShake128.expand_into_vec(Field128, seed, dst, binder, d["length"])
    assert Field128.encode_vec(vec).hex() == d["expanded_vec_field128"]


@pytest.mark.parametrize("name", PRIO3_FILES)
def test_prio3_vector(name: str) -> None:
    d = _load(name)
    vdaf = _make(name, d)
    key = bytes.fromhex(d["verify_key"])
    out_shares: list[list[list[int]]] = [[] for _ in range(vdaf.SHARES)]
    for rep in d["prep"]:
        nonce = bytes.fromhex(rep["nonce"])
        public, shares = vdaf.shard(rep["measurement"], nonce, bytes.fromhex(rep["rand"]))
        assert vdaf.encode_public_share(public).hex() == rep["public_share"]
        assert [vdaf.encode_input_share(s).hex() for s in shares] == rep["input_shares"]
        # The aggregators start from the wire bytes, as in a deployment.
        public = vdaf.decode_public_share(bytes.fromhex(rep["public_share"]))
        decoded = [vdaf.decode_input_share(j, bytes.fromhex(h)) for j, h in enumerate(rep["input_shares"])]
        inits = [vdaf.prep_init(key, j, None, nonce, public, decoded[j]) for j in range(vdaf.SHARES)]
        states = [s for s, _ in inits]
        prep_shares = [vdaf.encode_prep_share(ps) for _, ps in inits]
        assert [ps.hex() for ps in prep_shares] == rep["prep_shares"][0]
        received = [vdaf.decode_prep_share(states[j], ps) for j, ps in enumerate(prep_shares)]
        msg = vdaf.prep_shares_to_prep(None, received)
        assert vdaf.encode_prep_msg(msg).hex() == rep["prep_messages"][0]
        msg = vdaf.decode_prep_msg(states[0], bytes.fromhex(rep["prep_messages"][0]))
        outs = [vdaf.prep_next(s, msg) for s in states]
        assert [[vdaf.field.encode_vec([x]).hex() for x in o] for o in outs] == rep["out_shares"]
        for j, o in enumerate(outs):
            out_shares[j].append(o)
    agg_shares = [vdaf.aggregate(None, outs) for outs in out_shares]
    assert [vdaf.encode_agg_share(a).hex() for a in agg_shares] == d["agg_shares"]
    decoded_agg = [vdaf.decode_agg_share(bytes.fromhex(h)) for h in d["agg_shares"]]
    assert vdaf.unshard(None, decoded_agg, len(d["prep"])) == d["agg_result"]


@pytest.mark.parametrize("jit", ["1", "0"])
@pytest.mark.parametrize("name", PRIO3_FILES)
def test_prio3_vector_through_the_batch_paths(name: str, jit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The aggregators' batch preparation (compiled kernels with numba, numpy limbs without) gives the
    vectors' prep shares, prep messages and aggregate shares."""
    from privstats.secure.vdaf import batch

    if jit == "1":
        pytest.importorskip("numba")
    monkeypatch.setenv("PRIVSTATS_VDAF_JIT", jit)
    assert batch.jit_enabled() is (jit == "1")
    d = _load(name)
    vdaf, reps = _make(name, d), d["prep"]
    key = bytes.fromhex(d["verify_key"])
    nonces = [bytes.fromhex(r["nonce"]) for r in reps]
    publics = [bytes.fromhex(r["public_share"]) for r in reps]
    preps = [
        vdaf.prep_init_batch(
            key, j, None, nonces, publics, [bytes.fromhex(r["input_shares"][j]) for r in reps]
        )
        for j in range(vdaf.SHARES)
    ]
    for i, rep in enumerate(reps):
        assert [preps[j][i][1].hex() for j in range(vdaf.SHARES)] == rep["prep_shares"][0]
    msgs = vdaf.prep_shares_to_prep_batch(None, [[p[i][1] for p in preps] for i in range(len(reps))])
    assert [vdaf.encode_prep_msg(m).hex() for m in msgs] == [r["prep_messages"][0] for r in reps]
    outs = [[vdaf.prep_next(p[i][0], msgs[i]) for i in range(len(reps))] for p in preps]
    assert [vdaf.encode_agg_share(vdaf.aggregate(None, o)).hex() for o in outs] == d["agg_shares"]
