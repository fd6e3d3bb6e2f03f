"""``privstats experiment``: run a paper reproduction from the repository's experiments/."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from privstats.cli.common import CLIError

NAMES = ("experiment",)
RAW = True  # the arguments after NAME go to the script unparsed


def add_parsers(sub) -> None:
    exp = sub.add_parser(
        "experiment",
        help="run a paper reproduction from experiments/",
        description="Run a reproduction script from the repository's experiments/ "
        "directory; arguments after NAME go to the script (try NAME --help). "
        "'privstats experiment all --out DIR' runs every one and writes the "
        "fidelity table DIR/fidelity.md. Outputs go to --out (default "
        "./privstats-experiments/NAME), never into the source tree.",
    )
    exp.add_argument("name", nargs="?", metavar="NAME", help="experiment name (see --list)")
    exp.add_argument("--list", action="store_true", help="list the experiments")


def run_raw(parser, rest: list[str]) -> int:
    # everything after NAME belongs to the experiment script (including --help)
    split = next((i for i, a in enumerate(rest) if not a.startswith("-")), len(rest))
    args = parser.parse_args(["experiment", *rest[: split + 1]])
    return _experiment(args, rest[split + 1 :])


def experiments_dir() -> Path:
    """The repository's ``experiments/`` directory (next to ``src/`` in an editable install).

    The environment variable ``PRIVSTATS_EXPERIMENTS_DIR`` overrides it (e.g. for a copy of
    the scripts next to a wheel install).
    """
    import os

    import privstats

    override = os.environ.get("PRIVSTATS_EXPERIMENTS_DIR")
    path = Path(override) if override else Path(privstats.__file__).resolve().parents[2] / "experiments"
    if not path.is_dir():
        raise CLIError(
            f"NAME: the experiments/ directory was not found at {path}; experiments run from a "
            "source checkout (git clone, then pip install -e .)"
        )
    return path


def _experiments() -> dict[str, Path]:
    return {p.stem: p for p in sorted(experiments_dir().glob("*.py")) if not p.stem.startswith("_")}


def _first_doc_line(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (SyntaxError, UnicodeDecodeError):
        return ""
    return (doc or "").strip().splitlines()[0] if doc else ""


def _experiment(args, forwarded: list[str]) -> int:
    found = _experiments()
    if args.list or not args.name:
        if not found:
            print(f"No experiments in {experiments_dir()}")
            return 0 if args.list else 2
        width = max(map(len, found))
        for name, path in found.items():
            print(f"{name.ljust(width)}  {_first_doc_line(path)}")
        if not args.list:
            print("\nprivstats experiment: error: NAME is required (one of the above)", file=sys.stderr)
            return 2
        return 0
    if args.name not in found:
        raise CLIError(
            f"NAME: no experiment {args.name!r} in {experiments_dir()} "
            f"(available: {', '.join(found) or 'none'})"
        )
    path = found[args.name]
    spec = importlib.util.spec_from_file_location(f"privstats_experiment_{args.name}", path)
    if spec is None or spec.loader is None:
        raise CLIError(f"NAME: cannot load experiment {args.name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    sys.path.insert(0, str(path.parent))  # experiments may import helpers next to them
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "main"):
            raise CLIError(f"NAME: experiment {args.name!r} has no main(argv) function")
        # experiments draw their own progress bars, so only the start and finish lines here
        print(f"running experiment {args.name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        code = module.main(forwarded)
        code = 0 if code is None else int(code)
        print(
            f"experiment {args.name} finished in {time.perf_counter() - t0:.1f} s (exit {code})",
            file=sys.stderr,
        )
        return code
    finally:
        sys.path.remove(str(path.parent))
        sys.modules.pop(spec.name, None)
