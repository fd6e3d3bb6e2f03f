"""Two-party pairs deployment (Protocol C over SPU): each party runs on its own data and enforces its task.

* :mod:`.task` — the public task (statistic, kernels, bounds, ε, mechanism, P, layout) and secrets;
* :mod:`.policy` — a party's checks and its durable SQLite record of the pairs it took part in;
* :mod:`.serve` — ``privstats serve party``; :mod:`.collect` — the aggregator (``privstats collect``);
* :mod:`.cli` — the commands, hooked into ``privstats`` for pairs tasks.

Needs the ``mpc`` extra (SPU) for serving and collecting; writing a task needs numpy only.
"""

from .task import PAIRS_STATISTICS, PairsTask, new_pairs_task, read_pairs_task, write_pairs_task

__all__ = ["PAIRS_STATISTICS", "PairsTask", "new_pairs_task", "read_pairs_task", "write_pairs_task"]
