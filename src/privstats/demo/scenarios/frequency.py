"""Scenarios: frequency oracles, frequencies and range counts (Zipf data)."""

from __future__ import annotations

import math
import time

import numpy as np

from privstats.demo.config import SHUFFLE_DELTA, SHUFFLE_RANGE_USERS
from privstats.demo.running import _call, _Context, _float, _public, _the_estimate
from privstats.estimate import TRUST_MODELS


# ----------------------------------------------------------------------------- scenarios
def _oracle_instances(d: int, eps: float):
    from privstats import local

    for name in ("GRR", "OUE", "OLH", "HadamardResponse"):
        cls = getattr(local, name, None)
        if cls is None:
            yield name, None, f"privstats.local.{name} is not available yet"
            continue
        try:
            yield name, cls(d, eps), ""
        except ValueError as exc:  # e.g. a domain the oracle does not accept
            yield name, None, f"{name}(d={d}) does not apply: {exc}"
    chooser = getattr(local, "best_oracle", None)
    if chooser is None:
        yield "best_oracle", None, "privstats.local.best_oracle is not available yet"
    else:
        chosen = chooser(d, eps)
        chosen = chosen(d, eps) if isinstance(chosen, type) else chosen
        yield f"best_oracle → {type(chosen).__name__}", chosen, ""


def scenario_oracles(ctx: _Context) -> None:
    """Frequency estimation of a Zipf sample under each local frequency oracle."""
    from privstats.local import BinaryRR

    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    true_counts = np.bincount(values, minlength=d)
    seen: set[str] = set()
    for eps in ctx.epsilons:
        cases = list(_oracle_instances(d, eps))
        cases.append(("BinaryRR (item 0 vs rest)", BinaryRR(eps), ""))
        for name, oracle, why in cases:
            if oracle is None:
                if name not in seen:
                    seen.add(name)
                    ctx.result.unavailable.append(f"oracle {name}: {why}")
                continue
            binary = isinstance(oracle, BinaryRR)
            x = (values != 0).astype(np.int64) if binary else values
            truth = np.bincount(x, minlength=2) if binary else true_counts
            t0 = time.perf_counter()
            try:
                est = oracle.estimate(oracle.simulate(x, rng=ctx.rng_seed("oracle", name, eps)))
            except Exception as exc:
                ctx.note(f"oracle {name} at ε={eps:g} failed: {type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - t0
            err = np.abs(np.asarray(est.value, dtype=float) - truth) / n
            exact_std = math.sqrt(float(np.mean(oracle.variance(n, truth)))) / n
            ctx.result.oracle_rows.append(
                {
                    "oracle": name,
                    "domain": int(truth.size),
                    "epsilon": float(eps),
                    "n": int(n),
                    "max_abs_error": float(err.max()),
                    "mean_abs_error": float(err.mean()),
                    "exact_std": exact_std,
                    "bits_per_user": _float(est.bits_per_user),
                    "time_s": elapsed,
                }
            )


def _share_reader(n: int, item: int = 0):
    def read(out):
        est = _the_estimate(out)
        value = np.asarray(est.value, dtype=float)
        se = None if est.stderr is None else np.asarray(est.stderr, dtype=float)[item] / n
        return value[item] / n, se

    return read


def scenario_frequencies(ctx: _Context) -> None:
    """``privstats.frequencies`` of the Zipf sample: share of the most frequent item, per trust model."""
    fn = _public("frequencies")
    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    truth = np.bincount(values, minlength=d) / n

    def max_err(out):
        err = np.abs(np.asarray(_the_estimate(out).value, dtype=float) / n - truth)
        return {
            "max_abs_error_all_items": float(err.max()),
            "note": f"max |error| over all {d} items {err.max():.3g}",
        }

    def body(model, eps):
        kw = dict(domain=d, domain_size=d, epsilon=eps, model=model)
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
        ctx.measure(
            "frequency of item 0",
            model,
            eps,
            lambda seed: _call(fn, values, rng=seed, **kw),
            _share_reader(n),
            float(truth[0]),
            extra=max_err,
        )

    ctx.each_model("frequencies", TRUST_MODELS, body, plan={"n": n, "domain": d})


def scenario_range_counts(ctx: _Context) -> None:
    """``privstats.range_counts`` of the Zipf sample: the share of users in the first eighth of the domain."""
    fn = _public("range_counts")
    values = ctx.data("zipf")
    d, n = ctx.cfg.domain, values.size
    hi = d // 8

    # the multi-message shuffle range protocol sends (1 + log2 d) Hadamard messages per user plus blanket
    # noise, which is costly to simulate: its row runs on the first SHUFFLE_RANGE_USERS users, with its
    # own exact value, at the headline ε only
    sample = values[:SHUFFLE_RANGE_USERS]

    def body(model, eps):
        kw = dict(domain=d, epsilon=eps, model=model)
        data, label, note = values, "range share [0, d/8)", f"items 0..{hi - 1} of {d}"
        if model == "shuffle":
            kw["delta"] = SHUFFLE_DELTA
            if sample.size < n:
                data, label = sample, f"range share [0, d/8), first {sample.size} users"
                note += f"; n = {sample.size} of {n} users"
                ctx.caveat(
                    f"the shuffle-model range row runs on the first {sample.size} of {n} users "
                    "(simulating its multi-message protocol is costly); its exact value is computed on "
                    "the same users"
                )
        ctx.measure(
            label,
            model,
            eps,
            lambda seed: _call(fn, data, [(0, hi)], rng=seed, **kw),
            _share_reader(data.size),
            float(np.mean(data < hi)),
            note=note,
        )

    ctx.each_model("range_counts", TRUST_MODELS, body, plan={"n": n, "domain": d})
