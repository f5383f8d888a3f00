"""The agents' verbs read their usual arguments without argparse, exactly as argparse would."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.cli import _client, delegate, serve, workdone
from choragos.cli._quickargs import quick

pytestmark = pytest.mark.timeout(60)

VERBS = {"delegate": delegate, "work-done": workdone}
VALUES = ["coder", "a,b", "", "x y", "-x", "--", "T3", "f=g", "--task", "ü"]


def _argparse(verb: str, argv: list[str]) -> dict | None:
    try:
        return vars(VERBS[verb].arguments(verb).parse_args(argv))
    except (_client.Failure, SystemExit):
        return None


def _words(module, rng: random.Random) -> list[str]:
    options = (*module.OPTIONS, _client.SOCK)
    flags = [option.flag for option in options if rng.random() < 0.9 and option.required]
    flags += [rng.choice([o.flag for o in options] + ["--t", "-h", "word", "--to=x"])
              for _ in range(rng.randint(0, 4))]
    rng.shuffle(flags)
    return _spelled(flags, rng, joined=0.3, apart=0.8)


def _spelled(flags: list[str], rng: random.Random, joined: float, apart: float) -> list[str]:
    """Each flag as ``--flag=value`` (below ``joined``), ``--flag value``
    (below ``apart``) or bare, drawn at random."""
    argv: list[str] = []
    for flag in flags:
        spelling = rng.random()
        if spelling < joined:
            argv.append(f"{flag}={rng.choice(VALUES)}")
        elif spelling < apart:
            argv += [flag, rng.choice(VALUES)]
        else:
            argv.append(flag)
    return argv


@pytest.mark.parametrize("verb", VERBS)
def test_what_it_reads_is_what_argparse_reads(verb):
    module = VERBS[verb]
    rng = random.Random(43)
    read = 0
    for _ in range(3000):
        argv = _words(module, rng)
        got = quick(argv, (*module.OPTIONS, _client.SOCK))
        if got is not None:
            read += 1
            assert vars(got) == _argparse(verb, argv), argv
    assert read > 50  # the random spellings do reach the quick path


@pytest.mark.parametrize("verb,argv", [
    ("delegate", ["--to", "coder", "--task", "Add a --version flag"]),
    ("delegate", ["--to=a,b", "--to", "c", "--task=t", "--brief", "f.md", "--require-live",
                  "--sock", "/tmp/s"]),
    ("work-done", ["--id", "T3", "--done", "--task", "added --version; tests pass"]),
    ("work-done", ["--id", "T3", "--blocked", "--task", "needs a key", "--report", "r.md"]),
])
def test_the_usual_spellings_take_the_quick_path(verb, argv):
    module = VERBS[verb]
    got = quick(argv, (*module.OPTIONS, _client.SOCK))
    assert got is not None and vars(got) == _argparse(verb, argv)


@pytest.mark.parametrize("argv", [
    ["--to", "coder"],                                   # a required option missing
    ["--to", "coder", "--task", "x", "--task", "y"],     # given twice
    ["--to", "coder", "--tas", "x"],                     # an abbreviation
    ["--to", "coder", "--task", "-x"],                   # a value like an option
    ["--to", "coder", "--task", "x", "--require-live=1"],
    ["--to", "coder", "--task", "x", "extra"],
    ["--help"],
])
def test_anything_else_is_left_to_argparse(argv):
    assert quick(argv, (*delegate.OPTIONS, _client.SOCK)) is None


def test_exclusive_outcomes_are_left_to_argparse():
    argv = ["--id", "T3", "--task", "x", "--done", "--failed"]
    assert quick(argv, (*workdone.OPTIONS, _client.SOCK)) is None
    assert _argparse("work-done", argv) is None  # argparse refuses them together


def _serve_by_argparse(argv: list[str]) -> dict | None:
    parser = serve.arguments("serve")
    try:
        args = parser.parse_args(argv)
        if args.salvage and not args.resume:
            return None
    except (_client.Failure, SystemExit):
        return None
    return {k: Path(v) if k in serve.PATHS and isinstance(v, str) else v
            for k, v in vars(args).items()}


def test_serve_reads_its_arguments_as_argparse_does():
    """`choragos serve` reads its plain flags without argparse (argparse and
    gettext would stay in the server, the client's fork): the same answers."""
    rng = random.Random(43)
    flags = [o.flag for o in serve.OPTIONS] + ["--resume", "--salvage", "-h", "word", "--de"]
    quick_read = 0
    for _ in range(3000):
        argv = _spelled(rng.sample(flags, rng.randint(0, 3)), rng, joined=0.2, apart=0.5)
        expected = _serve_by_argparse(argv)
        try:
            got = vars(serve.parse_args(argv))
        except (_client.Failure, SystemExit):
            got = None
        assert got == expected, argv
        quick_read += quick(argv, serve.OPTIONS) is not None
    assert quick_read > 300


def test_a_plain_serve_loads_no_argparse():
    code = ("import sys\nimport choragos.cli.main\nfrom choragos.cli import serve\n"
            "serve.parse_args(['--detach', '--dir', '.'])\n"
            "print('argparse' in sys.modules, 'gettext' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]
