"""Kill rate per module from the last `make mutate` (mutmut's results in mutants/).

A mutant is killed when a test failed or crashed on it.  One that ran out of
time is shown apart: on a busy machine an honest run of a surviving mutant's
tests can overrun mutmut's limit too, so "rate" counts only failing tests
and "rate+t" counts timeouts as kills as well.  "no tests" (no selected test
reaches the code) and "survived" count against the module.  ``--survivors``
lists what is left, to kill or to explain in docs/mutation.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 37, -11, -9}
TIMEOUT = {36, 24, -24, 152, 255}
SURVIVED, NO_TESTS, SKIPPED = 0, {5, 33}, 34


def results(root: Path) -> dict[str, dict[str, int | None]]:
    """Exit code by mutant name, per module, from mutmut's ``.meta`` files."""
    out = {}
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        module = meta.relative_to(root / "mutants").as_posix()[: -len(".py.meta")]
        out[module.replace("/", ".")] = json.loads(meta.read_text())["exit_code_by_key"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    args = parser.parse_args(argv)
    by_module = results(Path.cwd())
    if not by_module:
        print("no results: run `make mutate` first", file=sys.stderr)
        return 1
    total = Counter()
    print(f"{'module':32} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8} "
          f"{'rate':>6} {'rate+t':>6}")
    for module, codes in by_module.items():
        count = Counter(_kind(code) for code in codes.values())
        total.update(count)
        print(_row(module, count))
        if args.survivors:
            for name, code in codes.items():
                if _kind(code) in ("survived", "no tests"):
                    print(f"    {_kind(code):9} {name}")
    print(_row("all", total))
    return 0


def _kind(code: int | None) -> str:
    if code in KILLED:
        return "killed"
    if code in TIMEOUT:
        return "timeout"
    if code == SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "skipped" if code == SKIPPED else "unchecked" if code is None else "other"


def _row(name: str, count: Counter) -> str:
    judged = sum(count[k] for k in ("killed", "timeout", "survived", "no tests", "other"))
    rate, with_t = "    -", "    -"
    if judged:
        rate = f"{100 * count['killed'] / judged:5.1f}%"
        with_t = f"{100 * (count['killed'] + count['timeout']) / judged:5.1f}%"
    extra = f"  ({count['unchecked']} not run)" if count["unchecked"] else ""
    return (f"{name:32} {count['killed']:7} {count['timeout']:7} {count['survived']:8} "
            f"{count['no tests']:8} {rate:>6} {with_t:>6}{extra}")


if __name__ == "__main__":
    sys.exit(main())
