"""The ``choragos`` command: the verbs of choragos/control/commands.py, each in its own module.

Only the standard library is imported here, and a verb's module is loaded
only when that verb runs, so ``choragos delegate`` and ``choragos work-done``
(run by agents many times per session) start fast.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

from choragos import __version__
from choragos.control import commands
from choragos.deferred import defer_unused

# Standard modules libraries import for nothing the session calls (OpenSSL's
# libcrypto among them), loaded only if used: see choragos/deferred.py.
defer_unused()

# verb -> (module, one-line help), derived from the one command registry
# (choragos/control/commands.py).  Each module exposes ``run(argv, verb=...) -> int``.
VERBS: dict[str, tuple[str, str]] = {name: (verb.module, verb.help)
                                     for name, verb in commands.VERBS.items()}
# The verbs that start a session server: dataclasses' methods come from the
# cache of the last start (choragos/classcode.py), the server released it.
WARM_START = ("serve",)


def usage() -> str:
    width = max(len(v) for v in VERBS)
    lines = [f"choragos {__version__}: run a team of coding-agent CLIs", "", "usage:"]
    lines += [f"  choragos {verb:<{width}}  {text}" for verb, (_, text) in VERBS.items()]
    lines += ["", "Run `choragos VERB --help` for a verb's options."]
    return "\n".join(lines)


# A reader that stops early (``choragos report | head``) is not an error:
# end quietly with the status a program killed by SIGPIPE would have.
EXIT_PIPE = 128 + 13
EXIT_INTERRUPTED = 128 + 2  # SIGINT


def main(argv: list[str] | None = None) -> int:
    if argv is None and "_ARGCOMPLETE" in os.environ:  # the shell asks for a completion
        from choragos.cli.completion import complete
        complete()
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _dispatch(args)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        # Ctrl-C where a verb has nothing of its own to undo: one line, the
        # status a shell gives a program the interrupt ended, no traceback.
        verb = f" {args[0]}" if args else ""
        print(f"\nchoragos{verb}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code


def _dispatch(args: list[str]) -> int:
    if not args:
        # A bare ``choragos`` is a usage error: say what there is, fail like one.
        print(usage(), file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("-V", "--version", "version"):
        print(f"choragos {__version__}")
        return 0
    verb = args[0]
    if verb not in VERBS:
        print(f"choragos: unknown command {verb!r}{_did_you_mean(verb)}; run `choragos "
              "--help` for the list.", file=sys.stderr)
        return 2
    if verb in WARM_START:
        # The cyclic collector does not run while the start imports and makes
        # its objects (some 45 collections, 4-5 ms before the first agent is
        # spawned, finding a few hundred objects): serve turns it on again,
        # the start's objects in its oldest generation (see serve.collector_on).
        gc.disable()
        from choragos import classcode
        from choragos.session import modulecode

        # The server is this process's fork: the modules loaded from here on
        # come without their functions' docstrings (see modulecode).
        modulecode.install()
        classcode.install()
    try:
        module = importlib.import_module(VERBS[verb][0])
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("choragos."):
            raise
        # The agent verbs' copy on a remote seat's host holds only those.
        print(f"choragos: {verb} is not available here (a remote seat has the agent "
              "verbs only); run it on the machine the session runs on.", file=sys.stderr)
        return 2
    return int(module.run(args[1:], verb=verb) or 0)


def _did_you_mean(verb: str) -> str:
    import difflib  # only on this error path: the agents' verbs start fast

    close = difflib.get_close_matches(verb, list(VERBS), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _silence_stdout() -> None:
    # The interpreter flushes stdout once more on exit; point it at /dev/null
    # so that last flush cannot raise a second time.
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
