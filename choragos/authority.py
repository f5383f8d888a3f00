"""Who may do what: the caller's role comes from the kernel, not from the caller.

The control socket tells the server the peer's pid (``SO_PEERCRED``).  A
request whose pid descends from a role's process (walking ``/proc``
ancestry, the same check ``attach`` uses to refuse a client inside a pane)
comes from that role; any other comes from the operator.  ``CHORAGOS_ROLE``
is never believed.

This guards against agents' mistakes and overreach (an orchestrator
approving its own gate, a worker closing another's task); it is not a wall
against a same-user attacker, who can reparent a process or talk to the
socket from outside the tree.  See docs/protocol.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from choragos import commands


def ancestors(pid: int, limit: int = 64) -> list[int]:
    """``pid`` and its parents, as far as /proc tells (Linux)."""
    chain = []
    while pid > 1 and len(chain) < limit:
        chain.append(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            break
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) < 2 or not fields[1].isdigit():
            break
        pid = int(fields[1])
    return chain


def caller_role(pid: int | None, role_pids: Mapping[int, str]) -> str | None:
    """The role whose process tree holds ``pid``; None for the operator."""
    if not pid or not role_pids:
        return None
    for ancestor in ancestors(pid):
        if ancestor in role_pids:
            return role_pids[ancestor]
    return None


def refusal(request: dict, caller: str | None, may_delegate: bool) -> str | None:
    """Why ``caller`` may not send ``request``, or None.  ``work-done``
    ownership needs the board and is checked by the core."""
    if caller is None:
        return None
    cmd = request["cmd"]
    # Which commands only a person outside every role's process tree may use
    # is declared with each command (``operator`` in choragos/commands.py).
    command = commands.COMMANDS.get(cmd)
    if command is not None and command.operator_only(request):
        what = command.spoken_as(request)
        return (f"{what} is an operator command and was sent from inside the {caller} "
                "role's process tree; run it from your own terminal")
    if cmd == "delegate" and not may_delegate:
        return (f"{caller} may not delegate (set can_delegate = true on the role to allow "
                "it); report back with `choragos work-done` instead")
    return None
