"""``privstats plan``: predicted error and cost of every trust model, from public parameters."""

from __future__ import annotations

import json
import math
import sys

from privstats.cli.common import CLIError, _delta, _epsilon, add_domain_size

NAMES = ("plan",)
ALIASES = {"roc": "roc_curve"}  # the name `privstats estimate` uses


def add_parsers(sub) -> None:
    from privstats.plan import SUPPORTED

    pl = sub.add_parser(
        "plan",
        help="predicted error and cost of every trust model for a statistic",
        description="From public parameters only: every (trust model, protocol, parameters) "
        "that can compute STATISTIC, its predicted standard error (bias included), "
        "communication per user and the trust it needs, sorted by error.",
    )
    pl.add_argument(
        "statistic",
        choices=sorted([*SUPPORTED, *ALIASES]),
        metavar="STATISTIC",
        help="one of: " + ", ".join(sorted(SUPPORTED)),
    )
    pl.add_argument("--n", required=True, type=float, help="number of users (1e5 is accepted)")
    pl.add_argument("--epsilon", required=True, type=_epsilon, help="privacy budget ε > 0")
    pl.add_argument("--delta", type=_delta, default=0.0, help="δ (default 0: pure-DP protocols only)")
    pl.add_argument("--bounds", nargs=2, type=float, metavar=("LO", "HI"), help="public bounds of the values")
    pl.add_argument("--model", choices=["local", "shuffle", "secure", "central"], help="keep one trust model")
    add_domain_size(pl, "frequencies, range_counts, heavy_hitters, collision_probability: domain size")
    pl.add_argument(
        "--positives", type=float, metavar="N1", help="auc, roc_curve: number of positives (default n/2)"
    )
    pl.add_argument(
        "--kernel-range", nargs=2, type=float, metavar=("LO", "HI"), help="ustatistic: the kernel's range"
    )
    pl.add_argument(
        "--quantiles", type=float, nargs="+", metavar="Q", help="quantiles: the levels (default 0.5)"
    )
    pl.add_argument(
        "--lack-of-fit",
        type=float,
        metavar="H",
        help="hosmer_lemeshow: the anticipated H (its estimand; default: a calibrated model)",
    )
    pl.add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    import warnings

    from privstats.plan import UselessResultWarning, plan

    args.statistic = ALIASES.get(args.statistic, args.statistic)
    options: dict = {}
    if args.quantiles is not None:
        if args.statistic != "quantiles":
            raise CLIError("--quantiles: only the quantiles statistic takes levels")
        options["q"] = list(args.quantiles)
    if args.lack_of_fit is not None:
        if args.statistic != "hosmer_lemeshow":
            raise CLIError("--lack-of-fit: only hosmer_lemeshow takes an anticipated H")
        if not (math.isfinite(args.lack_of_fit) and args.lack_of_fit >= 0):
            raise CLIError(f"--lack-of-fit: H must be a finite number >= 0, got {args.lack_of_fit}")
        options["lack_of_fit"] = args.lack_of_fit
    if args.domain_size is not None:
        options.update(domain=args.domain_size, domain_size=args.domain_size)
    if args.positives is not None:
        options["n_pos"] = int(args.positives)
    if args.kernel_range is not None:
        if not args.kernel_range[0] < args.kernel_range[1]:
            raise CLIError(
                f"--kernel-range: LO must be < HI, got {args.kernel_range[0]} {args.kernel_range[1]}"
            )
        options["kernel_range"] = tuple(args.kernel_range)
    if args.bounds is not None and not args.bounds[0] < args.bounds[1]:
        raise CLIError(f"--bounds: LO must be < HI, got {args.bounds[0]} {args.bounds[1]}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UselessResultWarning)
        try:
            p = plan(
                args.statistic,
                n=args.n,
                epsilon=args.epsilon,
                delta=args.delta,
                bounds=None if args.bounds is None else tuple(args.bounds),
                model=args.model,
                **options,
            )
        except (ValueError, TypeError) as exc:
            raise CLIError(str(exc)) from None
    notes = [str(w.message) for w in caught if issubclass(w.category, UselessResultWarning)]
    if args.json:
        print(
            json.dumps(
                {
                    "statistic": args.statistic,
                    "n": p.n,
                    "epsilon": p.epsilon,
                    "delta": p.delta,
                    "options": [o.as_row() for o in p],
                    "warnings": notes,
                },
                default=str,
            )
        )
        return 0
    if not len(p):
        from privstats.plan import SUPPORTED

        need = []
        if args.statistic == "ustatistic" and args.kernel_range is None:
            need.append("ustatistic needs --kernel-range LO HI, the kernel's range")
        if args.statistic in ("frequencies", "range_counts", "heavy_hitters") and args.domain_size is None:
            need.append(f"{args.statistic} needs --domain-size D")
        if not args.delta and "shuffle" in SUPPORTED[args.statistic]:
            need.append("shuffle-model protocols need --delta")
        print(
            f"no protocol computes {args.statistic} with these parameters"
            + (f" ({'; '.join(need)})" if need else "")
        )
        return 0
    print(p.table())
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    from privstats.plan import SUPPORTED

    if args.delta == 0 and "shuffle" in SUPPORTED[args.statistic]:
        print("note: shuffle-model protocols are (ε, δ)-DP; pass --delta to include them", file=sys.stderr)
    return 0
