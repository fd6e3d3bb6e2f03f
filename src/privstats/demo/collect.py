"""Running the scenarios: :func:`collect` returns their rows (no printing, no files)."""

from __future__ import annotations

import time
from collections.abc import Callable

from privstats.demo.config import SHUFFLE_DELTA, SIZES
from privstats.demo.running import DemoResult, _Context, _Unsupported
from privstats.demo.scenarios import SCENARIOS


def collect(
    size: str = "full",
    *,
    seed: int = 2024,
    epsilons=None,
    scenarios=None,
    log: Callable[[str], None] | None = None,
    progress: bool = False,
) -> DemoResult:
    """Run the scenarios and return their rows (no printing, no files)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    names = list(SCENARIOS) if scenarios is None else list(scenarios)
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"scenarios must be among {list(SCENARIOS)}, got {unknown}")
    log = log or (lambda text: None)
    ctx = _Context(size, seed, epsilons, log)
    ctx.caveat(
        "every row is a simulation: data and noise come from seeded numpy generators so that the run is "
        "reproducible; deployments pass rng=None (the OS CSPRNG and exact integer samplers)"
    )
    ctx.caveat(
        "each row is one run: |error| of a few standard errors is expected, and rows without a standard "
        "error have none the protocol can derive"
    )
    ctx.caveat(
        f"shuffle-model rows spend (ε, δ = {SHUFFLE_DELTA:g}); their ε is that of the shuffled "
        "messages, each client randomizes with a larger local ε₀"
    )
    t0, c0 = time.perf_counter(), time.process_time()
    bar = _progress(len(names)) if progress else None
    try:
        for name in names:
            if bar is not None:
                bar.update(name)
            try:
                SCENARIOS[name](ctx)
            except _Unsupported as exc:
                ctx.result.unavailable.append(f"{name}: {exc}")
                ctx.log(f"note: skipping {name}: {exc}")
            except ImportError as exc:
                ctx.note(f"skipping {name}: needs an optional dependency ({exc})")
            except Exception as exc:  # a landing protocol's bug must not hide the other scenarios
                ctx.note(f"scenario {name} failed: {type(exc).__name__}: {exc}")
    finally:
        if bar is not None:
            bar.close()
    ctx.result.wall_time_s = time.perf_counter() - t0
    ctx.result.cpu_time_s = time.process_time() - c0
    return ctx.result


class _progress:
    """A rich progress bar over scenarios (only used on a terminal)."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

        self._p = Progress(
            SpinnerColumn(),
            *Progress.get_default_columns(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._p.start()
        self._task = self._p.add_task("demo", total=total)
        self._started = False

    def update(self, name: str) -> None:
        if self._started:
            self._p.advance(self._task)
        self._started = True
        self._p.update(self._task, description=f"demo: {name}")

    def close(self) -> None:
        self._p.stop()
