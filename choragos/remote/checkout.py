"""A remote role's checkout, kept in step with its branch here.

Here, a remote role has a worktree of its own like a ``worktree = true``
role (``.choragos/worktrees/<role>`` on branch ``choragos/<role>``): the
mirror its work is committed, checked, gated and merged from, by the same
code as a local worktree's.  There, a checkout on the same branch name.
Git moves the commits both ways over the host's ssh connection:

- :func:`send` pushes the mirror's commit before a task is typed (the
  checkout there takes it with ``receive.denyCurrentBranch=updateInstead``,
  so its files follow) and copies the task's file to the same relative path;
- :func:`bring_back` commits what the role changed there and fast-forwards
  the mirror to it when the role reports, before its work is checked, unless
  it reaches into the session's state or out of the checkout
  (:mod:`inbound`);
- :func:`reset` drops what the checkout there holds beyond its commit,
  before a rolled-back mirror is sent.

Nothing comes into the main checkout but through the merge.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from choragos.config.memfloor import format_size
from choragos.gitstore import worktrees
from choragos.remote import inbound
from choragos.remote.link import HostLink, RemoteSeat
from choragos.remote.ssh import SshError

__all__ = ["bring_back", "ensure", "reset", "send", "send_file"]

IDENTITY = ("-c", "user.name=choragos", "-c", "user.email=choragos@localhost")


# A folder there that holds anything is taken only when it is this role's
# checkout (marked so, or, made before the mark, on the role's branch): the
# operator's own clone at that path is never switched, committed or sent back.
_ENSURE = """mkdir -p "$1" && cd "$1" || exit 1
if [ -n "$(ls -A)" ]; then
  mark=; [ -d .git ] && mark=$(git config --get choragos.checkout || echo none)
  head=; [ -d .git ] && head=$(git symbolic-ref -q HEAD)
  if [ "$mark" != "$3" ] && ! { [ "$mark" = none ] && [ "$head" = "refs/heads/$2" ]; }; then
    echo "$1 holds files that are not this role's checkout; choragos leaves them alone:" \
         "point workdir elsewhere, or remove that folder there" >&2
    exit 3
  fi
fi
{ [ -d .git ] || git init -q; } && git config choragos.checkout "$3" &&
git config receive.denyCurrentBranch updateInstead &&
git symbolic-ref HEAD "refs/heads/$2" && mkdir -p .choragos/tasks .choragos/reports .choragos/briefs
"""


def ensure(link: HostLink, seat: RemoteSeat) -> None:
    """A git repository at the seat's checkout whose pushed branch updates its files."""
    branch = worktrees.branch_of(seat.role)
    link.ssh.run(["sh", "-c", _ENSURE, "sh", seat.checkout, branch,
                  f"{link.project}/{seat.role}"], what="preparing the checkout")


def send(link: HostLink, seat: RemoteSeat, mirror: Path) -> None:
    """The mirror's branch to the host; its checkout's files follow."""
    branch = worktrees.branch_of(seat.role)
    _git(link, mirror, "push", "-q", "--force", f"{link.host.ssh}:{seat.checkout}",
         f"HEAD:refs/heads/{branch}")


def reset(link: HostLink, seat: RemoteSeat) -> None:
    """The checkout there back to its branch's commit: what it holds beyond is dropped
    (the session's own files under ``.choragos`` aside)."""
    link.ssh.run(["sh", "-c", 'cd "$1" && git reset -q --hard && git clean -fdq -e .choragos',
                  "sh", seat.checkout], what="resetting the checkout")


def send_file(link: HostLink, seat: RemoteSeat, local: Path, relative: str) -> None:
    """A file of the session (a brief, a task) to the same place in the checkout there."""
    link.write(f"{seat.checkout}/{relative}", local.read_bytes())


# The bytes of the objects the branch there holds beyond the mirror's commit
# (all of its objects when that commit is not there): what a fetch would bring.
_MEASURE = """cd "$1" || exit 1
if git cat-file -e "$3^{commit}" 2>/dev/null; then set -- "refs/heads/$2" --not "$3"
else set -- "refs/heads/$2"; fi
git rev-list --objects "$@" | cut -d' ' -f1 | git cat-file --batch-check='%(objectsize)' |
awk '{ n += $1 } END { printf "%.0f\\n", n }'
"""


def bring_back(link: HostLink, seat: RemoteSeat, mirror: Path, subject: str) -> None:
    """Commit the role's work there and fast-forward the mirror to it."""
    branch = worktrees.branch_of(seat.role)
    # The message (the task's words) goes on stdin: no task text on a command line.
    link.ssh.run(["sh", "-c", 'cd "$1" && git add -A -- . ":!.choragos" && '
                  '{ git diff --cached --quiet || git -c user.name=choragos '
                  '-c user.email=choragos@localhost commit -q -F -; }',
                  "sh", seat.checkout], stdin=subject.encode(), what="committing the remote work")
    _within_limit(link, seat, mirror, branch)
    _git(link, mirror, "fetch", "-q", f"{link.host.ssh}:{seat.checkout}",
         f"refs/heads/{branch}")
    try:
        refused = inbound.refusal(mirror, link.host.name)
    except OSError as exc:
        raise SshError(f"checking the work from {link.host.name}: {exc}") from None
    if refused:
        raise SshError(refused)
    _git(link, mirror, "merge", "-q", "--ff-only", "FETCH_HEAD")


def _within_limit(link: HostLink, seat: RemoteSeat, mirror: Path, branch: str) -> None:
    """SshError, before anything is fetched, when the work there is larger than
    the host's ``work_limit``: a runaway agent does not fill this machine's disk."""
    limit = link.host.work_limit
    if not limit:
        return
    base = worktrees.tip(mirror, branch)
    said = link.ssh.run(["sh", "-c", _MEASURE, "sh", seat.checkout, branch, base],
                        what="measuring the remote work").strip()
    try:
        size = int(said)
    except ValueError:
        raise SshError(f"measuring the work on {link.host.name} gave {said[:80]!r}; "
                       "nothing was taken") from None
    if size > limit:
        raise SshError(f"the work from {link.host.name} is {format_size(size)} of new files "
                       f"and history, more than its work_limit ({format_size(limit)}); "
                       "nothing was taken (make it smaller there, or raise "
                       f"[hosts.{link.host.name}] work_limit)")


def _git(link: HostLink, cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_SSH_COMMAND": link.ssh.git_ssh_command(),
           "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *IDENTITY, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise SshError(f"git {args[0]} with {link.host.name} failed: "
                       f"{done.stderr.strip() or done.returncode}")
