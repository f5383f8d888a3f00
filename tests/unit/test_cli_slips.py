"""An empty argument (a shell variable unset) or a missing one is a usage
error in one sentence, and nothing is sent to the session."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from choragos.cli import _client, delegate, gate, keys, rolectl, rollback
from choragos.cli._quickargs import quick

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def listening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A real socket the verbs would reach ($CHORAGOS_SOCK), to see that none did."""
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.setblocking(False)
    monkeypatch.setenv("CHORAGOS_SOCK", str(path))
    monkeypatch.chdir(tmp_path)
    yield server
    server.close()


def _untouched(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return True
    return False


@pytest.mark.parametrize("run,argv", [
    (gate.run, ["approve", ""]),
    (gate.run, ["reject", "  "]),
    (rollback.run, [""]),
])
def test_an_empty_task_id_is_a_usage_error_and_the_session_is_not_asked(
        listening, capsys, run, argv) -> None:
    assert run(argv) == _client.EXIT_USAGE
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "such as T" in lines[0], lines
    assert _untouched(listening)


@pytest.mark.parametrize("argv", [
    ["--to", "coder,,reviewer", "--task", "t"],
    ["--to=coder,", "--task=t"],
    ["--to", "coder", "--to", ",reviewer", "--task", "t"],
])
def test_an_empty_name_among_the_targets_is_named_and_nothing_is_sent(
        listening, capsys, argv) -> None:
    # The quick reader takes these spellings, and argparse reads them alike:
    # the empty name is refused after either.
    read = quick(argv, (*delegate.OPTIONS, _client.SOCK))
    assert read is not None and vars(read) == vars(delegate.arguments("delegate").parse_args(argv))
    assert delegate.run(argv) == _client.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has an empty role name" in err, err
    assert _untouched(listening)


@pytest.mark.parametrize("run,verb,said", [
    (rolectl.run, "pause", "name the role to pause"),
    (rolectl.run, "resume", "name the role to resume"),
    (rolectl.run, "restart", "name the role to restart"),
    (keys.run, "keys", "name the role and the keys to press"),
    (rollback.run, "rollback", "name the task id or checkpoint to roll back to"),
])
def test_a_missing_argument_is_said_as_the_other_verbs_say_it(
        listening, capsys, run, verb, said) -> None:
    assert run([], verb) == _client.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"choragos {verb}: {said}") and err.count("\n") == 1, err
    assert "the following arguments are required" not in err
    assert _untouched(listening)
