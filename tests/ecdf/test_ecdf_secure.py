"""Federated ECDF: secret sharing, distributed noise, aggregation servers and DCF keys."""

import math

import numpy as np
import pytest
from scipy import stats

import privstats
from privstats.cdf.tree import BaryTreeMechanism, BinaryTreeMechanism
from privstats.secure.aggregation import (
    AggregationServer,
    ClientShare,
    SecureECDFAggregation,
    encode_client,
    open_partials,
)
from privstats.secure.dcf import DCFKeys, evaluate, full_domain_eval, gen_lt
from privstats.secure.noise import discrete_laplace_shares
from privstats.secure.sharing import reconstruct, share


def _dlap_pmf(z, scale):
    a = math.exp(-1 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(z)


def _chi2_pvalue(samples, scale, cut=12):
    zs = np.arange(-cut, cut + 1)
    obs = np.array([(samples == z).sum() for z in zs] + [(np.abs(samples) > cut).sum()])
    p = np.append(_dlap_pmf(zs, scale), 1 - _dlap_pmf(zs, scale).sum())
    return stats.chisquare(obs, p * samples.size).pvalue


@pytest.mark.parametrize("m,tolerate", [(2, 0), (3, 0), (5, 0)])
def test_noise_shares_sum_to_exact_discrete_laplace(m, tolerate):
    s = discrete_laplace_shares(2.5, size=40000, n_shares=m, tolerate=tolerate, rng=m)
    assert _chi2_pvalue(s.sum(axis=0), 2.5) > 1e-3


def test_full_noise_per_server_is_not_the_central_distribution():
    """A naive design (every server adds a full discrete Laplace) is detected by the same test."""
    from privstats.privacy import discrete_laplace

    naive = discrete_laplace(2.5, size=40000, rng=1) + discrete_laplace(2.5, size=40000, rng=2)
    assert _chi2_pvalue(naive, 2.5) < 1e-6


def test_tolerate_keeps_full_noise_among_honest_servers():
    s = discrete_laplace_shares(2.0, size=40000, n_shares=3, tolerate=1, rng=0)
    assert _chi2_pvalue(s[:2].sum(axis=0), 2.0) > 1e-3  # any 2 of 3 servers: a full DLap


def test_sharing_roundtrip_and_messages_serialise():
    v = np.array([0, 1, -7, 2**40])
    assert reconstruct(share(v, 4, rng=0)).tolist() == v.tolist()
    msgs = encode_client(3, 9, 3, rng=1)
    back = [ClientShare.from_bytes(m.to_bytes()) for m in msgs]
    mech = BinaryTreeMechanism(8, 1e9)
    servers = [AggregationServer(j, 3, mech, rng=j) for j in range(3)]
    for s, m in zip(servers, back, strict=False):
        s.receive(m)
    assert open_partials([s.partial_bytes() for s in servers]).tolist() == [0, 0, 0, 1, 1, 1, 1, 1]


@pytest.mark.parametrize(
    "mech", [BinaryTreeMechanism(16, 0.7), BaryTreeMechanism(16, 0.7, 4)], ids=lambda m: m.name
)
def test_federated_release_each_share_carries_the_central_noise(mech):
    """Every server's share alone is the central per-node law (so the guarantee survives a server that
    subtracts its own share); the opened noise is the sum of the m shares: m x the central variance."""
    cells = np.random.default_rng(0).integers(0, 16, 200)
    C = np.cumsum(np.bincount(cells, minlength=17)[:-1])
    true = mech.statistic(C)
    noise, share0 = [], []
    for r in range(600):
        proto = SecureECDFAggregation(mech, n_servers=3, rng=r)
        out = proto.run(cells) if r < 5 else proto.simulate(cells)
        noise.append(out - true)
        node = proto.servers[0].noise_shares()
        assert proto.servers[0].noise_shares() is node  # drawn once per batch
        total = sum(s.noise_shares() for s in proto.servers)
        assert np.array_equal(out - true, mech.noise_to_statistic(total))
        share0.append(node)
    assert _chi2_pvalue(np.concatenate(share0), float(mech.scale)) > 1e-3
    noise = np.array(noise)
    v = 3 * mech.count_variance()[0]
    col = noise[:, 0]
    assert proto.variance_factor == 3.0
    assert abs(col.mean()) < 5 * math.sqrt(v / col.size)
    assert abs(col.var() / v - 1) < 5 * math.sqrt(2 / col.size) * 1.6


def test_run_equals_simulate_at_large_epsilon():
    mech = BinaryTreeMechanism(32, 1e9)
    cells = np.random.default_rng(1).integers(0, 33, 300)
    a = SecureECDFAggregation(mech, n_servers=2, rng=1).run(cells)
    b = SecureECDFAggregation(mech, n_servers=2, rng=2).simulate(cells)
    assert np.array_equal(a, b) and np.array_equal(a, np.cumsum(np.bincount(cells, minlength=33)[:-1]))


def test_one_server_view_is_independent_of_the_inputs():
    """Server m-1 receives x - sum(PRG(seed)): its low byte is uniform whatever the input; servers
    0..m-2 receive fresh seeds only.  An unmasked variant is detected."""

    def view(cell, seed):
        return encode_client(cell, 4, 2, rng=seed)[1].vector[cell] & np.uint64(255)

    a = np.array([view(0, s) for s in range(3000)])
    b = np.array([view(2, 10_000 + s) for s in range(3000)])
    bins = np.arange(0, 257, 32)
    ha, hb = np.histogram(a, bins)[0], np.histogram(b, bins)[0]
    assert stats.chi2_contingency(np.vstack([ha, hb]))[1] > 1e-3
    assert stats.chisquare(ha).pvalue > 1e-3
    leaky = np.histogram(np.zeros(3000), bins)[0]  # the one-hot itself, unmasked
    assert stats.chi2_contingency(np.vstack([ha, leaky]))[1] < 1e-6
    assert encode_client(0, 4, 2, rng=5)[0].seed == encode_client(3, 4, 2, rng=5)[0].seed


def test_dcf_correctness_and_key_independence():
    rng = np.random.default_rng(2)
    alphas = rng.integers(0, 64, 300)
    k0, k1 = gen_lt(alphas, 6, rng=3)
    full = (full_domain_eval(k0) + full_domain_eval(k1)).astype(np.int64)
    assert np.array_equal(full, (np.arange(64)[None, :] < alphas[:, None]).astype(np.int64))
    for x in (0, 17, 63):
        assert np.array_equal(
            (evaluate(k0, x) + evaluate(k1, x)).astype(np.int64), (x < alphas).astype(np.int64)
        )
    assert np.array_equal(full_domain_eval(DCFKeys.from_bytes(k0.to_bytes())), full_domain_eval(k0))
    # server 0's key words look the same for alpha = 0 and alpha = 63
    lo, _ = gen_lt(np.zeros(3000, dtype=np.uint64), 6, rng=4)
    hi, _ = gen_lt(np.full(3000, 63, dtype=np.uint64), 6, rng=5)
    for field in ("cw_value", "cw_tl"):
        fa = (getattr(lo, field)[:, 2] & np.uint64(7)).astype(int)
        fb = (getattr(hi, field)[:, 2] & np.uint64(7)).astype(int)
        ta = np.bincount(fa, minlength=8)
        tb = np.bincount(fb, minlength=8)
        keep = (ta + tb) > 0
        assert stats.chi2_contingency(np.vstack([ta[keep], tb[keep]]))[1] > 1e-3


def test_public_api_secure_models_agree_with_central_at_large_epsilon():
    x = np.random.default_rng(6).uniform(0, 1, 400)
    ref = privstats.ecdf(x, epsilon=1e7, bounds=(0, 1), grid=32, smoothing="none", rng=0)
    for protocol in ("aggregation", "fss"):
        res = privstats.ecdf(
            x, epsilon=1e7, bounds=(0, 1), grid=32, smoothing="none", model="secure", protocol=protocol, rng=1
        )
        assert np.array_equal(res.probabilities, ref.probabilities)
        assert res.estimate.model == "secure" and res.estimate.messages_per_user == 2.0
