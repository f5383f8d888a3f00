"""Git's ignore rules, evaluated the way a top-down work-tree walk needs them.

Sources, strongest first: the ``.gitignore`` of the entry's own directory,
then each parent's up to the root, then ``.git/info/exclude``, then
``core.excludesFile`` (default ``$XDG_CONFIG_HOME/git/ignore``).  The first
source holding a matching pattern decides, and within a source the last
matching pattern wins.  A directory that is excluded is never entered, so
nothing below it can be re-included -- the caller's walk enforces that.

Pattern text is translated to regular expressions by dulwich; this module
adds the precedence rules and a fast "nothing here matches" path, since a
walk asks about every entry of the tree.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from dataclasses import dataclass, field

try:
    from dulwich.wildmatch import MalformedPattern
except ImportError:  # older dulwich raised re.error for such patterns
    MalformedPattern = re.error

_FLAGS_PREFIX = b"(?ms)"


@dataclass(frozen=True)
class _Rule:
    """One pattern of an ignore file, compiled: whether it excludes, and what it matches."""

    exclude: bool
    dir_only: bool
    basename: bool  # no slash in the pattern: matched against the entry's name
    regex: re.Pattern[bytes]


class IgnoreList:
    """The patterns of one ignore file."""

    def __init__(self, text: bytes, ignorecase: bool = False) -> None:
        flags = re.S | re.M | (re.I if ignorecase else 0)
        self._rules: list[_Rule] = []
        sources: dict[bool, list[bytes]] = {True: [], False: []}
        from dulwich.ignore import read_ignore_patterns  # see _parse

        for line in read_ignore_patterns(io.BytesIO(text)):
            parsed = _parse(line, flags)
            if parsed is not None:
                rule, source = parsed
                self._rules.append(rule)
                sources[rule.basename].append(source)
        # One alternation per kind answers "does anything match?" in a single
        # C-level call; the rules are only walked one by one on a hit.
        self._any_name = _alternation(sources[True], flags)
        self._any_path = _alternation(sources[False], flags)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def decide(self, relpath: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True if excluded, False if re-included, None if no pattern matches.

        ``relpath`` is relative to the directory holding the ignore file.
        """
        if not ((self._any_name and self._any_name.match(name))
                or (self._any_path and self._any_path.match(relpath))):
            return None
        for rule in reversed(self._rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(name if rule.basename else relpath):
                return rule.exclude
        return None


def _parse(line: bytes, flags: int) -> tuple[_Rule, bytes] | None:
    exclude = not line.startswith(b"!")
    # Drop a negating "!", or the backslash that makes a leading "!"/"#" literal.
    if not exclude or line.startswith((b"\\!", b"\\#")):
        line = line[1:]
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line.strip(b"/"):
        return None
    # Imported here, not with the module: a session with checkpoints off
    # never loads dulwich (10 MB of its memory).
    from dulwich.ignore import translate

    try:
        source = translate(line)
        regex = re.compile(source, flags)
    except (re.error, ValueError, MalformedPattern):
        # git's wildmatch treats a malformed pattern as matching nothing.
        return None
    if source.startswith(_FLAGS_PREFIX):
        source = source[len(_FLAGS_PREFIX):]
    return _Rule(exclude, dir_only, b"/" not in line, regex), source


def _alternation(sources: list[bytes], flags: int) -> re.Pattern[bytes] | None:
    if not sources:
        return None
    return re.compile(b"|".join(b"(?:%s)" % s for s in sources), flags)


@dataclass(frozen=True)
class RuleStack:
    """The ignore sources in force in one directory, innermost first.

    ``key`` fingerprints every source's text, so a cached decision about a
    directory's entries stays valid exactly while its key is unchanged.
    """

    rules: IgnoreList | None
    base: bytes  # the directory holding ``rules``, as "a/b/" ("" for root)
    parent: RuleStack | None
    key: bytes

    ignorecase: bool = False
    # Compiled lists by text, shared by every stack grown from one root so
    # that a long-lived caller compiles each ignore file once.
    memo: dict[bytes, IgnoreList] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def root(cls, globals_: list[bytes], ignorecase: bool = False,
             memo: dict[bytes, IgnoreList] | None = None) -> RuleStack:
        """The stack for a repository's root: info/exclude, then excludesFile.

        ``globals_`` lists their texts strongest first.
        """
        seed = hashlib.sha1(b"choragos-ignore-1 %d" % ignorecase).digest()
        stack = cls(None, b"", None, seed, ignorecase, {} if memo is None else memo)
        for text in reversed(globals_):
            stack = stack.push(b"", text)
        return stack

    def push(self, base: bytes, text: bytes) -> RuleStack:
        """The stack of a directory ``base`` whose ``.gitignore`` holds ``text``."""
        digest = hashlib.sha1(text).digest()
        # The memo outlives one setting of core.ignorecase (a session's store
        # is kept for hours): the same text compiles to other rules under it.
        compiled = digest + (b"i" if self.ignorecase else b"c")
        rules = self.memo.get(compiled)
        if rules is None:
            rules = self.memo[compiled] = IgnoreList(text, self.ignorecase)
        key = hashlib.sha1(self.key + digest).digest()
        return RuleStack(rules or None, base, self, key, self.ignorecase, self.memo)

    def excluded(self, path: bytes, name: bytes, is_dir: bool) -> bool:
        """Whether the entry at ``path`` (relative to the root) is ignored."""
        stack: RuleStack | None = self
        while stack is not None:
            if stack.rules is not None:
                verdict = stack.rules.decide(path[len(stack.base):], name, is_dir)
                if verdict is not None:
                    return verdict
            stack = stack.parent
        return False


def repository_rules(common_dir: str, settings: tuple[str, bool],
                     memo: dict[bytes, IgnoreList] | None = None) -> RuleStack:
    """The root stack of the repository whose shared git directory is
    ``common_dir``: its ``info/exclude``, then the excludes file, with
    ``settings`` as :func:`ignore_settings` gives them."""
    user, ignorecase = settings
    info = os.path.join(common_dir, "info", "exclude")
    return RuleStack.root([_read_or_empty(info), _read_or_empty(user)], ignorecase, memo)


def ignore_settings(config: object) -> tuple[str, bool]:
    """The excludes file (``core.excludesFile``, or git's default) and
    ``core.ignorecase`` a repository's config stack (dulwich's) says."""
    from dulwich.ignore import default_user_ignore_filter_path  # dulwich is loaded on use

    user = os.path.expanduser(default_user_ignore_filter_path(config))
    return user, bool(config.get_boolean((b"core",), b"ignorecase", False))  # type: ignore[attr-defined]


def _read_or_empty(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""
