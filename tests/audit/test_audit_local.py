"""Privacy audit of the local frequency oracles (GRR, BinaryRR, OUE, OLH, Hadamard response).

Neighbouring inputs: one user's value x = 0 vs x' = 1 (ε-LDP is a per-report guarantee,
and every pair of values is a worst case by symmetry).  Each trial is one report from
the real client (``encode_batch`` on T copies of the value, T independent reports),
reduced to the log-likelihood-ratio direction of the report:

* GRR / BinaryRR: the reported value (event {report = 0}: ratio e^ε);
* OUE: bit_0 − bit_1 (event {bit_0 = 1, bit_1 = 0}: ratio (1 − q)/q = e^ε);
* OLH: 1[bucket = H(s, 0)] − 1[bucket = H(s, 1)] with the report's public seed s;
* HR: 1[j ∈ C_0] − 1[j ∈ C_1] (C_1 splits C_0 and its complement in halves).

Planned bounds with T = 10 000 per input, ε = 1, alpha = 1e-3 (expected counts,
``expected_epsilon_lower_bound``): real mechanism 0.85–0.92, the same client built with
2ε but claiming ε 1.80–1.89 (GRR 1.86, BinaryRR 1.89, OUE/OLH/HR 1.81).  Asserted: real ≤ ε, under-noised > ε.
"""

import numpy as np
import pytest

from privstats.local import GRR, OLH, OUE, BinaryRR, HadamardResponse
from privstats.local.hadamard import parity
from privstats.local.olh import olh_hash
from privstats.privacy.audit import epsilon_lower_bound

EPS, TRIALS = 1.0, 10_000


def _reports(oracle, value, seed):
    return oracle.encode_batch(np.full(TRIALS, value), rng=seed)


def _grr_stat(oracle, reports):
    return reports["value"]


def _oue_stat(oracle, reports):
    bits = np.unpackbits(reports["bits"], axis=1, bitorder="little")
    return bits[:, 0].astype(int) - bits[:, 1].astype(int)


def _olh_stat(oracle, reports):
    s, b = reports["seed"], reports["bucket"]
    return (b == olh_hash(s, 0, oracle.g)).astype(int) - (b == olh_hash(s, 1, oracle.g)).astype(int)


def _hr_stat(oracle, reports):
    j = reports["index"]
    return (parity(1 & j) == 0).astype(int) - (parity(2 & j) == 0).astype(int)  # rows x + 1 = 1 and 2


CASES = {
    "grr": (lambda e: GRR(4, e), _grr_stat),
    "binary-rr": (lambda e: BinaryRR(e), _grr_stat),
    "oue": (lambda e: OUE(8, e), _oue_stat),
    "olh": (lambda e: OLH(16, e), _olh_stat),
    "hr": (lambda e: HadamardResponse(6, e), _hr_stat),
}


def _audit(make, stat, eps, seed):
    oracle = make(eps)
    a = stat(oracle, _reports(oracle, 0, seed))
    b = stat(oracle, _reports(oracle, 1, seed + 1))
    return epsilon_lower_bound(a, b)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_oracle_passes_and_under_noised_fails(name):
    make, stat = CASES[name]
    seed = 100 + 10 * sorted(CASES).index(name)
    assert make(EPS).guarantee.epsilon == EPS
    real = _audit(make, stat, EPS, seed)
    assert real <= EPS, f"{name}: audit lower bound {real:.3f} exceeds the claimed ε = {EPS}"
    weak = _audit(make, stat, 2 * EPS, seed + 2)  # the same client built with 2ε, as if it claimed ε
    print(f"audit {name}: trials={TRIALS} real={real:.3f} under-noised(2ε)={weak:.3f}")
    assert weak > EPS, f"{name}: audit did not catch the under-noised variant (bound {weak:.3f})"
