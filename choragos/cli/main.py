"""The ``choragos`` command: a table of verbs, each in its own module.

Only the standard library is imported here, and a verb's module is loaded
only when that verb runs, so ``choragos delegate`` and ``choragos work-done``
(run by agents many times per session) start fast.
"""

from __future__ import annotations

import importlib
import sys

from choragos import __version__

# verb -> (module, one-line help).  Each module exposes ``run(argv) -> int``.
VERBS: dict[str, tuple[str, str]] = {
    "init": ("choragos.cli.init", "write a starter .choragos.toml"),
    "doctor": ("choragos.cli.doctor", "check this directory's setup"),
    "demo": ("choragos.cli.demo", "run the scripted demo team in a scratch repository "
             "(no agent CLI needed)"),
    "serve": ("choragos.cli.serve", "start the session and attach to its deck "
              "(--detach: background, --headless: no deck)"),
    "attach": ("choragos.cli.attach", "bring the running session's deck to this terminal"),
    "ls": ("choragos.cli.ls", "list the running sessions, across projects"),
    "kill": ("choragos.cli.kill", "stop this directory's session (--all: every session)"),
    "delegate": ("choragos.cli.delegate", "hand a task to one or more roles"),
    "work-done": ("choragos.cli.workdone", "report a task back to the orchestrator"),
    "gate": ("choragos.cli.gate", "list, approve or reject gated delegations"),
    "board": ("choragos.cli.board", "show the task board of the running session"),
    "status": ("choragos.cli.status", "show every role's state in the running session"),
    "restart": ("choragos.cli.rolectl", "restart a role (resets its restart budget)"),
    "pause": ("choragos.cli.rolectl", "pause a role (SIGSTOP its process group)"),
    "resume": ("choragos.cli.rolectl", "resume a paused role"),
    "keys": ("choragos.cli.keys", "type text and press keys in a role's pane (headless)"),
    "reload": ("choragos.cli.simple", "re-read the config and converge the roles"),
    "ping": ("choragos.cli.simple", "check that a session answers"),
    "shutdown": ("choragos.cli.simple", "stop the running session and its roles"),
    "checkpoints": ("choragos.cli.checkpoints", "list or prune workspace checkpoints"),
    "rollback": ("choragos.cli.rollback", "restore the workspace to before a task"),
    "report": ("choragos.cli.report", "per-role summary of a session from its event log"),
    "gateway": ("choragos.cli.gateway", "run the built-in gateway (token counts per role)"),
}


def usage() -> str:
    width = max(len(v) for v in VERBS)
    lines = [f"choragos {__version__}: run a team of coding-agent CLIs", "", "usage:"]
    lines += [f"  choragos {verb:<{width}}  {text}" for verb, (_, text) in VERBS.items()]
    lines += ["", "Run `choragos VERB --help` for a verb's options."]
    return "\n".join(lines)


# A reader that stops early (``choragos report | head``) is not an error:
# end quietly with the status a program killed by SIGPIPE would have.
EXIT_PIPE = 128 + 13


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _dispatch(args)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
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
        print(f"choragos: unknown command {verb!r}; run `choragos --help` for the list.",
              file=sys.stderr)
        return 2
    module = importlib.import_module(VERBS[verb][0])
    return int(module.run(args[1:], verb=verb) or 0)


def _silence_stdout() -> None:
    # The interpreter flushes stdout once more on exit; point it at /dev/null
    # so that last flush cannot raise a second time.
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
