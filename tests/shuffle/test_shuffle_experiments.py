"""The shuffle experiment (E1-E10) runs with --smoke; its marginal simulation and tree helpers are exact."""

import importlib.util
import json
import os

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "experiments")


def _load(name="shuffle_error"):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_experiment_smoke(tmp_path):
    pytest.importorskip("matplotlib")
    assert _load().main(["--smoke", "--out", str(tmp_path), "--seed", "1"]) == 0
    for f in ("shuffle_runs.csv", "shuffle_slopes.md", "shuffle_E1_E4.png", "shuffle_E5_E8.png"):
        assert (tmp_path / f).exists()
    labels = {r["figure"].split(":")[0] for r in json.loads((tmp_path / "fidelity.json").read_text())}
    assert labels == {f"E{i}" for i in range(1, 11)}


def test_tree_counts_and_prefixes_match_the_library_decomposition():
    from privstats.shuffle.ranges import prefix_terms

    mod = _load()
    leaf = np.random.default_rng(0).integers(0, 9, 64)
    nodes = mod._tree_counts(leaf)
    for j in range(1, 65):
        assert sum(c * nodes[k] for k, c in prefix_terms(j, 64).items()) == leaf[:j].sum()
    assert np.allclose(mod._prefix_from_tree(nodes.astype(float), 64), np.cumsum(leaf))


def test_hadamard_marginal_has_the_protocols_mean_and_variance():
    from privstats.shuffle import HadamardMultiMessage

    mod = _load()
    proto = HadamardMultiMessage(16, n=4096, epsilon=1.0, delta=1e-6)
    counts = np.bincount(np.arange(4096) % 3, minlength=16)
    g = np.random.default_rng(2)
    draws = np.array([mod.hadamard_marginal(proto, counts, g) for _ in range(400)])
    var = proto.variance(counts)
    se_mean = np.sqrt(var / 400)
    assert np.all(np.abs(draws.mean(0) - counts) < 5 * se_mean)
    # sample variance within 5 SE of its own sampling distribution (approx. normal: sd = var·sqrt(2/399))
    assert np.all(np.abs(draws.var(0, ddof=1) - var) < 5 * var * np.sqrt(2 / 399))
