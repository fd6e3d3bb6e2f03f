"""Privacy audit of central-model noise, the ECDF tree mechanisms and the exponential-mechanism quantile.

ε = 1, alpha = 1e-3, T = 10 000 runs per input unless stated.  "Under-noised" is the same
mechanism constructed with 2ε while the claim is ε.  Planned bounds (expected counts,
``expected_epsilon_lower_bound``, computed before running) are quoted per test.
(Count noise is audited in tests/core/test_core_central.py.)
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from privstats.cdf.quantiles import exponential_quantile
from privstats.cdf.tree import BaryTreeMechanism, BinaryTreeMechanism, choose_mechanism
from privstats.central import add_real_noise
from privstats.privacy.audit import epsilon_lower_bound
from privstats.privacy.samplers import discrete_laplace

EPS, TRIALS = 1.0, 10_000


# ------------------------------------------------------------------------------- real-valued noise
def test_real_noise_audit():
    """Neighbours: statistic 0 vs 1 with sensitivity 1 (the sensitivity is attained).  Output: the noisy value.
    Planned: real 0.85, under-noised 1.78 (best events are the tails {o ≥ t})."""

    def run(eps, value, seed):
        return add_real_noise(np.full(TRIALS, value), eps, sensitivity=1.0, rng=seed)[0]

    real = epsilon_lower_bound(run(EPS, 0.0, 1), run(EPS, 1.0, 2))
    weak = epsilon_lower_bound(run(2 * EPS, 0.0, 3), run(2 * EPS, 1.0, 4))
    print(f"audit real-noise: trials={TRIALS} real={real:.3f} under-noised(2ε)={weak:.3f}")
    assert real <= EPS < weak


# ------------------------------------------------------------------------------- tree mechanisms
def _releases(mech, cum_counts, seed):
    """T independent releases: the mechanism's statistic plus its node noise mapped by its own
    ``noise_to_statistic`` (= ``release``, with the node noise drawn for all trials in one batch)."""
    noise = np.asarray(discrete_laplace(mech.scale, size=(TRIALS, mech.n_nodes), rng=seed), dtype=np.int64)
    paths = np.apply_along_axis(mech.noise_to_statistic, 1, noise)
    return mech.statistic(np.asarray(cum_counts, dtype=np.int64))[None, :] + paths


def test_release_batch_matches_release():
    mech = BinaryTreeMechanism(5, EPS)
    cum = np.array([1, 2, 4, 4, 6])
    one = mech.release(cum, rng=7)
    np.testing.assert_array_equal(one, mech.statistic(cum) + mech.noise_to_statistic(mech.draw_noise(rng=7)))


@pytest.mark.parametrize("method", ["auto", "b-ary:2"])
def test_bary_tree_audit(method):
    """Replace-one, 4 grid points, n = 5 public: one record moves from cell 0 to cell 3
    (histograms (2,1,1,1) → (1,1,1,2)), which changes 2h non-root nodes by ±1 — the whole
    sensitivity.  The release is the noisy node counts (independent discrete Laplace), so
    the log-likelihood ratio is Σ_nodes (|y − c_A| − |y − c_B|)/scale; the statistic is
    that sum (scale-free).  "auto" picks the 4-ary tree (h = 1, a noisy histogram);
    "b-ary:2" has h = 2.  Planned: auto real 0.86 / under-noised 1.83; b-ary:2 0.68 / 1.64."""
    hist_a, hist_b = np.array([2, 1, 1, 1]), np.array([1, 1, 1, 2])
    ca, cb = np.cumsum(hist_a), np.cumsum(hist_b)

    def audit(eps, seed):
        mech = choose_mechanism(4, eps, "replace", method)
        assert isinstance(mech, BaryTreeMechanism)
        na, nb = mech.statistic(ca), mech.statistic(cb)
        assert np.abs(na - nb).sum() == mech.sensitivity  # the worst case is attained

        def llr(y):
            return (np.abs(y - na) - np.abs(y - nb)).sum(axis=1)

        return epsilon_lower_bound(_releases(mech, ca, seed), _releases(mech, cb, seed + 1), statistic=llr)

    real, weak = audit(EPS, 10), audit(2 * EPS, 12)
    print(f"audit ecdf {method}: trials={TRIALS} real={real:.3f} under-noised(2ε)={weak:.3f}")
    assert real <= EPS < weak


def test_binary_tree_audit_add_remove():
    """The paper's binary tree, add/remove neighbours, 2 grid points (L = 1, sensitivity 1 node):
    adding a record above τ₁ raises C₂ only.  The release is y = C + (e₀ + r, e₁ + r)
    (leaf noises e, root noise r); the statistic is its exact log-likelihood ratio,
    ln Σ_r p(r)p(u−r)p(v−1−r) − ln Σ_r p(r)p(u−r)p(v−r) with u, v the offsets from C_A.
    Planned: real 0.71, under-noised 1.74.

    Replace-one is not audited here: at test-friendly grids its sensitivity L+1 is not
    attained (with C_N = n public the changed interval needs at most L nodes, fewer for
    N < 8, and the path sums share noise), so a 2ε tree stays below ε; the same release
    code is exercised by this add/remove audit."""
    ca, cb = np.array([3, 5]), np.array([3, 6])
    r = np.arange(-80, 81)

    def audit(eps, seed):
        mech = BinaryTreeMechanism(2, eps, neighbours="add-remove")
        assert mech.sensitivity == 1
        s = float(mech.scale)

        def llr(y):
            u, v = (y[:, 0] - ca[0])[:, None], (y[:, 1] - ca[1])[:, None]
            base = -(np.abs(r)[None, :] + np.abs(u - r)) / s
            return logsumexp(base - np.abs(v - 1 - r) / s, axis=1) - logsumexp(
                base - np.abs(v - r) / s, axis=1
            )

        return epsilon_lower_bound(_releases(mech, ca, seed), _releases(mech, cb, seed + 1), statistic=llr)

    real, weak = audit(EPS, 20), audit(2 * EPS, 22)
    print(f"audit ecdf binary add-remove: trials={TRIALS} real={real:.3f} under-noised(2ε)={weak:.3f}")
    assert real <= EPS < weak


# ------------------------------------------------------------------------------- exponential-mechanism quantile
def _em_log_density(sorted_x, q, eps, bounds=(0.0, 1.0)):
    """Independent reference: Smith's density, piecewise constant on the intervals between order statistics."""
    z = np.concatenate([[bounds[0]], np.clip(sorted_x, *bounds), [bounds[1]]])
    n = sorted_x.size
    lengths = np.diff(z)
    with np.errstate(divide="ignore"):  # empty intervals (tied points) have weight 0
        logw = np.log(lengths) - eps / 2 * np.abs(np.arange(n + 1) - q * n)
    log_mass = logw - logsumexp(logw)

    def log_density(o):
        i = np.clip(np.searchsorted(z, o, side="right") - 1, 0, n)
        return log_mass[i] - np.log(lengths[i])

    return log_density


def test_exponential_quantile_audit():
    """Median of n = 4 in bounds (0, 1), replace-one: 0.0 → 1.0 in (0.0, 0.1, 0.1, 0.3), which shifts the
    rank of every interval above 0.3 across the median.  Found by an exhaustive search over datasets on a
    0.1 grid (n ≤ 4) maximizing the planned bound of the 2ε mechanism.  Statistic: the exact
    log-likelihood ratio of the output.  Planned: real 0.65, under-noised 1.54."""
    xa, xb = np.array([0.0, 0.1, 0.1, 0.3]), np.array([0.1, 0.1, 0.3, 1.0])

    def audit(eps, seed):
        g = np.random.default_rng(seed)
        outs = [
            np.array([exponential_quantile(x, 0.5, epsilon=eps, bounds=(0, 1), rng=g) for _ in range(TRIALS)])
            for x in (xa, xb)
        ]
        la, lb = _em_log_density(xa, 0.5, eps), _em_log_density(xb, 0.5, eps)
        return epsilon_lower_bound(outs[0], outs[1], statistic=lambda o: la(o) - lb(o))

    real, weak = audit(EPS, 30), audit(2 * EPS, 31)
    print(f"audit exponential quantile: trials={TRIALS} real={real:.3f} under-noised(2ε)={weak:.3f}")
    assert real <= EPS < weak
