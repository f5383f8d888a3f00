"""The session's own tree, in process: a role actor crashing past the roles
supervisor's intensity escalates through the session supervisor, and the
stop that follows still ends the agents whose actors are down."""

from __future__ import annotations

import pytest

from choragos.actors import crew
from choragos.actors import messages as m
from choragos.actors import session as session_module
from choragos.actors.listener import settle
from choragos.actors.session import Session, SessionOptions
from choragos.board import journal
from choragos.config.model import load_config
from choragos.control import wire
from tests.conftest import pid_alive, wait_until
from tests.integration.harness import git_init, role_toml


def _made(short_tmp, coder: str = "") -> Session:
    """A session made (not started) in process on an orchestrator and ``coder``."""
    work = short_tmp / "work"
    work.mkdir()
    git_init(work)
    (work / ".choragos.toml").write_text(role_toml("orchestrator", start=True) + coder)
    return Session(load_config(None, work),
                   SessionOptions(workdir=work, socket=short_tmp / "run" / "s.sock"))


def _started(short_tmp, coder: str) -> Session:
    """A session started in process on an orchestrator and ``coder``, both
    agents running."""
    session = _made(short_tmp, coder)
    session.start()
    try:
        wait_until(lambda: all(s.child is not None and s.child.poll() is None
                               for s in session.roles.states().values()), 20,
                   message="both agents running")
    except BaseException:
        session.stop()
        raise
    return session


# The agents' reader threads end after their role actors were given up: they
# must end quietly, not die on the refusal.
@pytest.mark.timeout(90)
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_role_crash_past_both_intensities_stops_the_session_and_its_agents(
        short_tmp, monkeypatch):
    # No restart allowed at either level: the first crash goes to the top.
    monkeypatch.setattr(crew, "ROLE_INTENSITY", 0)
    monkeypatch.setattr(session_module, "SESSION_INTENSITY", 0)
    session = _started(short_tmp, role_toml("coder", "--worker"))
    try:
        pids = [s.child.pid for s in session.roles.states().values()]
        assert session.tree.children["roles"].spec.tree is not None
        session.roles.handle("coder").tell("a message no handler knows")  # the actor crashes
        assert session.wait(20), "the session did not start stopping"
        assert "supervisor session gave up: roles failed" in session.failure
        assert session.roles.handle("coder").current() is None  # its actor is down...
        assert all(pid_alive(pid) for pid in pids)  # ...its agent is not, yet
    finally:
        session.stop()
    wait_until(lambda: not [p for p in pids if pid_alive(p)], 10, message="agents gone")
    assert not (short_tmp / "run" / "s.sock").exists()
    assert journal.load(journal.state_dir(session.workdir)) is not None  # kept for --resume


@pytest.mark.timeout(90)
def test_the_deck_announces_an_echo_to_every_roles_reader(short_tmp):
    """Keys first, wired through a real session: the deck's port announces a
    key's echo, and another role's reader holds its output until it is drawn."""
    from choragos.actors import roleio
    from choragos.roles.rolestatus import RoleStatus
    from choragos.ui.uiactor import SessionAccess

    session = _started(short_tmp, role_toml("coder"))
    try:
        assert all(s.echo_wait is session.roles.echo_wait
                   for s in session.roles.states().values())
        coder = session.roles.state("coder")
        # Briefed and quiet: the coder's next output is the echo typed below.
        wait_until(lambda: coder.booted and coder.typing is None
                   and coder.status is RoleStatus.IDLE, 30, message="the coder briefed")
        shown = "".join(coder.terminal.display())  # a wrapped line reads whole
        session.roles.echo_wait.hold = 60
        port = SessionAccess(session.roles, session.core, session.workdir)
        port.expect_echo("orchestrator", 1)
        roleio.type_keys(coder, b"neighbour", session.roles.handle("coder").tell)
        wait_until(lambda: session.roles.echo_wait.waiting == 1, 10, message="the coder held")
        assert "".join(coder.terminal.display()) == shown
        session.roles.echo_wait.fed("orchestrator", 1)  # its reader took the one-byte echo
        port.echo_drawn("orchestrator")
        wait_until(lambda: "neighbour" in "".join(coder.terminal.display()), 10,
                   message="the held echo fed")
    finally:
        session.stop()


@pytest.mark.timeout(90)
def test_a_reload_that_adds_roles_raises_the_roles_supervisors_intensity(short_tmp):
    session = _started(short_tmp, role_toml("coder", "--worker"))
    try:
        roles = session.tree.children["roles"].spec.tree
        assert roles.intensity == crew.role_intensity(2)
        (session.workdir / ".choragos.toml").write_text(
            role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
            + role_toml("reviewer", "--worker") + role_toml("tester", "--worker"))
        reload = m.Dispatch(wire.parse_request(b'{"cmd": "reload", "loosen": true}'))
        assert settle(session.core.ask(reload, timeout=30))["status"] == "ok"
        wait_until(lambda: roles.intensity == crew.role_intensity(4), 10,
                   message="the intensity of four roles")
    finally:
        session.stop()


@pytest.mark.timeout(90)
def test_the_clocks_aftercare_and_reload_start_with_the_rest_and_keep_what_waited(short_tmp):
    """`serve` starts the session without its clocks, aftercare and reload
    actors (Session.rest) and starts them once its first frame is drawn:
    until then none of them is in the tree, what the core tells them waits
    in their handles, and a reload finds its handle already."""
    from choragos.actors.latemessages import StartClock

    session = _made(short_tmp)
    rest = ("clocks", "aftercare", "reload")
    session.start(rest=False)
    try:
        assert [name for name in rest if name in session.tree.children] == []
        assert "listener" in session.tree.children  # answering already
        assert session.core_state.reloader is session.reloader is not None
        assert session.clocks.current() is None
        session.clocks.tell(StartClock("T1", "orchestrator", 3600.0))
        assert session.start_rest() is True
        assert session.start_rest() is False  # once
        assert [name for name in rest if name in session.tree.children] == list(rest)
        assert list(session.tree.children)[-3:] == list(rest)
        for handle in (session.clocks, session.aftercare, session.reloader):
            assert handle.current() is not None
        assert session.clocks._pending == []  # the clock told before was delivered
    finally:
        session.stop()
    assert session.start_rest() is False  # a stopped session starts nothing more
    assert session.supervisor is None


@pytest.mark.timeout(90)
def test_a_held_roles_agent_spawns_only_once_let_go(short_tmp):
    """`serve` in a terminal holds the agents of the roles its deck does not
    show until its client's first frame is out (Session.spawn_held): their
    actors start with the others, their agents do not; let go, they spawn,
    once, and the rest's start lets go of any still held."""
    session = _made(short_tmp, role_toml("coder", "--worker") + role_toml("reviewer", "--worker"))
    session.start(rest=False, hold=lambda: ("reviewer",))
    try:
        states = session.roles.states()
        # Booted (a prompt, then quiet for a while): long after any Spawn
        # told with theirs would have started the reviewer's agent too.
        wait_until(lambda: states["orchestrator"].booted and states["coder"].booted, 30,
                   message="the shown roles' agents booted")
        assert states["reviewer"].child is None
        assert session.roles.handle("reviewer").current() is not None  # its actor runs
        assert session.spawn_held() == ("reviewer",)
        assert session.spawn_held() == ()  # once
        wait_until(lambda: states["reviewer"].child is not None
                   and states["reviewer"].child.poll() is None, 20,
                   message="the held agent running")
        pid = states["reviewer"].child.pid
        assert session.start_rest() is True
        assert states["reviewer"].child.pid == pid  # not spawned a second time
    finally:
        session.stop()


def _holding_the_coder(short_tmp) -> Session:
    """A session started as `serve` in a terminal starts it, the coder's agent held."""
    session = _made(short_tmp, role_toml("coder", "--worker"))
    session.start(rest=False, hold=lambda: ("coder",))
    return session


@pytest.mark.timeout(90)
def test_the_rest_lets_go_of_the_held_agents(short_tmp):
    """A client that never drew a frame: the rest's start spawns them."""
    session = _holding_the_coder(short_tmp)
    try:
        coder = session.roles.state("coder")
        assert coder.child is None
        assert session.start_rest() is True
        wait_until(lambda: coder.child is not None, 20, message="the held agent spawned")
    finally:
        session.stop()


@pytest.mark.timeout(90)
def test_a_stopped_session_spawns_no_held_agent(short_tmp):
    session = _holding_the_coder(short_tmp)
    session.stop()
    assert session.spawn_held() == ()
    assert session.start_rest() is False
    assert session.roles.state("coder").child is None
