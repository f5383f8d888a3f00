"""The demo team's agents: ``python -m choragos.demo orchestrator|worker|workspace``.

``choragos demo`` sets everything up; these are the programs its roles run.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m choragos.demo", allow_abbrev=False)
    sub = parser.add_subparsers(dest="kind", required=True)
    sub.add_parser("orchestrator", help="plans the demo and delegates it")
    worker = sub.add_parser("worker", help="does delegated tasks and reports")
    worker.add_argument("--style", choices=("coder", "reviewer", "tester", "release"),
                        required=True)
    worker.add_argument("--work", type=float, default=4.0, help="seconds a task takes")
    space = sub.add_parser("workspace", help="create the scratch project the demo works in")
    space.add_argument("path")
    args = parser.parse_args(argv)
    if args.kind == "orchestrator":
        from choragos.demo.orchestrator import run
        run()
    elif args.kind == "worker":
        from choragos.demo.worker import run
        run(args.style, args.work)
    else:
        from choragos.demo.workspace import create
        create(args.path)


if __name__ == "__main__":
    main(sys.argv[1:])
