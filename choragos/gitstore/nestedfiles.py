"""A nested repository's files as a checkpoint keeps them, so a rollback
can put them back.

A checkpoint stores a nested repository's commit as a gitlink, never its
files (that is what ``git add -A`` stages).  What an agent changed there
would then outlive a rollback.  So each checkpoint also keeps, for each
nested repository it could read:

* the commit its HEAD named (a ``Choragos-Nested-Head`` line of the
  checkpoint's message, ``unborn`` for one without a commit);
* the files of its work tree that differ from that commit (edited, added
  and not ignored by its own rules, their mode changed), their blobs in
  the main repository's store, in a tree that lays them out at their
  place in the workspace;
* the files of that commit its work tree lacked (``Choragos-Nested-Gone``
  lines).

The tree and the lines are a second commit, the checkpoint's parent, so
the checkpoint's own tree stays what ``git add -A`` would stage and its
ref keeps the blobs from ``git gc``.  A checkpoint whose nested
repositories all match their HEAD has no parent: the commit each names is
in that repository's own store.  A tree without a nested repository
writes nothing more at all.

Only the files that differ are read: the walk's tree ids (its records
name one per directory) are compared with the commit's, and only a
directory whose id differs is looked into.  Nothing here runs git.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from choragos.gitstore.objects import ObjectWriter
from choragos.gitstore.walk import MODE_GITLINK, MODE_LINK, MODE_TREE, Record

HEAD_TRAILER = "Choragos-Nested-Head: "  # + <commit or "unborn"> <path as a JSON string>
GONE_TRAILER = "Choragos-Nested-Gone: "  # + <workspace path as a JSON string>
UNBORN = "unborn"
_NOT_FILES = (MODE_TREE, MODE_GITLINK)

Files = dict[bytes, tuple[int, bytes]]  # path -> (mode, binary id)


@dataclass(frozen=True)
class Stored:
    """What a checkpoint keeps of its nested repositories: the commit each
    named, the files that differed from it and the ones it lacked (paths in
    the workspace)."""

    heads: dict[bytes, str]  # repository path -> its HEAD commit (hex) or "unborn"
    files: Files
    gone: list[bytes]


def against_head(tree_entries: Callable[[str], Files], head_tree: str | None,
                 records: dict[bytes, Record]) -> tuple[Files, list[bytes], Files]:
    """The work tree a walk recorded (``records``) against its HEAD's tree
    (hex; None without a commit): the files that differ or are new, those
    the work tree lacks, relative to the repository, and what HEAD holds at
    each of those paths (a file; none for a new one).  A directory whose
    tree id is HEAD's is not looked into.  ``tree_entries``: one tree's
    entries by name."""
    changed: Files = {}
    gone: list[bytes] = []
    was: Files = {}
    pending: list[tuple[bytes, str | None, bool]] = [(b"", head_tree, True)]
    while pending:
        rel, head_id, walked = pending.pop()
        work = _work_entries(records.get(rel)) if walked else {}
        head = tree_entries(head_id) if head_id is not None else {}
        for name in work.keys() | head.keys():
            now, then = work.get(name), head.get(name)
            if now == then:
                continue
            path = rel + name
            now_dir = now is not None and now[0] == MODE_TREE
            then_dir = then is not None and then[0] == MODE_TREE
            if now_dir or then_dir:
                pending.append((path + b"/", then[1].hex() if then_dir else None, now_dir))
            if then is not None and then[0] not in _NOT_FILES:
                was[path] = then
            if now is not None and now[0] not in _NOT_FILES:
                changed[path] = now
            elif then is not None and then[0] not in _NOT_FILES:
                gone.append(path)
    return changed, sorted(gone), was


def _work_entries(record: Record | None) -> Files:
    if record is None:
        return {}
    return {name: (mode, oid) for name, oid, mode in zip(record[3], record[6], record[7],
                                                          strict=True)
            if mode and oid is not None}


def store(writer: ObjectWriter, root: bytes,
          found: Iterable[tuple[bytes, str, Files, list[bytes]]]) -> Stored:
    """Write the blobs of each nested repository's changed files (``found``:
    its path, HEAD, changed files and files gone, relative to it) into the
    main store.  A file is read again to be stored; one that cannot be read
    now leaves its repository out (its HEAD is not recorded, so a rollback
    names it and does not guess)."""
    heads: dict[bytes, str] = {}
    files: Files = {}
    gone: list[bytes] = []
    for path, head, changed, lacking in found:
        mine: Files = {}
        try:
            for rel, (mode, _oid) in changed.items():
                where = root + b"/" + path + b"/" + rel
                oid = (writer.put(b"blob", os.readlink(where)) if mode == MODE_LINK
                       else writer.put_file(where))
                mine[path + b"/" + rel] = (mode, oid)
        except OSError:
            continue
        heads[path] = head
        files.update(mine)
        gone += [path + b"/" + rel for rel in lacking]
    return Stored(heads, files, gone)


def write_tree(writer: ObjectWriter, files: Files) -> bytes:
    """A tree holding ``files`` at their paths; its id (binary)."""
    top: dict = {}
    for path, entry in files.items():
        *folders, name = path.split(b"/")
        node = top
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = entry
    return _put_tree(writer, top)


def _put_tree(writer: ObjectWriter, node: dict) -> bytes:
    entries = [(MODE_TREE, name, _put_tree(writer, value)) if isinstance(value, dict)
               else (value[0], name, value[1]) for name, value in node.items()]
    # git's order: a directory sorts as if its name ended with "/".
    entries.sort(key=lambda e: e[1] + b"/" if e[0] == MODE_TREE else e[1])
    return writer.put_tree(b"".join(b"%o %s\0%s" % entry for entry in entries))


def head_lines(heads: dict[bytes, str]) -> list[str]:
    """The checkpoint message's lines naming each nested repository's HEAD."""
    return [f"{HEAD_TRAILER}{head} {json.dumps(os.fsdecode(path))}"
            for path, head in sorted(heads.items())]


def gone_message(gone: list[bytes]) -> bytes:
    """The parent commit's message: what it is, and the files gone."""
    lines = ["the nested repositories' files that differ from their commit", "",
             *(f"{GONE_TRAILER}{json.dumps(os.fsdecode(path))}" for path in gone)]
    return ("\n".join(lines) + "\n").encode()


def recorded_heads(message: str) -> dict[bytes, str]:
    """The HEAD each nested repository had, as a checkpoint's message
    records it; {} for a checkpoint taken before they were kept."""
    out: dict[bytes, str] = {}
    for line in message.splitlines():
        if line.startswith(HEAD_TRAILER):
            head, _, name = line.removeprefix(HEAD_TRAILER).partition(" ")
            try:
                out[os.fsencode(json.loads(name))] = head
            except ValueError:
                continue  # not a line this module wrote
    return out


def recorded_gone(message: str) -> list[bytes]:
    out = []
    for line in message.splitlines():
        if line.startswith(GONE_TRAILER):
            try:
                out.append(os.fsencode(json.loads(line.removeprefix(GONE_TRAILER))))
            except ValueError:
                continue
    return out


def owner(path: bytes, repos: Iterable[bytes]) -> bytes | None:
    """The innermost of ``repos`` that ``path`` (in the workspace) lies in."""
    best = None
    for repo in repos:
        if path.startswith(repo + b"/") and (best is None or len(repo) > len(best)):
            best = repo
    return best


def back_to(now: Files, since_head: tuple[Files, list[bytes], Files], kept: Files,
            lost: list[bytes]) -> tuple[Files, list[bytes]]:
    """What puts a nested repository's files (``now``, no gitlinks) back as
    a checkpoint kept them: the files to write, and the ones to delete.
    ``since_head``: :func:`against_head` of its work tree now against the
    HEAD it had then; ``kept`` and ``lost``: what the checkpoint kept of it
    (relative to it).  Only a path one of those names can differ: any
    other was HEAD's then and is HEAD's now, so HEAD's whole tree is never
    read."""
    changed, gone, was = since_head
    restore: Files = {}
    delete: list[bytes] = []
    for path in {*changed, *gone, *was, *kept, *lost}:
        if path in kept:
            then = kept[path]
        elif path in lost or path not in was:
            then = None  # gone then, or made since (what differed then was kept)
        else:
            then = was[path]
        if then == now.get(path):
            continue
        if then is None:
            delete += [path] if path in now else []
        else:
            restore[path] = then
    return restore, sorted(delete)
