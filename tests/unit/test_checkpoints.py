"""The pieces under checkpoints: ignore rules, object ids, git's index, the private index."""

from __future__ import annotations

import marshal
import os
import subprocess
from pathlib import Path

import pytest

from choragos.cli.checkpoints import age
from choragos.gitstore import objects as gitobjects
from choragos.gitstore import walk as walkmodule
from choragos.gitstore.checkpoints import clean_text
from choragos.gitstore.ignore import IgnoreList, RuleStack
from choragos.gitstore.objects import ObjectWriter
from choragos.gitstore.walk import Cache, Records, load_cache, read_user_index, save_cache

ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x.invalid",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x.invalid"}


def git(root: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True,
                          check=True, env={**os.environ, **ENV, "HOME": str(root)})
    return done.stdout.decode().strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    return tmp_path


# ---- ignore rules --------------------------------------------------------------------

def excluded(text: str, path: str, is_dir: bool = False) -> bool:
    stack = RuleStack.root([]).push(b"", text.encode())
    raw = path.encode()
    return stack.excluded(raw, raw.rsplit(b"/", 1)[-1], is_dir)


@pytest.mark.parametrize(("rules", "path", "is_dir", "expected"), [
    ("*.log", "a.log", False, True),
    ("*.log", "deep/down/a.log", False, True),
    ("*.log\n!keep.log", "keep.log", False, False),
    ("!keep.log\n*.log", "keep.log", False, True),  # the last match wins
    ("build/", "build", True, True),
    ("build/", "build", False, False),  # a directory-only pattern skips files
    ("/top", "top", False, True),
    ("/top", "sub/top", False, False),  # anchored to the ignore file's directory
    ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "docs/sub/a.md", False, False),
    ("docs/**/*.md", "docs/sub/a.md", False, True),
    ("**/cache", "x/y/cache", True, True),
    ("\\#hash", "#hash", False, True),
    ("\\!bang", "!bang", False, True),
    ("# a comment", "# a comment", False, False),
    ("trailing   ", "trailing", False, True),
    ("a?c", "abc", False, True),
    ("[ab]x", "bx", False, True),
    ("[", "[", False, False),  # malformed: matches nothing, breaks nothing
])
def test_patterns(rules: str, path: str, is_dir: bool, expected: bool) -> None:
    assert excluded(rules, path, is_dir) is expected


def test_deeper_ignore_files_win_and_globals_come_last() -> None:
    root = RuleStack.root([b"*.secret\n", b"*.bak\n!keep.bak\n"])  # info/exclude, excludesFile
    top = root.push(b"", b"*.txt\n!x.secret\n")
    sub = top.push(b"sub/", b"!*.txt\n")
    assert sub.excluded(b"sub/a.txt", b"a.txt", False) is False
    assert top.excluded(b"a.txt", b"a.txt", False) is True
    assert top.excluded(b"x.secret", b"x.secret", False) is False
    assert top.excluded(b"y.secret", b"y.secret", False) is True
    assert root.excluded(b"keep.bak", b"keep.bak", False) is False
    assert root.excluded(b"old.bak", b"old.bak", False) is True


def test_rule_keys_fingerprint_every_source() -> None:
    one = RuleStack.root([b"", b""]).push(b"", b"*.o\n")
    assert one.key == RuleStack.root([b"", b""]).push(b"", b"*.o\n").key
    assert one.key != RuleStack.root([b"x\n", b""]).push(b"", b"*.o\n").key
    assert one.push(b"a/", b"").key != one.key
    assert not IgnoreList(b"# only a comment\n\n")


# ---- objects ---------------------------------------------------------------------------

def test_object_ids_match_git_and_git_reads_what_we_write(repo: Path) -> None:
    objects = repo / ".git" / "objects"
    data = bytes(range(256)) * 10
    (repo / "f.bin").write_bytes(data)
    writer = ObjectWriter(objects)
    blob = writer.put_file(os.fsencode(repo / "f.bin"))
    empty_tree = writer.put_tree(b"")
    assert writer.put(b"blob", data) == blob  # held once, not twice
    writer.finish()
    assert blob.hex() == git(repo, "hash-object", "f.bin")
    assert git(repo, "cat-file", "-s", blob.hex()) == str(len(data))
    assert git(repo, "cat-file", "-t", empty_tree.hex()) == "tree"
    assert writer.written == 2
    assert not list((objects / "pack").glob("*.pack"))  # a few objects go loose


def test_many_new_objects_go_into_one_pack(repo: Path) -> None:
    objects = repo / ".git" / "objects"
    writer = ObjectWriter(objects)
    ids = [writer.put(b"blob", b"object %d\n" % i * (i % 7 + 1)) for i in range(250)]
    ids.append(writer.put(b"blob", bytes(300_000)))  # a multi-byte size header
    writer.finish()
    writer.close()
    assert writer.written == 251
    packs = list((objects / "pack").glob("pack-*.pack"))
    assert len(packs) == 1 and not list((objects / "pack").glob("tmp_*"))
    verified = git(repo, "verify-pack", "-v", str(packs[0].with_suffix(".idx")))
    assert f"{ids[0].hex()} blob" in verified
    listed = git(repo, "cat-file", "--batch-check", data=b"\n".join(i.hex().encode() for i in ids))
    assert "missing" not in listed and listed.count(" blob ") == 251
    assert ObjectWriter(objects).has(ids[-1])



class Compressions:
    """``zlib`` compressions in the objects module: calls and bytes in."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = self.bytes = 0
        real = gitobjects.zlib.compress

        def compress(data, *args):
            self.calls += 1
            self.bytes += len(data)
            return real(data, *args)

        monkeypatch.setattr(gitobjects.zlib, "compress", compress)


def test_a_loose_object_is_compressed_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: a checkpoint's few new objects (its new file, the tree of
    the directory it is in) go loose, and each was compressed twice, once
    for a pack it never went into (at 300 files, a top directory's tree of
    15 KB compressed twice for every new file); now once, for its loose copy,
    and the pack's objects are still each compressed once."""
    objects = repo / ".git" / "objects"
    tree = b"".join(b"100644 r%d.txt\0%s" % (i, bytes(20)) for i in range(300))
    counted = Compressions(monkeypatch)
    writer = ObjectWriter(objects)
    ids = [writer.put(b"blob", b"round 1\n"), writer.put_tree(tree)]
    writer.finish()
    assert counted.calls == 2 and counted.bytes < len(tree) + 100, counted.__dict__
    assert git(repo, "cat-file", "-t", ids[1].hex()) == "tree"
    counted.calls = 0
    packed = [writer.put(b"blob", b"object %d\n" % i) for i in range(40)]
    writer.finish()
    assert counted.calls == 40, counted.calls
    assert "missing" not in git(repo, "cat-file", "--batch-check",
                                data=b"\n".join(i.hex().encode() for i in packed))

def test_an_unfinished_pack_leaves_nothing_behind(repo: Path) -> None:
    objects = repo / ".git" / "objects"
    writer = ObjectWriter(objects)
    for i in range(150):
        writer.put(b"blob", b"dropped %d" % i)
    writer.close()
    assert not [p for p in objects.rglob("*") if p.is_file()]


def test_big_files_stream_and_dry_runs_write_nothing(repo: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitobjects, "STREAM_THRESHOLD", 1000)
    monkeypatch.setattr(gitobjects, "_CHUNK", 333)
    (repo / "big").write_bytes(os.urandom(5000))
    writer = ObjectWriter(repo / ".git" / "objects")
    dry = writer.put_file(os.fsencode(repo / "big"), write=False)
    assert writer.written == 0 and not writer.has(dry)
    assert writer.put_file(os.fsencode(repo / "big")) == dry
    writer.finish()
    assert dry.hex() == git(repo, "hash-object", "big")
    git(repo, "cat-file", "-e", dry.hex())


def test_packed_objects_are_found(repo: Path) -> None:
    for i in range(50):
        (repo / f"f{i}").write_text(f"{i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    writer = ObjectWriter(repo / ".git" / "objects")
    ids = git(repo, "rev-list", "--objects", "--all").split("\n")
    assert all(writer.has(bytes.fromhex(line.split()[0])) for line in ids)
    assert not writer.has(bytes(20))
    assert not writer.has(bytes.fromhex(ids[0].split()[0])[:19] + b"\x01")
    writer.close()


# ---- git's index ---------------------------------------------------------------------

@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_reads_git_index_versions(repo: Path, version: str) -> None:
    for rel in ["a.txt", "dir/b.txt", "dir/sub/c.txt", "z" * 200]:
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    git(repo, "add", "-A")
    (repo / "new.txt").write_text("intent")
    git(repo, "add", "-N", "new.txt")  # an extended flag, so version 3 at least
    git(repo, "update-index", "--index-version", version)
    index = read_user_index(str(repo / ".git" / "index"))
    assert index.paths == sorted([b"a.txt", b"dir/b.txt", b"dir/sub/c.txt", b"new.txt",
                                  b"z" * 200])
    assert index.tracks(b"dir/b.txt") and index.tracks_below(b"dir")
    assert not index.tracks(b"dir") and not index.tracks_below(b"di")
    assert b"new.txt" not in index.entries  # intent-to-add: tracked, but no content yet
    entry = index.entries[b"dir/sub/c.txt"]
    assert entry[5].hex() == git(repo, "hash-object", "dir/sub/c.txt")
    assert entry[2] == len("dir/sub/c.txt")


def test_missing_index_is_empty(tmp_path: Path) -> None:
    assert read_user_index(str(tmp_path / "index")).paths == []


# ---- the private index ---------------------------------------------------------------

def test_private_index_round_trip_and_damage(tmp_path: Path) -> None:
    path = str(tmp_path / "index")
    record = ((1, 2, 3), b"k" * 20, b"t" * 20, (b"a",), b"f", ((1, 2, 3, 4, 5),), (b"i" * 20,),
              (0o100644,))
    save_cache(path, Cache(b"c" * 40, b"t" * 20, Records().replaced_by({b"": record})))
    loaded = load_cache(path)
    assert (loaded.commit, loaded.tree, loaded.records.get(b"")) == (b"c" * 40, b"t" * 20,
                                                                     record)
    data = Path(path).read_bytes()
    for damaged in (data[:-3], data[:30], b"not an index", data[:-1] + b"\0"):
        Path(path).write_bytes(damaged)
        assert load_cache(path).commit == b""
        assert load_cache(path).records.get(b"") is None
    assert load_cache(str(tmp_path / "absent")).commit == b""


def test_unchanged_records_keep_their_stored_form() -> None:
    first = Records().replaced_by({b"": ("r",), b"a/": ("a",)})
    saved = first.stored()
    second = first.replaced_by({b"": ("r2",), b"a/": ("a",)})
    assert second.stored()[b"a/"] is saved[b"a/"]
    assert second.stored()[b""] != saved[b""]


def test_a_record_is_encoded_only_when_saved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: a walk's changed records were encoded as soon as they
    replaced the old ones, saved or not (a watched store keeps its walk in
    memory and often does not save it); now when saved, once each."""
    encoded = []
    real = walkmodule.marshal.dumps
    monkeypatch.setattr(walkmodule.marshal, "dumps", lambda value, *args: (
        encoded.append(value), real(value, *args))[1])
    first = Records().replaced_by({b"": ("r",), b"a/": ("a",)})
    second = first.replaced_by({b"": ("r2",), b"a/": ("a",)})
    assert encoded == []
    assert marshal.loads(second.stored()[b""]) == ("r2",)
    assert sorted(encoded) == [("a",), ("r2",)]
    second.stored()
    assert len(encoded) == 2


# ---- text shown to people --------------------------------------------------------------

def test_clean_text_keeps_one_inert_line() -> None:
    assert clean_text("fix it\nsecond line") == "fix it"
    assert clean_text("red \x1b[31malert\x07 \u202eevil") == "red [31malert evil"
    assert clean_text("  ") == ""
    assert clean_text("x" * 300, 10) == "x" * 9 + "…"


@pytest.mark.parametrize(("seconds", "shown"), [(-5, "0s"), (42, "42s"), (180, "3m"),
                                                (7300, "2h"), (4 * 86400 + 5, "4d")])
def test_ages(seconds: float, shown: str) -> None:
    assert age(seconds) == shown
