"""Scenario: training-set summarization (digits split across owners)."""

from __future__ import annotations

import numpy as np

from privstats.demo.config import SHUFFLE_DELTA
from privstats.demo.running import _call, _Context, _public, _Unsupported

REPEATS = 3  # seeded runs per row: the row's std error is their spread


def scenario_summarization(ctx: _Context) -> None:
    """``privstats.summarize``: a private training summary from 5 digit owners vs non-private greedy."""
    fn = _public("summarize")
    owners, target = ctx.data("digits")
    size = ctx.cfg.summary_size
    try:
        greedy = _call(fn, owners, target, size=size, method="greedy", rng=ctx.rng_seed("greedy"))
    except Exception as exc:
        raise _Unsupported(f"summarize(method='greedy') failed: {type(exc).__name__}: {exc}") from None
    exact = float(greedy.mmd2)
    uniform = _call(fn, owners, target, size=size, method="uniform", rng=ctx.rng_seed("uniform"))

    def read(runs):
        # one summary's MMD² is one draw: its uncertainty is the spread over REPEATS seeded runs
        values = [float(r.mmd2) for r in runs]
        return values[0], float(np.std(values, ddof=1))

    def extra(runs):
        res = runs[0]
        g = (getattr(res, "privacy", None) or {}).get("target")
        sketch = {"gaussian": "Gaussian target sketch", "mwem": "MWEM"}.get(
            res.params.get("sketch"), "sketch"
        )
        protocol = f"private auction + {sketch}"
        if res.method in ("uniform", "uniform-pool"):
            protocol = "no sketch (the planner's fallback): greedy on a uniform pool, nothing spent"
        out: dict = {
            "protocol": protocol,
            "accessed": int(res.accessed),
            "note": (
                f"digits, 5 owners, {size} points; exact = non-private greedy; "
                f"uniform sampling {uniform.mmd2:.3g}; curator saw {int(res.accessed)} raw points; "
                f"std error = spread of MMD² over {REPEATS} seeds"
            ),
        }
        if g is not None:
            eps_spent, delta = float(g.epsilon), float(getattr(g, "delta", 0.0))
            label = f"{eps_spent:g}" + (f" ({delta:.0e})" if delta else "") + " per party"
            if res.method in ("uniform", "uniform-pool"):  # no sketch released: nothing spent
                label = "none spent (no sketch released)"
            out.update(epsilon_spent=eps_spent, delta=delta, privacy=label)
        return out

    def runs(eps, seed):
        return [
            _call(fn, owners, target, size=size, epsilon=eps, delta=SHUFFLE_DELTA, method="private", rng=s)
            for s in range(seed, seed + REPEATS)
        ]

    def body(model, eps):
        ctx.caveat(
            "summarization is listed as 'secure', but its curator is trusted with every point it fetches: "
            "the private auction limits which raw points it sees (the count is in the row's note), "
            "it does not hide them"
        )
        ctx.caveat(
            "summarization's auction guarantee is heuristic (the paper's Theorem 6 covers only the "
            "'asked' event); its ε column is the guarantee of the buyer's target set"
        )
        ctx.measure(
            "summary MMD² (vs greedy)",
            model,
            eps,
            lambda seed: runs(eps, seed),
            read,
            exact,
            extra=extra,
        )

    # data owners, a curator and a consumer, none trusted with another's data: listed as "secure"
    ctx.each_model("summarize", ["secure"], body)
