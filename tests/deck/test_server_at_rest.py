"""What a running session server has mapped at rest: OpenSSL's libcrypto
(3.6 MB resident) is not, in a session with checkpoints off (their git
objects are named by SHA-1, so a session that takes checkpoints loads it)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from choragos import classcode
from choragos.session import modulecode
from choragos.session.daemon import sidecar_for
from tests.conftest import wait_until
from tests.deck.conftest import TEAM, cli_for, kill_all_and_remove, scratch_project

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project():
    root, work, env = scratch_project()
    del env["CHORAGOS_SOCK"]  # the socket's default name, as a user's session has
    (work / ".choragos.toml").write_text(TEAM + "\n[checkpoints]\nenabled = false\n")
    yield root, work, env
    kill_all_and_remove(cli_for(env, work), root)


def test_a_server_at_rest_has_not_loaded_openssl(project):
    _root, work, env = project
    cli = cli_for(env, work)
    started = cli("serve", "--detach")
    assert started.returncode == 0, started.stderr
    # The name the client and the server agree on, as every version named it.
    digest = hashlib.sha256(os.fsencode(str(work.resolve()))).hexdigest()[:8]
    control = Path(env["XDG_RUNTIME_DIR"]) / f"choragos-{os.getuid()}" / f"{digest}.sock"
    assert control.is_socket()
    pid = json.loads(sidecar_for(control).read_text())["pid"]
    assert cli("status").returncode == 0
    mapped = Path(f"/proc/{pid}/maps").read_text()
    assert "/libpython" in mapped or "/python" in mapped  # the server's own maps
    assert "libcrypto" not in mapped


def test_a_second_start_compiles_no_dataclass_method_and_no_module(project):
    """The methods dataclasses writes are compiled by the first start and come
    from the user's cache at the next (choragos/classcode.py): about a third of
    the server's CPU to its first frame.  So do the session's modules, compiled
    without their functions' docstrings (choragos/session/modulecode.py), and
    the classes' and modules' docstrings are let go."""
    root, work, env = project
    env["XDG_CACHE_HOME"] = str(root / "cache")
    cli = cli_for(env, work)
    log = work / ".choragos" / "logs" / "server.log"
    compiled, modules, docstrings = [], [], []
    for start in range(2):
        lines, methods, modules_compiled = start_to_let_go(cli, log, start)
        compiled.append(methods)
        modules.append(modules_compiled)
        docstrings.append(figures(lines, "docstrings let go", "go: "))
        running = [n for n, line in enumerate(lines) if "session running in" in line]
        assert len(running) == start + 1
        said = [n for n, line in enumerate(lines) if "docstrings let go" in line]
        assert said[-1] > running[-1]  # after the server said it is ready
        assert cli("kill", "--all").returncode == 0
    assert compiled[0] > 300  # the first start: the session's, the deck's
    assert compiled[1] == 0
    assert modules[0] > 150  # the session's, the deck's: each module once
    assert modules[1] == 0
    # Every class's and module's docstring goes once the modules are loaded;
    # the functions still holding one are those loaded before the verb began
    # (the interpreter's frozen modules, the site's).  A role's thread's
    # imports come through the cache too (its screen's pyte and emulator).
    # (classes, modules, bytes; functions holding one, bytes.)
    classes, modules_, _, holding, _ = docstrings[1]
    assert classes > 500 and modules_ > 200
    # 760 counted; 951 when only the main thread's imports came through the
    # cache, 1,739 when only the server's own did.
    assert holding < 860
    cache = root / "cache" / "choragos"
    assert sorted(str(p) for p in cache.iterdir()) == sorted(
        [classcode.cache_path(env), modulecode.cache_path(env)])


def start_to_let_go(cli, log: Path, start: int) -> tuple[list[str], int, int]:
    """``serve --detach`` (the ``start``-th in ``log``, from 0) until it has
    let go of its docstrings and caches: the log's lines then, and the
    dataclasses' methods and the modules its start compiled."""
    started = cli("serve", "--detach")
    assert started.returncode == 0, started.stderr
    # The docstrings go after the start (choragos/cli/serve.py's
    # LET_GO_AFTER), not on the way to the first frame.
    lines = wait_until(lambda: _after(log, "docstrings let go", start), 30,
                       message="the docstrings let go")
    counts = [int([line for line in lines if what in line][-1].split(": ")[-1].split()[0])
              for what in ("dataclasses' methods compiled at the start",
                           "modules compiled at the start")]
    return lines, *counts


def figures(lines: list[str], what: str, after: str) -> list[int]:
    """The numbers in the last of ``lines`` that says ``what``, after ``after``."""
    said = [line for line in lines if what in line][-1]
    return [int(n) for n in re.findall(r"\b\d+\b", said.split(after, 1)[1])]


def _after(log: Path, what: str, start: int) -> list[str] | None:
    """The log's lines once the ``start``-th start (from 0) has said ``what``."""
    lines = log.read_text().splitlines() if log.exists() else []
    return lines if sum(what in line for line in lines) > start else None
