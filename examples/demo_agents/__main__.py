"""The demo team: ``python -m demo_agents orchestrator|worker|workspace``.

Run with ``examples/`` on ``PYTHONPATH`` (``make demo`` does that).
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="demo_agents")
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
        from demo_agents.orchestrator import run
        run()
    elif args.kind == "worker":
        from demo_agents.worker import run
        run(args.style, args.work)
    else:
        from demo_agents.workspace import create
        create(args.path)


if __name__ == "__main__":
    main(sys.argv[1:])
