"""Hosmer–Lemeshow in the secure model: a post-processing of the two released class curves.

Checked against the noise-free value of the same post-processing (zero noise), with tolerances
from the measured spread; the stderr against the spread over seeds; the p-value's level under a
calibrated model.  The in-process release equals the DAP deployment's opening for the same noise
draws (tests/dap/test_dp_law.py).
"""

import numpy as np
import pytest

import privstats
from privstats.secure.histogram import SecureSpec, release_in_process
from privstats.secure.hosmer_lemeshow import hl_from_class_counts


def _data(n, slope, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < np.clip(slope * p, 0, 1)).astype(int)
    return p, y


def _noise_free(spec, p, y, floor=None):
    """The noise-free H, or with ``floor`` (a release's public V floor) the estimand
    Σ r² / max(V, floor) of ``details["unbiased"]`` (issue 26: weights capped where noise hides V)."""
    k = spec.internal.size
    hist = np.bincount(spec.cells(p, y).ravel(), minlength=2 * (k + 1))
    pos, neg = np.cumsum(hist[: k + 1]), np.cumsum(hist[k + 1 :])
    zero = np.zeros((k + 1, k + 1))
    r = hl_from_class_counts(pos, neg, zero, zero, spec.internal, 0.0, bootstrap=100, rng=0)
    if floor is None:
        return r["H"]
    E1, E0 = r["E1"], r["E0"]
    return float(np.sum(r["O_minus_E"] ** 2 / np.maximum(E1 * E0 / (E1 + E0), floor)))


@pytest.mark.parametrize("grid,epsilon", [(64, 1.0), (16, 1.0), (64, 4.0)])
def test_unbiased_with_an_honest_stderr(grid, epsilon):
    """n = 6000 (the issue's HL case): mean of 120 releases within 5 SE of the noise-free H, and the
    reported stderr within [0.8, 1.25] of the measured spread."""
    p, y = _data(6000, 1.15, 0)
    spec = SecureSpec("hosmer_lemeshow", epsilon=epsilon, bounds=(0, 1), grid=grid)
    runs = [release_in_process(spec, p, y, rng=s) for s in range(120)]
    vals = np.array([e.details["unbiased"] for e in runs])
    se = np.array([e.stderr for e in runs])
    exact = _noise_free(spec, p, y, runs[0].details["V_floor"])
    assert abs(vals.mean() - exact) < 5 * vals.std(ddof=1) / np.sqrt(vals.size)
    assert 0.8 < se.mean() / vals.std(ddof=1) < 1.25
    # replace-one (a record may change its label): the batch size is public and reported
    assert all(e.guarantee.epsilon == epsilon and e.n == 6000 for e in runs[:3])


def test_p_value_keeps_its_level_and_detects_miscalibration():
    spec = SecureSpec("hosmer_lemeshow", epsilon=1.0, bounds=(0, 1), grid=64)
    p, y = _data(6000, 1.0, 1)
    pv = np.array([release_in_process(spec, p, y, rng=s).details["p_value"] for s in range(150)])
    # level: at most 5% + 3 binomial SE rejections at 0.05 (the Binomial null is conservative)
    assert np.mean(pv < 0.05) < 0.05 + 3 * np.sqrt(0.05 * 0.95 / pv.size)
    p, y = _data(6000, 1.15, 2)
    assert release_in_process(spec, p, y, rng=7).details["p_value"] < 0.01


def test_public_function_and_bad_input():
    p, y = _data(3000, 1.0, 4)
    est = privstats.hosmer_lemeshow(y, p, epsilon=1.0, model="secure", rng=5)
    assert est.model == "secure" and est.params["groups"] == 10 and np.isfinite(est.stderr)
    with pytest.raises(ValueError, match="labels"):
        release_in_process(SecureSpec("hosmer_lemeshow", epsilon=1.0, bounds=(0, 1), grid=16), p)
    with pytest.raises(ValueError, match="bounds"):
        SecureSpec("hosmer_lemeshow", epsilon=1.0, bounds=(0, 2), grid=16)


def test_the_interval_law_draws_the_servers_own_noise():
    """The interval's simulated law adds each server's discrete Laplace on the tree's nodes, through
    the consistent estimate (``prefix_noise_law``), not normal noise of the same covariance: over
    40,000 draws its covariance is the mechanism's, and the total count's noise lies within 1.96 sd
    as often as the servers' real draws do (0.943, where a normal gives 0.950; 4 Monte Carlo sd).  With
    the normal law the interval covered 0.940 over the real-data table's 20 secure cells, now 0.948."""
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.histogram import prefix_noise_law
    from privstats.secure.noise import noise_variance_factor, server_noise_share

    spec = SecureSpec("hosmer_lemeshow", epsilon=1.0, bounds=(0, 1), grid=64)
    mech = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2))
    base, draws = mech.mechanism, 40_000
    shares = [
        server_noise_share(base.scale, draws * base.n_nodes, server=s, n_servers=2, rng=10 + s)
        for s in (0, 1)
    ]
    nodes = (shares[0] + shares[1]).reshape(draws, base.n_nodes)
    stat0 = base.statistic(np.zeros(base.n_points, dtype=np.int64))
    ref = base.estimate_counts(stat0, None)
    real = np.array([base.estimate_counts(stat0 + base.noise_to_statistic(r), None) - ref for r in nodes])
    law = prefix_noise_law(mech)(np.random.default_rng(1), draws)
    cov = mech.count_covariance()[: law.shape[1], : law.shape[1]]
    assert np.abs(np.cov(law.T) - cov).max() < 0.03 * np.abs(cov).max()
    sd = float(np.sqrt(cov[-1, -1]))
    inside_real = np.mean(np.abs(real[:, -1]) <= 1.96 * sd)
    inside_law = np.mean(np.abs(law[:, -1]) <= 1.96 * sd)
    mc = np.sqrt(0.95 * 0.05 / draws)
    assert abs(inside_law - inside_real) <= 4 * np.sqrt(2) * mc, (inside_law, inside_real)
    assert inside_real < 0.95 - 4 * mc, inside_real  # the normal law's 0.95 is not the servers'
