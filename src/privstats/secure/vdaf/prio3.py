"""Prio3 of VDAF-08: sharding, preparation, aggregation, unsharding and the message encodings.

Names follow the draft. A ``Prio3`` object is stateless and thread-safe; field elements are ints in
``[0, field.MODULUS)`` and output/aggregate shares are ``list[int]`` (add a noise share mod
``field.MODULUS`` to an aggregate share before releasing it, if desired).

Example:
    >>> import os
    >>> from privstats.secure.vdaf.prio3 import Prio3Histogram
    >>> vdaf = Prio3Histogram(length=4, chunk_length=2)
    >>> key, nonce = os.urandom(vdaf.VERIFY_KEY_SIZE), os.urandom(vdaf.NONCE_SIZE)
    >>> public, shares = vdaf.shard(2, nonce, os.urandom(vdaf.RAND_SIZE))
    >>> states, prep_shares = zip(*(vdaf.prep_init(key, j, None, nonce, public, shares[j]) for j in range(2)))
    >>> msg = vdaf.prep_shares_to_prep(None, list(prep_shares))
    >>> outs = [vdaf.prep_next(s, msg) for s in states]
    >>> vdaf.unshard(None, [vdaf.aggregate(None, [o]) for o in outs], 1)
    [0, 0, 1, 0]
"""

from __future__ import annotations

from typing import Any

from privstats.secure.vdaf import batch as _batch
from privstats.secure.vdaf.circuits import Count, Histogram, Sum, SumVec, check_int
from privstats.secure.vdaf.errors import VdafError
from privstats.secure.vdaf.field import Field
from privstats.secure.vdaf.flp import FlpGeneric, Valid
from privstats.secure.vdaf.xof import SEED_SIZE, XofTurboShake128, format_dst

__all__ = ["Prio3", "Prio3Count", "Prio3Histogram", "Prio3Sum", "Prio3SumVec", "VdafError"]

USAGE_MEAS_SHARE, USAGE_PROOF_SHARE, USAGE_JOINT_RANDOMNESS = 1, 2, 3
USAGE_PROVE_RANDOMNESS, USAGE_QUERY_RANDOMNESS, USAGE_JOINT_RAND_SEED, USAGE_JOINT_RAND_PART = 4, 5, 6, 7

InputShare = tuple[Any, Any, "bytes | None"]
PublicShare = "list[bytes] | None"
PrepState = tuple[Any, "bytes | None"]  # out share: list[int] or its encoding
PrepShare = tuple[list[int], "bytes | None"]


def _vec_sub(a: list[int], b: list[int], p: int) -> list[int]:
    return [(x - y) % p for x, y in zip(a, b, strict=False)]


def _vec_add(a: list[int], b: list[int], p: int) -> list[int]:
    return [(x + y) % p for x, y in zip(a, b, strict=False)]


class Prio3:
    """Prio3 over a validity circuit with XofTurboShake128 and one proof."""

    NONCE_SIZE = 16
    VERIFY_KEY_SIZE = SEED_SIZE
    ROUNDS = 1
    PROOFS = 1

    def __init__(self, valid: Valid, algo_id: int, shares: int = 2) -> None:
        self.SHARES = check_int("shares", shares, 2, 255)
        self.ID = algo_id
        self.valid = valid
        self.flp = FlpGeneric(valid)
        self.field: type[Field] = valid.FIELD
        self.xof = XofTurboShake128
        per = 2 if self.flp.JOINT_RAND_LEN == 0 else 3
        extra = 1 if self.flp.JOINT_RAND_LEN == 0 else 2
        self.RAND_SIZE = SEED_SIZE * (per * (self.SHARES - 1) + extra)
        self._dst = {u: format_dst(0, algo_id, u) for u in range(1, 8)}

    @property
    def uses_joint_rand(self) -> bool:
        """True when the circuit needs joint randomness (then messages carry seeds)."""
        return self.flp.JOINT_RAND_LEN > 0

    # -- auxiliary functions of the draft ---------------------------------------------------------
    def _expand(self, seed: bytes, usage: int, binder: bytes, length: int) -> tuple[list[int], bytes]:
        return self.xof(seed, self._dst[usage], binder).next_vec_bytes(self.field, length)

    def helper_meas_share(self, agg_id: int, seed: bytes) -> tuple[list[int], bytes]:
        """Helper measurement share expanded from its seed, with its encoding."""
        return self._expand(seed, USAGE_MEAS_SHARE, bytes([agg_id]), self.flp.MEAS_LEN)

    def helper_proofs_share(self, agg_id: int, seed: bytes) -> list[int]:
        """Helper proof share expanded from its seed."""
        binder = bytes([self.PROOFS, agg_id])
        return self._expand(seed, USAGE_PROOF_SHARE, binder, self.flp.PROOF_LEN * self.PROOFS)[0]

    def joint_rand_part(self, agg_id: int, blind: bytes, meas_enc: bytes, nonce: bytes) -> bytes:
        """Joint randomness part of one aggregator (from its encoded measurement share)."""
        binder = bytes([agg_id]) + nonce + meas_enc
        return self.xof.derive_seed(blind, self._dst[USAGE_JOINT_RAND_PART], binder)

    def joint_rand_seed(self, parts: list[bytes]) -> bytes:
        """Joint randomness seed from all parts."""
        return self.xof.derive_seed(bytes(SEED_SIZE), self._dst[USAGE_JOINT_RAND_SEED], b"".join(parts))

    def joint_rands(self, seed: bytes) -> list[int]:
        """Joint randomness of the proof(s) from its seed."""
        n = self.flp.JOINT_RAND_LEN * self.PROOFS
        return self._expand(seed, USAGE_JOINT_RANDOMNESS, bytes([self.PROOFS]), n)[0]

    def query_rands(self, verify_key: bytes, nonce: bytes) -> list[int]:
        """Query randomness from the verification key and the nonce."""
        binder = bytes([self.PROOFS]) + nonce
        return self._expand(
            verify_key, USAGE_QUERY_RANDOMNESS, binder, self.flp.QUERY_RAND_LEN * self.PROOFS
        )[0]

    def prove_rands(self, seed: bytes) -> list[int]:
        """Prover randomness from its seed."""
        n = self.flp.PROVE_RAND_LEN * self.PROOFS
        return self._expand(seed, USAGE_PROVE_RANDOMNESS, bytes([self.PROOFS]), n)[0]

    # -- sharding ----------------------------------------------------------------------------------
    def shard(
        self, measurement: Any, nonce: bytes, rand: bytes
    ) -> tuple[list[bytes] | None, list[InputShare]]:
        """Public share and one input share per aggregator (leader's as vectors, helpers' as seeds)."""
        self._check_bytes("nonce", nonce, self.NONCE_SIZE)
        self._check_bytes("rand", rand, self.RAND_SIZE)
        meas = self.flp.valid.encode(measurement)
        seeds = [rand[i : i + SEED_SIZE] for i in range(0, self.RAND_SIZE, SEED_SIZE)]
        p, jr = self.field.MODULUS, self.uses_joint_rand
        per = 3 if jr else 2
        helper = [seeds[per * j : per * j + per] for j in range(self.SHARES - 1)]
        rest = seeds[per * (self.SHARES - 1) :]
        leader_meas, parts = list(meas), []
        for j, hs in enumerate(helper):
            share, enc = self.helper_meas_share(j + 1, hs[0])
            leader_meas = _vec_sub(leader_meas, share, p)
            if jr:
                parts.append(self.joint_rand_part(j + 1, hs[2], enc, nonce))
        joint_rand: list[int] = []
        leader_blind = rest[0] if jr else None
        if leader_blind is not None:
            parts.insert(0, self.joint_rand_part(0, leader_blind, self.field.encode_vec(leader_meas), nonce))
            joint_rand = self.joint_rands(self.joint_rand_seed(parts))
        proof = self._prove(meas, self.prove_rands(rest[-1]), joint_rand)
        for j, hs in enumerate(helper):
            proof = _vec_sub(proof, self.helper_proofs_share(j + 1, hs[1]), p)
        shares: list[InputShare] = [(leader_meas, proof, leader_blind)]
        shares += [(hs[0], hs[1], hs[2] if jr else None) for hs in helper]
        return (parts if jr else None), shares

    def _prove(self, meas: list[int], prove_rand: list[int], joint_rand: list[int]) -> list[int]:
        """FLP proof; a one-hot histogram uses the closed form of :mod:`.client` (same result)."""
        if isinstance(self.valid, Histogram) and sum(meas) == 1 and all(x in (0, 1) for x in meas):
            from privstats.secure.vdaf.client import histogram_proof

            return histogram_proof(self.valid, meas.index(1), prove_rand, joint_rand)
        return self.flp.prove(meas, prove_rand, joint_rand)

    def shard_encoded(self, measurement: Any, nonce: bytes, rand: bytes) -> tuple[bytes, list[bytes]]:
        """:meth:`shard` returning the encoded public share and input shares (fast for histograms)."""
        from privstats.secure.vdaf.client import shard_encoded

        return shard_encoded(self, measurement, nonce, rand)

    # -- preparation -------------------------------------------------------------------------------
    def prep_init(
        self,
        verify_key: bytes,
        agg_id: int,
        agg_param: None,
        nonce: bytes,
        public_share: list[bytes] | None,
        input_share: InputShare,
    ) -> tuple[PrepState, PrepShare]:
        """Aggregator ``agg_id``'s preparation state and its prep share (verifier share, jr part)."""
        self._check_bytes("verify_key", verify_key, self.VERIFY_KEY_SIZE)
        self._check_bytes("nonce", nonce, self.NONCE_SIZE)
        check_int("agg_id", agg_id, 0, self.SHARES - 1)
        meas_share, proof_share, blind = input_share
        if agg_id == 0:
            meas_enc = self.field.encode_vec(meas_share) if self.uses_joint_rand else b""
        else:
            meas_share, meas_enc = self.helper_meas_share(agg_id, meas_share)
            proof_share = self.helper_proofs_share(agg_id, proof_share)
        joint_rand: list[int] = []
        corrected, part = None, None
        if self.uses_joint_rand:
            if public_share is None or len(public_share) != self.SHARES or blind is None:
                raise VdafError("public share must carry one joint randomness part per aggregator")
            part = self.joint_rand_part(agg_id, blind, meas_enc, nonce)
            parts = list(public_share)
            parts[agg_id] = part
            corrected = self.joint_rand_seed(parts)
            joint_rand = self.joint_rands(corrected)
        query_rand = self.query_rands(verify_key, nonce)
        verifier = self.flp.query(meas_share, proof_share, query_rand, joint_rand, self.SHARES)
        return (self.valid.truncate(meas_share), corrected), (verifier, part)

    def prep_shares_to_prep(self, agg_param: None, prep_shares: list[PrepShare]) -> bytes | None:
        """Combine the prep shares; raises VdafError if the proof does not verify."""
        if len(prep_shares) != self.SHARES:
            raise VdafError(f"expected {self.SHARES} prep shares, got {len(prep_shares)}")
        p = self.field.MODULUS
        verifier = [0] * self.flp.VERIFIER_LEN
        parts = []
        for share, part in prep_shares:
            if len(share) != self.flp.VERIFIER_LEN:
                raise VdafError("verifier share has the wrong length")
            verifier = _vec_add(verifier, share, p)
            if self.uses_joint_rand:
                if part is None:
                    raise VdafError("prep share lacks its joint randomness part")
                parts.append(part)
        if not self.flp.decide(verifier):
            raise VdafError("proof verifier check failed")
        return self.joint_rand_seed(parts) if self.uses_joint_rand else None

    def prep_next(self, prep_state: PrepState, prep_msg: bytes | None) -> Any:
        """The output share (as held in the state); raises VdafError if the joint randomness seed disagrees."""
        out_share, corrected = prep_state
        if prep_msg != corrected:
            raise VdafError("joint randomness check failed")
        return out_share

    # -- aggregation and unsharding ----------------------------------------------------------------
    def aggregate(self, agg_param: None, out_shares: Any) -> list[int]:
        """Sum of output shares (a list of field ints of length OUTPUT_LEN).

        Entries may be ``list[int]`` or encoded output shares (``bytes``, as in the states returned by
        :meth:`prep_init_batch`); encoded ones are summed in numpy.
        """
        p, n = self.field.MODULUS, self.flp.OUTPUT_LEN
        shares = list(out_shares)
        encoded = [s for s in shares if isinstance(s, (bytes, bytearray))]
        acc = [0] * n
        if encoded:
            width = n * self.field.ENCODED_SIZE
            if any(len(s) != width for s in encoded):
                raise ValueError(f"encoded out_shares entries must be {width} bytes")
            acc = _batch.aggregate_encoded(self, [bytes(s) for s in encoded])
        for share in shares:
            if isinstance(share, (bytes, bytearray)):
                continue
            if len(share) != n:
                raise ValueError(f"out_shares entries must have length {n}")
            acc = [a + int(x) for a, x in zip(acc, share, strict=True)]
        return [a % p for a in acc]

    # Many reports at once from their encodings, same bytes as prep_init / prep_shares_to_prep (see
    # :mod:`.batch`): per report the result or the VdafError that report raised.
    prep_init_batch = _batch.prep_init_batch
    prep_shares_to_prep_batch = _batch.prep_shares_to_prep_batch

    def encode_prep_state(self, prep_state: PrepState) -> bytes:
        """Joint randomness seed (if any) then the encoded output share, e.g. to persist a state."""
        out, seed = prep_state
        raw = bytes(out) if isinstance(out, (bytes, bytearray)) else self.encode_agg_share(out)
        return (seed or b"") + raw

    def decode_prep_state(self, data: bytes) -> PrepState:
        """Inverse of :meth:`encode_prep_state` (the output share comes back encoded, as bytes)."""
        seed_len = SEED_SIZE if self.uses_joint_rand else 0
        width = self.flp.OUTPUT_LEN * self.field.ENCODED_SIZE
        if len(data) != seed_len + width:
            raise VdafError(f"prep state must be {seed_len + width} bytes, got {len(data)}")
        self.field.decode_vec(data[seed_len:])
        return data[seed_len:], (data[:seed_len] if seed_len else None)

    def unshard(self, agg_param: None, agg_shares: list[list[int]], num_measurements: int) -> Any:
        """Aggregate result (circuit decode of the sum of aggregate shares).

        Counts come back as field elements in [0, p); if the aggregate shares carry additive noise,
        map each with ``self.field.to_signed`` to recover negative values.
        """
        return self.valid.decode(self.aggregate(None, agg_shares), num_measurements)

    # -- encodings ---------------------------------------------------------------------------------
    def encode_public_share(self, public_share: list[bytes] | None) -> bytes:
        """Joint randomness parts concatenated (empty without joint randomness)."""
        return b"".join(public_share) if public_share else b""

    def decode_public_share(self, data: bytes) -> list[bytes] | None:
        """Inverse of :meth:`encode_public_share` (VdafError on a bad length)."""
        if not self.uses_joint_rand:
            if data:
                raise VdafError("public share must be empty")
            return None
        if len(data) != SEED_SIZE * self.SHARES:
            raise VdafError(f"public share must be {SEED_SIZE * self.SHARES} bytes, got {len(data)}")
        return [data[i : i + SEED_SIZE] for i in range(0, len(data), SEED_SIZE)]

    def encode_input_share(self, input_share: InputShare) -> bytes:
        """Leader: measurement share, proof share[, blind]; helper: two seeds[, blind]."""
        meas, proof, blind = input_share
        if isinstance(meas, bytes):
            out = meas + proof
        else:
            out = self.field.encode_vec(meas) + self.field.encode_vec(proof)
        return out + (blind or b"")

    def decode_input_share(self, agg_id: int, data: bytes) -> InputShare:
        """Inverse of :meth:`encode_input_share` for aggregator ``agg_id`` (VdafError on a bad length)."""
        check_int("agg_id", agg_id, 0, self.SHARES - 1)
        blind_len = SEED_SIZE if self.uses_joint_rand else 0
        if agg_id > 0:
            if len(data) != 2 * SEED_SIZE + blind_len:
                raise VdafError("helper input share has the wrong length")
            return data[:SEED_SIZE], data[SEED_SIZE : 2 * SEED_SIZE], data[2 * SEED_SIZE :] or None
        size = self.field.ENCODED_SIZE
        n_meas, n_proof = self.flp.MEAS_LEN * size, self.flp.PROOF_LEN * self.PROOFS * size
        if len(data) != n_meas + n_proof + blind_len:
            raise VdafError("leader input share has the wrong length")
        meas = self.field.decode_vec(data[:n_meas])
        proof = self.field.decode_vec(data[n_meas : n_meas + n_proof])
        return meas, proof, data[n_meas + n_proof :] or None

    def encode_prep_share(self, prep_share: PrepShare) -> bytes:
        """Verifier share[, joint randomness part]."""
        return self.field.encode_vec(prep_share[0]) + (prep_share[1] or b"")

    def decode_prep_share(self, prep_state: PrepState | None, data: bytes) -> PrepShare:
        """Inverse of :meth:`encode_prep_share` (VdafError on a bad length or value)."""
        n = self.flp.VERIFIER_LEN * self.PROOFS * self.field.ENCODED_SIZE
        part_len = SEED_SIZE if self.uses_joint_rand else 0
        if len(data) != n + part_len:
            raise VdafError(f"prep share must be {n + part_len} bytes, got {len(data)}")
        return self.field.decode_vec(data[:n]), (data[n:] if part_len else None)

    def encode_prep_msg(self, prep_msg: bytes | None) -> bytes:
        """Joint randomness seed (empty without joint randomness)."""
        return prep_msg or b""

    def decode_prep_msg(self, prep_state: PrepState | None, data: bytes) -> bytes | None:
        """Inverse of :meth:`encode_prep_msg` (VdafError on a bad length)."""
        expect = SEED_SIZE if self.uses_joint_rand else 0
        if len(data) != expect:
            raise VdafError(f"prep message must be {expect} bytes, got {len(data)}")
        return data if expect else None

    def encode_agg_share(self, agg_share: list[int]) -> bytes:
        """Little-endian field elements; entries are reduced mod ``field.MODULUS`` first, so an aggregate
        share plus an integer noise share (any sign) can be passed as is."""
        return self.field.encode_vec([int(x) % self.field.MODULUS for x in agg_share])

    def decode_agg_share(self, data: bytes) -> list[int]:
        """Inverse of :meth:`encode_agg_share` (VdafError on a bad length or value)."""
        vec = self.field.decode_vec(data)
        if len(vec) != self.flp.OUTPUT_LEN:
            raise VdafError(f"aggregate share must have {self.flp.OUTPUT_LEN} elements, got {len(vec)}")
        return vec

    encode_out_share = encode_agg_share

    @staticmethod
    def _check_bytes(name: str, value: Any, size: int) -> None:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"{name} must be bytes, got {type(value).__name__}")
        if len(value) != size:
            raise ValueError(f"{name} must be {size} bytes, got {len(value)}")


class Prio3Count(Prio3):
    """Prio3Count (ID 0): sum of 0/1 measurements over Field64."""

    def __init__(self, shares: int = 2) -> None:
        super().__init__(Count(), 0x00000000, shares)


class Prio3Sum(Prio3):
    """Prio3Sum (ID 1): sum of integers in [0, 2^bits) over Field128."""

    def __init__(self, bits: int, shares: int = 2) -> None:
        super().__init__(Sum(bits), 0x00000001, shares)


class Prio3SumVec(Prio3):
    """Prio3SumVec (ID 2): element-wise sum of ``length`` integers in [0, 2^bits) over Field128."""

    def __init__(self, length: int, bits: int, chunk_length: int, shares: int = 2) -> None:
        super().__init__(SumVec(length, bits, chunk_length), 0x00000002, shares)


class Prio3Histogram(Prio3):
    """Prio3Histogram (ID 3): counts of bucket indices in [0, length) over Field128."""

    def __init__(self, length: int, chunk_length: int, shares: int = 2) -> None:
        super().__init__(Histogram(length, chunk_length), 0x00000003, shares)
