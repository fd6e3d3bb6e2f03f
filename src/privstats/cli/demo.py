"""``privstats demo``: every statistic under every trust model, a table and a report."""

from __future__ import annotations

from privstats.cli.common import _epsilon_list, from_args

NAMES = ("demo",)

DEMO_SCENARIOS = [
    "oracles",
    "frequencies",
    "range_counts",
    "ecdf",
    "quantiles",
    "auc",
    "auc_scale",
    "roc",
    "hosmer_lemeshow",
    "kendall",
    "gini",
    "gini_coefficient",
    "collision",
    "summarization",
]


def add_parsers(sub) -> None:
    demo = sub.add_parser(
        "demo",
        help="run every statistic under every trust model and write a report",
        description="Run every statistic under every trust model on bundled or "
        "generated data, print a table and write a Markdown+PNG report.",
    )
    demo.add_argument(
        "--size",
        choices=["tiny", "small", "full"],
        default="full",
        help="problem size: full (default; the run prints its own time), small (tests), tiny (smoke)",
    )
    demo.add_argument("--out", metavar="DIR", help="report directory (default ./privstats-report)")
    demo.add_argument("--seed", type=int, default=2024, help="seed of the data and of the simulated noise")
    demo.add_argument(
        "--epsilons",
        type=_epsilon_list,
        metavar="E1,E2,...",
        help="privacy budgets to run (default depends on --size)",
    )
    demo.add_argument(
        "--only",
        action="append",
        metavar="SCENARIO",
        choices=DEMO_SCENARIOS,
        help="run only this scenario (repeatable): " + ", ".join(DEMO_SCENARIOS),
    )
    demo.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")


def run(args) -> int:
    from privstats.demo import run_demo

    return run_demo(args.size, **from_args(args, "out", "seed", "epsilons", scenarios="only", as_json="json"))
