"""The DAP release is the in-process secure release: for the same noise draws, the collector's
opening of the two noisy Prio3 aggregate shares equals ``release_in_process`` exactly, so the two
paths are equal in law (each aggregator's noise share is ``server_noise``, exact, OS CSPRNG when
``rng`` is None)."""

from __future__ import annotations

import numpy as np
import pytest

from privstats.privacy.randomness import as_source
from privstats.secure.leader_helper import SecureSpec, release_in_process
from privstats.services.dap.dp import noisy_share, open_noisy

P128 = 2**128 - 7 * 2**66 + 1  # Prio3Histogram's Field128


@pytest.mark.parametrize("method", ["binary", "auto"])
def test_dap_opening_equals_in_process_release(method):
    spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=63, method=method)
    x = np.random.default_rng(1).beta(2, 5, size=3000)
    hist = np.bincount(spec.cells(x).ravel(), minlength=spec.n_cells)
    mask = [int(v) for v in np.random.default_rng(2).integers(0, 2**63, size=spec.n_cells)]
    leader = [(int(h) + m) % P128 for h, m in zip(hist, mask, strict=True)]  # additive shares of hist
    helper = [(-m) % P128 for m in mask]
    src = as_source(99)
    shares = [noisy_share(spec, leader, P128, 0, rng=src), noisy_share(spec, helper, P128, 1, rng=src)]
    ours = open_noisy(spec, shares[0], shares[1], P128, x.size)
    ref = release_in_process(spec, x, rng=99)
    np.testing.assert_allclose(ours.raw, ref.raw, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.stderr, ref.stderr, rtol=0, atol=1e-12)
    # and a different draw gives a different release (the noise is really there)
    other = open_noisy(
        spec,
        *[noisy_share(spec, s, P128, p, rng=as_source(7)) for p, s in ((0, leader), (1, helper))],
        P128,
        x.size,
    )
    assert not np.allclose(other.raw, ref.raw)


def test_noisy_share_checks_its_input():
    spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=7)
    with pytest.raises(ValueError, match="agg_share"):
        noisy_share(spec, [0] * 3, P128, 0)
