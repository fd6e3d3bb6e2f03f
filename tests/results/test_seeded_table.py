"""Same seeds, same numbers: a table of seeded results, fixed before the statistics layer was reshaped.

Each row runs one public statistic (one trust model, one method) on small seeded data with a
seeded generator and compares value and stderr with ``seeded_table.json`` (to 1e-12, relative).
Rows sit in named groups, so a deliberate change to one protocol regenerates its group only::

    PYTHONPATH=$PWD/src python tests/results/test_seeded_table.py --regen GROUP_OR_ROW ...
    PYTHONPATH=$PWD/src python tests/results/test_seeded_table.py --regen all
    PYTHONPATH=$PWD/src python tests/results/test_seeded_table.py --list

Groups: ``pairwise``, ``distribution``, ``quantiles_exponential`` (exponential and joint
exponential quantiles), ``quantiles_other``, ``frequency``, ``shuffle`` (every shuffle-model
row) and ``summarize``.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import privstats

FIXTURE = Path(__file__).with_name("seeded_table.json")
REL = 1e-12


def _data(seed: int = 7):
    g = np.random.default_rng(seed)
    n = 400
    y = (g.random(n) < 0.4).astype(int)
    s = np.clip(0.5 * g.random(n) + 0.4 * y, 0.0, 1.0)
    x = g.random(n)
    z = np.clip(x + 0.3 * g.standard_normal(n), 0.0, 1.0)
    cat = g.integers(0, 8, size=n)
    zipf = np.minimum(g.zipf(1.6, size=3000) - 1, 31)
    p = np.round(np.clip(g.beta(2.0, 5.0, size=n), 0.01, 0.99), 4)
    yy = (g.random(n) < p).astype(int)
    return {"y": y, "s": s, "x": x, "z": z, "cat": cat, "zipf": zipf, "p": p, "yy": yy}


D = _data()


def _r(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _pairwise() -> dict[str, Callable]:
    y, s, x, z, cat = D["y"], D["s"], D["x"], D["z"], D["cat"]
    xo, zo = np.round(x * 5), np.round(z * 5)
    return {
        "auc_central": lambda: privstats.auc(y, s, epsilon=1.0, rng=_r(1)),
        "auc_secure": lambda: privstats.auc(y, s, epsilon=1.0, model="secure", rng=_r(2)),
        "auc_local_auto": lambda: privstats.auc(y, s, epsilon=2.0, model="local", rng=_r(3)),
        "auc_local_quantized": lambda: privstats.auc(
            y, s, epsilon=2.0, model="local", method="quantized", rng=_r(4)
        ),
        "auc_local_tree": lambda: privstats.auc(y, s, epsilon=2.0, model="local", method="tree", rng=_r(5)),
        "kendall_tau_central": lambda: privstats.kendall_tau(x, z, epsilon=1.0, rng=_r(6)),
        "kendall_tau_central_a": lambda: privstats.kendall_tau(xo, zo, epsilon=1.0, variant="a", rng=_r(7)),
        "kendall_tau_secure": lambda: privstats.kendall_tau(x, z, epsilon=1.0, model="secure", rng=_r(8)),
        "kendall_tau_local": lambda: privstats.kendall_tau(
            x, z, epsilon=2.0, model="local", bounds=(0, 1), rng=_r(9)
        ),
        "gmd_central": lambda: privstats.gini_mean_difference(x, epsilon=1.0, bounds=(0, 1), rng=_r(10)),
        "gmd_secure": lambda: privstats.gini_mean_difference(
            x, epsilon=1.0, bounds=(0, 1), model="secure", rng=_r(11)
        ),
        "gmd_local": lambda: privstats.gini_mean_difference(
            x, epsilon=2.0, bounds=(0, 1), model="local", rng=_r(12)
        ),
        "gini_coefficient_central": lambda: privstats.gini_coefficient(
            x, epsilon=1.0, bounds=(0, 1), rng=_r(13)
        ),
        "gini_coefficient_local": lambda: privstats.gini_coefficient(
            x, epsilon=2.0, bounds=(0, 1), model="local", rng=_r(14)
        ),
        "collision_central": lambda: privstats.collision_probability(
            cat, epsilon=1.0, domain_size=8, rng=_r(15)
        ),
        "collision_secure": lambda: privstats.collision_probability(
            cat, epsilon=1.0, domain_size=8, model="secure", rng=_r(16)
        ),
        "collision_local": lambda: privstats.collision_probability(
            cat, epsilon=2.0, domain_size=8, model="local", rng=_r(17)
        ),
        "ustat_central": lambda: privstats.ustatistic(
            x, lambda a, b: np.abs(a - b), epsilon=1.0, bounds=(0, 1), kernel_range=(0, 1), rng=_r(18)
        ),
        "ustat_secure": lambda: privstats.ustatistic(
            x,
            lambda a, b: np.abs(a - b),
            epsilon=1.0,
            bounds=(0, 1),
            kernel_range=(0, 1),
            model="secure",
            rng=_r(19),
        ),
        "ustat_local": lambda: privstats.ustatistic(
            x, lambda a, b: np.abs(a - b), epsilon=2.0, bounds=(0, 1), model="local", rng=_r(20)
        ),
        "ustat_matrix_local": lambda: privstats.ustatistic(
            cat,
            np.abs(np.subtract.outer(np.arange(8), np.arange(8))) / 7,
            epsilon=2.0,
            model="local",
            rng=_r(21),
        ),
        "ustat_matrix_central": lambda: privstats.ustatistic(
            cat, np.abs(np.subtract.outer(np.arange(8), np.arange(8))) / 7, epsilon=1.0, rng=_r(22)
        ),
    }


def _distribution() -> dict[str, Callable]:
    x, y, s, p, yy = D["x"], D["y"], D["s"], D["p"], D["yy"]
    return {
        "ecdf_central": lambda: privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), grid=64, rng=_r(30)),
        "ecdf_secure": lambda: privstats.ecdf(
            x, epsilon=1.0, bounds=(0, 1), grid=64, model="secure", rng=_r(31)
        ),
        "ecdf_local": lambda: privstats.ecdf(
            x, epsilon=2.0, bounds=(0, 1), grid=64, model="local", rng=_r(32)
        ),
        "roc_central": lambda: privstats.roc_curve(y, s, epsilon=1.0, grid=64, rng=_r(33)),
        "roc_secure": lambda: privstats.roc_curve(y, s, epsilon=1.0, grid=64, model="secure", rng=_r(34)),
        "roc_local": lambda: privstats.roc_curve(y, s, epsilon=2.0, grid=64, model="local", rng=_r(35)),
        "hl_central": lambda: privstats.hosmer_lemeshow(yy, p, epsilon=4.0, bootstrap=200, rng=_r(36)),
        "hl_secure": lambda: privstats.hosmer_lemeshow(
            yy, p, epsilon=4.0, bootstrap=200, model="secure", rng=_r(37)
        ),
    }


def _quantiles_exponential() -> dict[str, Callable]:
    x = D["x"]
    return {
        "quantiles_exponential": lambda: privstats.quantiles(
            x, [0.25, 0.5], epsilon=1.0, bounds=(0, 1), method="exponential", rng=_r(40)
        ),
        "quantiles_joint": lambda: privstats.quantiles(
            x, [0.25, 0.5, 0.75], epsilon=1.0, bounds=(0, 1), method="joint", rng=_r(41)
        ),
    }


def _quantiles_other() -> dict[str, Callable]:
    x = D["x"]
    return {
        "quantiles_central_tree": lambda: privstats.quantiles(
            x, [0.5], epsilon=1.0, bounds=(0, 1), method="tree", grid=256, rng=_r(42)
        ),
        "quantiles_secure": lambda: privstats.quantiles(
            x, [0.5], epsilon=1.0, bounds=(0, 1), model="secure", grid=256, rng=_r(43)
        ),
        "quantiles_local": lambda: privstats.quantiles(
            x, [0.5], epsilon=2.0, bounds=(0, 1), model="local", grid=256, rng=_r(44)
        ),
    }


def _frequency() -> dict[str, Callable]:
    zipf = D["zipf"]
    return {
        "frequencies_central": lambda: privstats.frequencies(
            zipf, domain=32, epsilon=1.0, model="central", rng=_r(50)
        ),
        "frequencies_local": lambda: privstats.frequencies(
            zipf, domain=32, epsilon=2.0, model="local", rng=_r(51)
        ),
        "range_counts_central": lambda: privstats.range_counts(
            zipf, [(0, 4), (3, 20)], domain=32, epsilon=1.0, model="central", rng=_r(52)
        ),
        "range_counts_local": lambda: privstats.range_counts(
            zipf, [(0, 4), (3, 20)], domain=32, epsilon=2.0, model="local", rng=_r(53)
        ),
        "heavy_hitters_central": lambda: privstats.heavy_hitters(
            zipf, domain=32, epsilon=1.0, model="central", rng=_r(54)
        ),
        "heavy_hitters_local": lambda: privstats.heavy_hitters(
            zipf, domain=32, epsilon=4.0, model="local", rng=_r(55)
        ),
    }


def _shuffle() -> dict[str, Callable]:
    zipf, x = D["zipf"], D["x"]
    return {
        "frequencies_shuffle": lambda: privstats.frequencies(
            zipf, domain=32, epsilon=1.0, delta=1e-6, model="shuffle", rng=_r(60)
        ),
        "range_counts_shuffle": lambda: privstats.range_counts(
            zipf, [(0, 4), (3, 20)], domain=32, epsilon=1.0, delta=1e-6, model="shuffle", rng=_r(61)
        ),
        "heavy_hitters_shuffle": lambda: privstats.heavy_hitters(
            zipf, domain=32, epsilon=2.0, delta=1e-6, model="shuffle", rng=_r(62)
        ),
        "quantiles_shuffle": lambda: privstats.quantiles(
            np.tile(x, 8), [0.5], epsilon=1.0, bounds=(0, 1), model="shuffle", delta=1e-6, rng=_r(63)
        ),
    }


def _summarize() -> dict[str, Callable]:
    g = np.random.default_rng(70)
    owners = [g.normal(size=(40, 3)), g.normal(0.5, 1.0, size=(40, 3))]
    target = g.normal(0.2, 1.0, size=(30, 3))
    return {
        "summarize_private": lambda: privstats.summarize(
            owners, target, size=6, epsilon=2.0, delta=1e-6, n_features=32, rng=_r(71)
        ),
        "summarize_nonprivate": lambda: privstats.summarize(
            owners, target, size=6, method="greedy", n_features=32, rng=_r(72)
        ),
    }


GROUPS: dict[str, Callable[[], dict[str, Callable]]] = {
    "pairwise": _pairwise,
    "distribution": _distribution,
    "quantiles_exponential": _quantiles_exponential,
    "quantiles_other": _quantiles_other,
    "frequency": _frequency,
    "shuffle": _shuffle,
    "summarize": _summarize,
}


def _floats(a) -> list | None:
    if a is None:
        return None
    return np.asarray(a, dtype=float).ravel().tolist()


def record(result) -> dict:
    """The numbers of one result: value and stderr (ECDFs: values and stderr; summaries: indices, mmd2)."""
    if isinstance(result, tuple):  # roc_curve: fpr, tpr, thresholds, Estimate
        fpr, tpr, _, est = result
        return {"fpr": _floats(fpr), "tpr": _floats(tpr), **record(est)}
    if hasattr(result, "mmd2"):
        return {"value": [float(result.mmd2)], "order": np.asarray(result.order).ravel().tolist()}
    if hasattr(result, "probabilities"):  # PrivateECDF
        return {
            "value": _floats(result.probabilities),
            "stderr": _floats(result.stderr),
            "raw": _floats(result.raw),
        }
    out = {"value": _floats(result.value), "stderr": _floats(result.stderr), "protocol": result.protocol}
    if "unbiased" in result.details:
        out["unbiased"] = _floats(result.details["unbiased"])
    return out


def compute(row: str) -> dict:
    for group, make in GROUPS.items():
        cases = make()
        if row in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = record(cases[row]())
            return {"group": group, **out}
    raise KeyError(row)


def all_rows() -> list[tuple[str, str]]:
    return [(g, r) for g, make in GROUPS.items() for r in make()]


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if len(a) != len(b):
        return False
    for u, v in zip(a, b, strict=True):
        if isinstance(u, int) and isinstance(v, int):
            if u != v:
                return False
            continue
        if math.isnan(u) or math.isnan(v):
            if not (math.isnan(u) and math.isnan(v)):
                return False
            continue
        if not math.isclose(u, v, rel_tol=REL, abs_tol=1e-300 if u == v else REL * 1e-3):
            return False
    return True


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


@pytest.mark.parametrize("group,row", all_rows(), ids=[r for _, r in all_rows()])
def test_seeded_row_is_unchanged(group, row):
    table = _fixture()
    assert row in table, f"row {row!r} missing: regenerate it with --regen {row}"
    want = table[row]
    got = compute(row)
    assert got["group"] == want["group"] == group
    for key in want:
        if key == "group":
            continue
        assert _close(got.get(key), want[key]), f"{row}.{key}: got {got.get(key)}, want {want[key]}"


def test_a_changed_number_is_caught():
    assert not _close([0.5, 1.0], [0.5, 1.0 + 1e-9])
    assert _close([0.5, float("nan")], [0.5, float("nan")])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for g, r in all_rows():
            print(f"{g}\t{r}")
        return 0
    if argv[:1] != ["--regen"] or len(argv) < 2:
        print(__doc__)
        return 2
    names = set(argv[1:])
    table = _fixture()
    for g, r in all_rows():
        if "all" in names or g in names or r in names:
            table[r] = compute(r)
            print("regenerated", r)
    FIXTURE.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
