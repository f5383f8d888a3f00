"""The start's caches (choragos/classcode.py, choragos/session/modulecode.py)
keep what a thread makes lazily around the end of the start: a module and
its dataclass first loaded just after the start at one start and before it
at the next come from the file at the next, not compiled again."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TEAM, cli_for, kill_all_and_remove, scratch_project
from tests.deck.test_server_at_rest import _after, figures, start_to_let_go

pytestmark = pytest.mark.timeout(120)

# Loaded into the `serve` verb's process (and only there) from PYTHONPATH:
# at the first start a thread of the server imports the latecomer as the
# start's end is logged (the caches' counts said); at the second the
# server's main thread imports it as the server is forked, within the start.
# Each says which in a file.
HOOK = '''
import os
import sys

if sys.orig_argv[-2:] == ["serve", "--detach"]:
    import logging
    import threading

    _SAID = os.environ["LATE_SAID"]

    def _load(when):
        import latecomer

        with open(_SAID, "a") as said:
            said.write(f"{when} {latecomer.Latecomer(1).late_alpha}\\n")

    def _early():
        if os.path.exists(_SAID) and "latecomer" not in sys.modules:
            _load("early")

    class _AfterTheStart(logging.Handler):
        def emit(self, record):
            if ("modules compiled at the start" in record.getMessage()
                    and "latecomer" not in sys.modules):
                if os.environ.get("LATE_HOLD_LET_GO"):
                    # Read just after this line: the start is stopped first.
                    sys.modules["choragos.cli.serve"].LET_GO_AFTER = 600.0
                thread = threading.Thread(target=_load, args=("late",))
                thread.start()
                thread.join()

    os.register_at_fork(after_in_child=_early)
    logging.getLogger().addHandler(_AfterTheStart())
'''

LATECOMER = '''
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Latecomer:
    late_alpha: int
    late_beta: str = "b"
'''


@pytest.fixture
def project():
    root, work, env = scratch_project()
    (work / ".choragos.toml").write_text(TEAM + "\n[checkpoints]\nenabled = false\n")
    hooks = root / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(textwrap.dedent(HOOK))
    (hooks / "latecomer.py").write_text(textwrap.dedent(LATECOMER))
    env["PYTHONPATH"] = f"{hooks}:{env['PYTHONPATH']}"
    env["LATE_SAID"] = str(root / "said")
    env["XDG_CACHE_HOME"] = str(root / "cache")
    yield root, work, env
    kill_all_and_remove(cli_for(env, work), root)


def test_what_a_thread_loads_just_after_the_start_is_not_compiled_at_the_next(project):
    root, work, env = project
    cli = cli_for(env, work)
    log = work / ".choragos" / "logs" / "server.log"
    counts, logs = [], []  # (methods, modules) compiled by each start; its log then
    for start in range(2):
        lines, *compiled = start_to_let_go(cli, log, start)
        counts.append(compiled)
        logs.append(lines)
        assert cli("kill", "--all").returncode == 0
    # Loaded after the start's counts at the first, within them at the second.
    assert (root / "said").read_text().split() == ["late", "1", "early", "1"]
    assert counts[0][0] > 300 and counts[0][1] > 150
    # The latecomer's module and its class's methods came from the files
    # (before, the first start's files were written before it was loaded:
    # its 10 methods and its module were compiled again).
    assert counts[1] == [0, 0]
    # At the first start they were compiled after the start's counts, and
    # kept at the let-go.
    late = figures(logs[0], "start caches let go", "cached): ")
    assert late[0] >= 10 and late[1] >= 1


def test_what_a_thread_loads_after_the_start_is_kept_by_a_stop_before_the_let_go(project):
    """A session stopped before its let-go's timer lets go of the caches as
    it stops: what a thread compiled since the start is written all the same."""
    root, work, env = project
    env["LATE_HOLD_LET_GO"] = "1"  # the first start's let-go is 10 minutes away
    cli = cli_for(env, work)
    log = work / ".choragos" / "logs" / "server.log"
    said = root / "said"
    assert cli("serve", "--detach").returncode == 0
    wait_until(lambda: said.exists() and said.read_text().split() == ["late", "1"], 30,
               message="the latecomer loaded after the start")
    assert "start caches let go" not in log.read_text()
    assert cli("kill", "--all").returncode == 0
    lines = wait_until(lambda: _after(log, "start caches let go", 0), 30,
                       message="the caches let go as the session stopped")
    assert "docstrings let go" not in "\n".join(lines)  # the timer's part never came
    late = figures(lines, "start caches let go", "cached): ")
    assert late[0] >= 10 and late[1] >= 1
    _lines, *compiled = start_to_let_go(cli, log, 0)
    assert said.read_text().split() == ["late", "1", "early", "1"]
    assert compiled == [0, 0]  # the latecomer's methods and module came from the files
    assert cli("kill", "--all").returncode == 0
