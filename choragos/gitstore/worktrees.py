"""A git worktree per role, and merging its branch back into the main checkout.

Each ``worktree = true`` role works in ``.choragos/worktrees/<role>`` on
branch ``choragos/<role>`` (``.choragos/`` is ignored, so the main tree's
checkpoints and ``git status`` never see it).  A ``.choragos`` link at the
top of the worktree points back to the session's state directory, so the
relative paths every brief and task file names (``.choragos/tasks/T3.md``,
``.choragos/reports/T3.md``) work from there too; it is never committed.

Everything runs the git CLI with argv lists, never a shell: merging, merge
checks (``git merge-tree``) and worktrees are not in dulwich, and git's own
merge is what the user would run by hand.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from choragos import safeexec

BRANCH_PREFIX = "choragos/"
EXCLUDE = ":(exclude).choragos"
IDENTITY = ("-c", "user.name=choragos", "-c", "user.email=choragos@localhost")


class WorktreeError(Exception):
    """A git step failed; the message says which and why."""


@dataclass(frozen=True)
class MergeResult:
    """How a merge into the main checkout went: its commit, or the conflicts or why not."""

    merged: bool
    commit: str = ""                 # the merge commit on the main checkout
    conflicts: tuple[str, ...] = ()  # files both sides changed
    why: str = ""                    # why it was not merged
    cleared: tuple[str, ...] = ()    # a killed merge's leftovers cleared before it
    already: bool = False            # it was in before this merge (an earlier one took it)
    earlier: str = ""                # the task whose merge took it, when its message says


def branch_of(role: str) -> str:
    return BRANCH_PREFIX + role


def path_of(workdir: Path, role: str) -> Path:
    return workdir / ".choragos" / "worktrees" / role


def refusal(workdir: Path) -> str | None:
    """Why ``worktree = true`` cannot work here, or None."""
    done = _run(workdir, "rev-parse", "--is-bare-repository", "--is-inside-work-tree",
                check=False)
    if done.returncode != 0:
        return (f"{workdir} is not inside a git repository, so worktree = true has no "
                "repository to branch from; run `git init` and commit, or drop the key")
    bare, inside = [*done.stdout.split(), "", ""][:2]
    if bare == "true" or inside != "true":
        return f"{workdir} is a bare git repository: there is no checkout to merge work into"
    if _run(workdir, "rev-parse", "--verify", "-q", "HEAD", check=False).returncode != 0:
        return (f"the repository at {workdir} has no commit yet; a worktree branches from "
                "HEAD, so commit something first")
    return None


def ensure(workdir: Path, role: str) -> Path:
    """The role's worktree, reused when it is there, else made from HEAD."""
    path, branch = path_of(workdir, role), branch_of(role)
    _stays_inside(workdir, path)
    if (path / ".git").exists():
        _link_state(workdir, path)
        if not unmerged(workdir, branch):
            catch_up(path, workdir)  # kept for its files alone: start from today's HEAD
        return path
    _run(workdir, "worktree", "prune")
    if path.exists() and any(path.iterdir()):
        raise WorktreeError(f"{path} exists but is not a worktree; move it away")
    path.parent.mkdir(parents=True, exist_ok=True)
    if _has_branch(workdir, branch):
        _run(workdir, "worktree", "add", "-q", str(path), branch)
    else:
        _run(workdir, "worktree", "add", "-q", "-b", branch, str(path), "HEAD")
    _link_state(workdir, path)
    return path


def _stays_inside(workdir: Path, path: Path) -> None:
    """The state directory is writable by every role (through its link): a
    link put in place of ``worktrees`` or of a worktree would start a role,
    and commit its work, wherever it leads (the main checkout, or outside)."""
    expected = os.path.join(os.path.realpath(workdir / ".choragos"), "worktrees", path.name)
    found = os.path.realpath(path)
    if found != expected:
        raise WorktreeError(f"{path} leads to {found} (a link); a worktree stays in "
                            f"{os.path.dirname(expected)}: remove the link and start again")


def _link_state(workdir: Path, path: Path) -> None:
    link = path / ".choragos"
    if not os.path.lexists(link):
        os.symlink(os.path.relpath(workdir / ".choragos", path), link)
    _exclude_link(workdir)


def _exclude_link(workdir: Path) -> None:
    """Keep the link out of ``git status`` and ``git add -A`` in every worktree
    (an agent may commit by itself): one line in the repository's info/exclude."""
    common = Path(_run(workdir, "rev-parse", "--git-common-dir").stdout.strip())
    exclude = (common if common.is_absolute() else workdir / common) / "info" / "exclude"
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if "/.choragos" not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as handle:
            handle.write(("" if not text or text.endswith("\n") else "\n")
                         + "# choragos: the state link in each role's worktree\n/.choragos\n")


def commit_work(path: Path, subject: str, body: str, branch: str) -> str | None:
    """Commit everything the worker changed on its branch; None when nothing changed."""
    _on_branch(path, branch)
    _run(path, "add", "-A")  # the state link is in info/exclude
    if _run(path, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return None
    message = subject.strip() or "work from choragos"
    _run(path, *_identity(path), "commit", "-q", "--no-verify", "-m", message, "-m", body)
    return head(path)


def _on_branch(path: Path, branch: str) -> None:
    """The worker may have switched its worktree to another branch (or to no
    branch): a commit there would never be merged, and the branch it should
    be on would say there is nothing to merge.  Nothing is committed then."""
    done = _run(path, "symbolic-ref", "-q", "HEAD", check=False)
    now = done.stdout.strip()
    if now == f"refs/heads/{branch}":
        return
    where = f"on {now.removeprefix('refs/heads/')}" if now else "on no branch (a detached HEAD)"
    raise WorktreeError(f"the worktree {path} is {where}, not on {branch}; nothing was "
                        f"committed: run `git switch {branch}` there (the worker's commits "
                        "elsewhere can be cherry-picked onto it) and report again")


def merged_by(workdir: Path, what: str) -> str:
    """The merge commit on HEAD that brought ``what`` in (``what`` itself when none did)."""
    what = _full(what)
    found = _run(workdir, "rev-list", "--merges", "--ancestry-path", "--reverse",
                 f"{what}..HEAD", "--", check=False).stdout.split()
    return found[0] if found else _run(workdir, "rev-parse", "--verify", "-q",
                                       f"{what}^{{commit}}").stdout.strip()


def already_merged(workdir: Path, what: str) -> MergeResult:
    """``what`` is in HEAD already: the merge that took it, and its task when
    the session made it (its message starts ``Merge choragos/<role>: T7``)."""
    commit = merged_by(workdir, what)
    subject = _run(workdir, "log", "-1", "--format=%s", commit, "--", check=False).stdout
    found = re.match(rf"Merge {re.escape(BRANCH_PREFIX)}\S+: (T\d+)\b", subject)
    return MergeResult(True, commit=commit, already=True, earlier=found[1] if found else "")


def checkpoint_of(workdir: Path, name: str) -> str:
    """The main tree's checkpoint called ``name`` (its ref), or ""."""
    from choragos.gitstore.checkpoints import REF_PREFIX
    refs = _run(workdir, "for-each-ref", "--format=%(refname)", REF_PREFIX, check=False)
    return next((ref for ref in refs.stdout.split() if ref.endswith(f"-{name}")), "")


def head(path: Path) -> str:
    return _run(path, "rev-parse", "HEAD").stdout.strip()


def tip(workdir: Path, branch: str) -> str:
    """The commit ``branch`` points at now."""
    return _run(workdir, "rev-parse", "--verify", "-q",
                f"refs/heads/{branch}^{{commit}}").stdout.strip()


def merge_base(workdir: Path, branch: str) -> str:
    return _run(workdir, "merge-base", "HEAD", branch).stdout.strip()


def unmerged(workdir: Path, branch: str) -> bool:
    """Whether ``branch`` holds commits the main checkout's HEAD does not."""
    done = _run(workdir, "merge-base", "--is-ancestor", _full(branch), "HEAD", check=False)
    return done.returncode != 0


def _full(name: str) -> str:
    """A role's branch by its full ref: git prefers a tag of the same name (one
    a worker can make) to the branch when given the short one."""
    return f"refs/heads/{name}" if name.startswith(BRANCH_PREFIX) else name


def merge(workdir: Path, branch: str, message: str, commit: str = "") -> MergeResult:
    """Merge ``commit`` (else ``branch``'s head) into the main checkout, or
    change nothing at all.  A commit, not the branch's name: what the branch
    points at may have moved since the operator saw its diff."""
    what = commit or _full(branch)
    dirty = _run(workdir, "status", "--porcelain", "--branch", "--untracked-files=no").stdout
    top, *changed = dirty.splitlines() or [""]
    busy = _busy(workdir, top)
    if busy:
        return MergeResult(False, why=busy)
    if not unmerged(workdir, what):
        # An older gate of the role approved after a newer one: its work went
        # in with that merge (or the operator merged it by hand).
        return already_merged(workdir, what)
    files = [line[3:] for line in changed if line.strip()]
    if files:
        return MergeResult(False, why="the main checkout has uncommitted changes ("
                           + ", ".join(files[:5]) + ("…" if len(files) > 5 else "") + ")")
    trial = _run(workdir, "merge-tree", "--write-tree", "--name-only", "--no-messages",
                 "HEAD", what, check=False)
    if trial.returncode == 1:
        conflicts = tuple(dict.fromkeys(line for line in trial.stdout.splitlines()[1:] if line))
        return MergeResult(False, conflicts=conflicts,
                           why="it conflicts with the main checkout in " + ", ".join(conflicts))
    if trial.returncode != 0:
        return MergeResult(False, why="git merge-tree failed: " + trial.stderr.strip())
    clobbered = overwritten(workdir, trial.stdout.split("\n", 1)[0].strip())
    if clobbered:
        return MergeResult(False, conflicts=clobbered, why=(
            "it would overwrite what is in the main checkout but not in git ("
            + ", ".join(clobbered[:5]) + ("…" if len(clobbered) > 5 else "")
            + "): git replaces ignored files and the state directory without a word, and "
            "no checkpoint holds them; move them away, or merge by hand"))
    done = _run(workdir, *_identity(workdir), "merge", "--no-ff", "--no-edit", "-q", "-m",
                message, what, check=False)
    if done.returncode != 0:
        _run(workdir, "merge", "--abort", check=False)
        return MergeResult(False, why="git merge failed: " + (done.stderr or done.stdout).strip())
    return MergeResult(True, commit=head(workdir))


# What git leaves in the repository while a person's operation is under way,
# and the command that gives it up.
UNDER_WAY = {"MERGE_HEAD": ("a merge", "merge --abort"),
             "rebase-merge": ("a rebase", "rebase --abort"),
             "rebase-apply": ("a rebase", "rebase --abort"),
             "CHERRY_PICK_HEAD": ("a cherry-pick", "cherry-pick --abort"),
             "REVERT_HEAD": ("a revert", "revert --abort"),
             "BISECT_LOG": ("a bisect", "bisect reset")}
LOCK = "index.lock"


def _git_paths(workdir: Path, *names: str) -> list[Path]:
    """Where git keeps ``names`` for the main checkout (absolute)."""
    found = _run(workdir, "rev-parse", *[a for n in names for a in ("--git-path", n)])
    return [Path(p) if os.path.isabs(p) else workdir / p for p in found.stdout.splitlines()]


def _busy(workdir: Path, top: str) -> str:
    """Why the main checkout is no place for a merge now, or "": on no branch a
    merge commit would be left behind by the next checkout, and in the middle
    of the operator's rebase or merge it would become part of theirs."""
    if top.startswith("## HEAD (no branch)"):
        return ("the main checkout is on no branch (a detached HEAD), where a merge would be "
                "lost at the next checkout; check out the branch it belongs on")
    lock, *found = _git_paths(workdir, LOCK, *UNDER_WAY)
    if os.path.lexists(lock):
        return lock_refusal(workdir, lock)
    for name, where in zip(UNDER_WAY, found, strict=False):
        if os.path.lexists(where):
            what, undo = UNDER_WAY[name]
            return (f"the main checkout is in the middle of {what} ({where} is there); "
                    f"finish it, or give it up with `git -C {shlex.quote(str(workdir))} "
                    f"{undo}`")
    return ""


def lock_refusal(workdir: Path, lock: Path) -> str:
    return (f"{lock} is there: a git command is running in {workdir}, or one was killed; "
            f"if none is running, remove it with `rm {shlex.quote(str(lock))}`")


def clear_interrupted(workdir: Path, commit: str, since: float) -> tuple[tuple[str, ...], str]:
    """What a ``kill -9`` during this session's own merge of ``commit`` left in
    the main checkout, cleared when it is provably that merge's: an
    ``index.lock`` older than ``since`` (the resumed session's start) while no
    git runs in the checkout, a ``MERGE_HEAD`` naming ``commit`` (git's own
    ``merge --abort`` undoes it).  Anything else is left, and the refusal says
    which file and what to run.  (The cleared paths, the refusal or "".)"""
    lock, merge_head = _git_paths(workdir, LOCK, "MERGE_HEAD")
    cleared: list[str] = []
    if os.path.lexists(lock):
        if not (os.lstat(lock).st_mtime < since and not git_running(workdir)):
            return (), lock_refusal(workdir, lock)
        os.unlink(lock)
        cleared.append(str(lock))
    if not os.path.lexists(merge_head):
        return tuple(cleared), ""
    named = merge_head.read_text(encoding="utf-8", errors="replace").split()
    if not commit or named != [commit]:
        return tuple(cleared), (
            f"{merge_head} names {' '.join(named)[:40] or 'nothing'}, not the commit this "
            f"merge was making ({commit or 'unknown'}): a merge of yours is under way; finish "
            f"it, or give it up with `git -C {shlex.quote(str(workdir))} merge --abort`")
    done = _run(workdir, "merge", "--abort", check=False)
    if done.returncode != 0:
        return tuple(cleared), (f"the merge a kill interrupted could not be undone "
                                f"({(done.stderr or done.stdout).strip()}); run `git -C "
                                f"{shlex.quote(str(workdir))} merge --abort`")
    return (*cleared, str(merge_head)), ""


def git_running(workdir: Path) -> bool:
    """Whether a git process works in ``workdir`` (its cwd there, or the path
    on its command line), other than this session's own (its children: they
    started after the leftovers, which are older); True when it cannot be
    told (no /proc)."""
    root = os.path.realpath(workdir)

    def inside(path: str) -> bool:  # the roles' worktrees, with their own index, are not
        path = os.path.realpath(path) if path.startswith("/") else ""
        return (path == root or path.startswith(root + os.sep)) and not path.startswith(
            os.path.join(root, ".choragos") + os.sep)

    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return True
    for pid in pids:
        with suppress(OSError):
            with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
                if not handle.read().strip().startswith("git"):
                    continue
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                if handle.read().rsplit(")", 1)[1].split()[1] == str(os.getpid()):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
            if any(map(inside, [os.readlink(f"/proc/{pid}/cwd"), *argv])):
                return True
    return False


def overwritten(workdir: Path, tree: str) -> tuple[str, ...]:
    """What merging ``tree`` would write over that git does not track: a path
    it adds where the checkout has a file (untracked ones git refuses to
    touch, but ignored ones, a ``.env`` say, it replaces), a path under a
    file or a symbolic link there, and anything at all under ``.choragos``
    (the session's state, never tracked: a committed link there would swap
    the whole state directory for a link out of the workspace)."""
    listed = _run(workdir, "diff", "--name-status", "--no-renames", "-z", "HEAD", tree).stdout
    fields = listed.split("\0")
    entries = list(zip(fields[0::2], fields[1::2], strict=False))
    deleted = {path for status, path in entries if status == "D"}
    found, seen = [], set()
    for status, path in entries:
        if status != "A" and path.split("/")[0] != ".choragos":
            continue
        if path.split("/")[0] == ".choragos" or os.path.lexists(workdir / path) or _blocked(
                workdir, path, deleted, seen):
            found.append(path)
    return tuple(found)


def _blocked(workdir: Path, path: str, deleted: set[str], seen: set[str]) -> bool:
    """Whether a folder of ``path`` is, in the checkout, a link or a file the merge keeps."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        if prefix in seen:
            continue
        where = workdir / prefix
        if os.path.islink(where) or (os.path.lexists(where) and not os.path.isdir(where)
                                     and prefix not in deleted):
            return True
        seen.add(prefix)
    return False


def catch_up(path: Path, workdir: Path) -> bool:
    """Fast-forward the role's branch to the main checkout's HEAD after a merge."""
    target = head(workdir)
    return _run(path, "merge", "--ff-only", "-q", target, check=False).returncode == 0


def prune(workdir: Path, role: str) -> bool:
    """Remove the role's worktree and branch when everything on it is merged
    and nothing is left uncommitted or ignored, with the worktree's
    checkpoints (there is nothing left to restore them into); True when removed."""
    path, branch = path_of(workdir, role), branch_of(role)
    if not (path / ".git").exists() or unmerged(workdir, branch):
        return False
    # Ignored files too: `git worktree remove` deletes them without a word, and
    # a worker's data, results or .env are often ignored (the state link is not
    # counted: it is taken away below).
    status = _run(path, "status", "--porcelain", "--ignored", "--", ".", EXCLUDE, check=False)
    if status.returncode != 0 or status.stdout.strip():
        return False
    name = _checkpoint_name(path)
    link = path / ".choragos"
    if link.is_symlink():
        link.unlink()
    _run(workdir, "worktree", "remove", str(path))
    _run(workdir, "branch", "-q", "-d", branch, check=False)
    if name:
        _drop_checkpoints(workdir, name)
    return True


def _checkpoint_name(path: Path) -> str:
    """The name the worktree's checkpoints are kept under ("" if unknown)."""
    from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore, NotARepository
    try:
        with CheckpointStore(path) as store:
            return store.worktree
    except (CheckpointError, NotARepository, OSError):
        return ""


def _drop_checkpoints(workdir: Path, name: str) -> None:
    from choragos.gitstore.checkpoints import CheckpointError, NotARepository
    from choragos.gitstore.checkpointtrees import drop_worktree
    # Best effort: refs left behind only cost space, and `checkpoints prune`
    # removes those of a worktree that is gone.
    with suppress(CheckpointError, NotARepository, OSError):
        drop_worktree(workdir, name)


def _identity(path: Path) -> tuple[str, ...]:
    """The user's git identity when they have one; choragos's otherwise."""
    known = _run(path, "config", "user.email", check=False).stdout.strip()
    return () if known else IDENTITY


def _has_branch(workdir: Path, branch: str) -> bool:
    done = _run(workdir, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
    return done.returncode == 0


def _run(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(safeexec.git_argv(cwd, *args), capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, check=False,
                              env=safeexec.trusted_env(None, safeexec.workspace_of(cwd)))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"could not run git {args[0]}: {exc}") from None
    if check and done.returncode != 0:
        raise WorktreeError(f"git {' '.join(args[:2])} failed: "
                            f"{(done.stderr or done.stdout).strip()}")
    return done
