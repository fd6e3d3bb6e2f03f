"""Public API: frequencies / range_counts / heavy_hitters / quantiles under shuffle, local, central."""

import numpy as np
import pytest

import privstats
from privstats.stats.distribution.shuffle_quantiles import shuffle_quantiles

X = np.random.default_rng(0).integers(0, 8, 3000)
TRUTH = np.bincount(X, minlength=8)


@pytest.mark.parametrize(
    "model,protocol",
    [
        ("shuffle", None),
        ("shuffle", "single"),
        ("shuffle", "single-rr"),
        ("shuffle", "single-rappor"),
        ("shuffle", "multi-hadamard"),
        ("local", None),
        ("central", None),
    ],
)
def test_frequencies_all_models(model, protocol):
    est = privstats.frequencies(X, domain=8, epsilon=1.0, delta=1e-6, model=model, protocol=protocol, rng=1)
    assert est.model == model and est.value.shape == (8,)
    assert est.messages_per_user is not None and est.bits_per_user is not None
    assert np.all(np.abs(est.value - TRUTH) <= 6 * est.stderr)
    if model == "shuffle":
        assert est.guarantee.delta == 1e-6 and est.params["n"] == 3000


def test_frequencies_countmin_and_labels():
    est = privstats.frequencies(X, domain=8, epsilon=1.0, delta=1e-6, protocol="multi-countmin", rng=1, tau=2)
    assert est.protocol == "shuffle-countmin" and est.messages_per_user > 2
    labels = ["a", "b", "c"]
    est = privstats.frequencies(["a", "c", "c"] * 500, domain=labels, epsilon=1.0, model="central", rng=0)
    assert est.value.shape == (3,)


def test_frequencies_bad_input():
    with pytest.raises(ValueError, match="values"):
        privstats.frequencies([0, 9], domain=8, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        privstats.frequencies(X, domain=8, epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        privstats.frequencies(X, domain=8, epsilon=1.0, delta=1.0)
    with pytest.raises(ValueError, match="model"):
        privstats.frequencies(X, domain=8, epsilon=1.0, model="trusted")
    with pytest.raises(ValueError, match="protocol"):
        privstats.frequencies(X, domain=8, epsilon=1.0, protocol="multi-magic")
    with pytest.raises(ValueError, match="not in domain"):
        privstats.frequencies(["z"], domain=["a", "b"], epsilon=1.0)
    with pytest.raises(ValueError, match="k-RR cannot reach"):  # too few users for Balle et al.'s blanket
        privstats.frequencies(
            X[:200], domain=8, epsilon=0.5, delta=1e-6, protocol="single-rr", calibration="balle"
        )
    with pytest.raises(ValueError, match="n must be"):  # below the minimum batch of users
        privstats.frequencies([3], domain=8, epsilon=0.5, delta=1e-6, protocol="single-rr")


def test_range_counts_1d_and_2d_within_error():
    x = np.random.default_rng(2).integers(0, 8, 2000)
    ranges = [(0, 8), (2, 5), (7, 8), (3, 3)]
    truth = np.array([((x >= lo) & (x < hi)).sum() for lo, hi in ranges])
    for model in ("shuffle", "central", "local"):
        est = privstats.range_counts(x, ranges, domain=8, epsilon=1.0, delta=1e-6, model=model, rng=3)
        assert np.all(np.abs(est.value - truth) <= 6 * est.stderr + 1e-9), model
    pts = np.random.default_rng(4).integers(0, 4, (2000, 2))
    boxes = [[(0, 2), (1, 4)], [(1, 3), (0, 4)]]
    truth2 = np.array(
        [
            np.all([(pts[:, s] >= lo) & (pts[:, s] < hi) for s, (lo, hi) in enumerate(b)], axis=0).sum()
            for b in boxes
        ]
    )
    est = privstats.range_counts(pts, boxes, domain=4, epsilon=1.0, model="central", rng=5)
    assert np.all(np.abs(est.value - truth2) <= 6 * est.stderr)
    with pytest.raises(ValueError, match="range"):
        privstats.range_counts(x, [(3, 9)], domain=8, epsilon=1.0)
    with pytest.raises(ValueError, match="ranges is required"):
        privstats.range_counts(pts, None, domain=4, epsilon=1.0)


def test_quantiles_shuffle_and_delegation():
    x = np.random.default_rng(6).uniform(0, 1, 3000)
    est = shuffle_quantiles(x, [0.25, 0.5, 0.75], epsilon=1.0, delta=1e-6, bounds=(0, 1), bins=8, rng=7)
    assert np.all(np.abs(est.value - [0.25, 0.5, 0.75]) <= 0.125 + 1e-9)
    assert est.messages_per_user > 1
    via = privstats.quantiles(
        x, [0.5], epsilon=1.0, delta=1e-6, bounds=(0, 1), model="shuffle", bins=8, rng=7
    )
    assert via.model == "shuffle"
    with pytest.raises(ValueError, match="bounds"):
        shuffle_quantiles(x, [0.5], epsilon=1.0, delta=1e-6, bounds=None)
    with pytest.raises(ValueError, match="power of two"):
        shuffle_quantiles(x, [0.5], epsilon=1.0, delta=1e-6, bounds=(0, 1), bins=6)


@pytest.mark.parametrize("model", ["shuffle", "central"])
def test_heavy_hitters_finds_planted_items(model):
    g = np.random.default_rng(8)
    x = np.concatenate([np.full(2500, 11), np.full(1500, 40), g.integers(0, 64, 2000)])
    est = privstats.heavy_hitters(x, domain=64, epsilon=1.0, delta=1e-6, model=model, rng=9)
    found = set(est.value.tolist())
    assert {11, 40} <= found
    assert len(found) <= 4  # background items (~31 each) are far below the threshold
