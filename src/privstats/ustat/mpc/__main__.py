"""``python -m privstats.ustat.mpc party ...``: serve one role of the pairs' 2PC (library mode)."""

from __future__ import annotations

import argparse
import sys

from .party import run_party


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m privstats.ustat.mpc", description="Protocol C pair roles over SPU (Cheetah 2PC)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("party", help="serve the left or right role of the pairs' 2PC")
    p.add_argument("--role", required=True, choices=("left", "right"))
    p.add_argument("--listen", required=True, help="HOST:PORT for the aggregator's connection (port 0: any)")
    p.add_argument("--self-addr", required=True, help="HOST:PORT this party's SPU link listens on")
    p.add_argument("--peer-addr", required=True, help="HOST:PORT of the other party's SPU link")
    p.add_argument("--data", help=".npy file of this party's users' values (jobs then send indices)")
    args = parser.parse_args(argv)
    run_party(args.role, args.listen, args.self_addr, args.peer_addr, args.data)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
