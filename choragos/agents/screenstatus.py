"""Read an agent's state and latest activity from its emulated screen.

Only the screen is consulted: process states (booting, paused, exited) are
decided by the role actor.  Box-style TUIs such as Claude Code are read by
structure first: their input box (a prompt line between two horizontal
rules) is drawn only when no dialog holds the agent, so a visible box means
*idle* or *working*, never *waiting*.  Plain prompt-line programs (shells,
REPLs) are read from their last lines, and so are CLIs whose input area is
not a boxed line (Gemini CLI, Codex CLI): while that area is drawn no dialog
holds the agent, and when it is gone a question may.

Whatever the profile, a screen whose last lines ask a question (any
profile's question markers, a highlighted numbered option with or without
box borders) reads *waiting*: keys typed there would answer it.

The role actor should act on a status only once it has held for a moment:
a PTY read can end mid-frame, and a half-drawn screen can mislead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from choragos import onuse
from choragos.agents.profiles import MENU_OPTION, AgentProfile, question_markers

WAITING = "waiting"
WORKING = "working"
IDLE = "idle"

DEFAULT_BOX_PROMPTS = ("❯", ">")
_RULE_CHARS = frozenset("─━═╭╮╰╯")
_MIN_RULE = 20
# Transcript entries start with these; the agent's own area (input box or
# dialog) is always below the last of them.
_ENTRY_GLYPHS = ("●", "⏺", "✻", "✢", "✳", "✶", "✽", "·", "✦", "•")
# Long input is shown as "[Pasted text #1]" or "[Pasted text #2 +39 lines]".
PASTE_PLACEHOLDER = onuse.pattern(r"\[Pasted text #\d+(?: \+(\d+) lines?)?\]")
# Gemini CLI shows a long paste as "[Pasted Text: 999 chars]", Codex CLI
# (over 1,000 characters) as "[Pasted Content 1234 chars]".
PASTE_CHARS_PLACEHOLDER = onuse.pattern(r"\[Pasted (?:Text:|Content) (\d+) chars\]")
# How many last non-blank lines the every-profile question check reads, and
# how many hold a plain-line CLI's input area (prompt, hints, footer).
QUESTION_TAIL = 10
# A question in no profile's words, on the last line drawn: it ends with "?",
# perhaps followed by its answers: npx's "Ok to proceed? (y)", ssh's "...
# continue connecting (yes/no/[fingerprint])?".  Only the last line: below a
# question answered, something else is drawn.
ASKS_AT_END = r"\?\s*(?:[(\[][^()]{0,40}[)\]])?\s*:?$"
INPUT_AREA_TAIL = 6
# Beyond this many characters only the tail of a text is compared: the head
# of a long message may have scrolled off the top of the screen.
_TAIL = 160


@dataclass(frozen=True)
class InputBox:
    """The agent's input box: rule lines ``top`` and ``bottom``, and its text."""

    top: int
    bottom: int
    content: tuple[str, ...]


# -- structure --------------------------------------------------------------------


def is_rule(line: str) -> bool:
    """A horizontal rule such as the lines above and below Claude's input box."""
    core = line.strip()
    return len(core) >= _MIN_RULE and set(core) <= _RULE_CHARS


def _unbox(line: str) -> str:
    """A line without the side borders box-style TUIs draw ("│ > hi │", nested too)."""
    core = line.strip()
    while core[:1] == "│" or core[-1:] == "│":
        core = core.strip("│").strip()
    return core


def agent_area_start(lines: Sequence[str]) -> int | None:
    """Index of the topmost rule below the last transcript entry, if any."""
    found = None
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if is_rule(line):
            found = index
        elif line.startswith(_ENTRY_GLYPHS):
            break
    return found


def find_input_box(lines: Sequence[str],
                   prompts: Iterable[str] = DEFAULT_BOX_PROMPTS) -> InputBox | None:
    """The open input box: a rule, a line starting with a prompt glyph, a rule."""
    top = agent_area_start(lines)
    if top is None or top + 1 >= len(lines):
        return None
    first = _unbox(lines[top + 1])
    glyph = next((g for g in prompts if first.startswith(g)), None)
    if glyph is None:
        return None
    bottom = next((i for i in range(top + 2, len(lines)) if is_rule(lines[i])), None)
    if bottom is None:
        return None
    rest = (_unbox(line) for line in lines[top + 2:bottom])
    return InputBox(top, bottom, (first[len(glyph):], *rest))


# -- status -----------------------------------------------------------------------


def classify(lines: Sequence[str], profile: AgentProfile,
             extra_input_prompts: Iterable[str] = (),
             cursor: tuple[int, int] | None = None) -> str:
    """``"waiting"``, ``"working"`` or ``"idle"``, judged from the screen alone.

    ``extra_input_prompts`` are the role's own ``input_prompts``; ``cursor``
    (column, row) helps recognise a plain prompt line as the live one.
    """
    status = matched_status(lines, profile, extra_input_prompts, cursor)
    return status if status is not None else unmatched_reading(lines, profile)


def unmatched_reading(lines: Sequence[str], profile: AgentProfile) -> str:
    """What a screen nothing on it matches is read as: *working* while
    nothing is drawn (the program is still starting), else the profile's
    ``unmatched_status``."""
    return profile.unmatched_status if any(line.strip() for line in lines) else WORKING


def matched_status(lines: Sequence[str], profile: AgentProfile,
                   extra_input_prompts: Iterable[str] = (),
                   cursor: tuple[int, int] | None = None) -> str | None:
    """What :func:`classify` says when something on the screen says it; None
    for a blank screen or one nothing on it matches.  Such a screen may be a
    frame half drawn (a PTY read can end mid-frame), so a caller that would
    leave a dialog on it waits to see whether it stays so."""
    screen = [line.rstrip() for line in lines]
    if not any(screen):
        return None
    extra = tuple(extra_input_prompts)
    box = find_input_box(screen, profile.box_prompts) if profile.box_prompts else None
    if box is not None:
        return _classify_boxed(screen, box, profile, extra)
    return _classify_plain(screen, profile, extra, cursor)


def _classify_boxed(screen: list[str], box: InputBox, profile: AgentProfile,
                    extra: tuple[str, ...]) -> str:
    # The box is open, so no dialog holds the agent.  The busy hint lives in
    # the footer (or, in older versions, on the spinner line above the box).
    near = screen[box.bottom + 1:] + _last_nonblank(screen[:box.top], 3)
    return _input_open(near, screen, profile, extra)


def _input_open(near: list[str], screen: list[str], profile: AgentProfile,
                extra: tuple[str, ...]) -> str:
    """The agent's input area is drawn: busy markers ``near`` it say *working*."""
    if has_marker(near, profile.busy_markers):
        return WORKING
    if extra and has_marker(activity_preview(screen, profile), extra):
        return WAITING  # the role's own markers: e.g. the model asked a question
    return IDLE


def _classify_plain(screen: list[str], profile: AgentProfile, extra: tuple[str, ...],
                    cursor: tuple[int, int] | None) -> str | None:
    scope = _scope(screen, profile)
    asking = profile.input_prompts + extra
    if _at_line_prompt(screen, profile, cursor) and not _asks(scope[-1:], profile, asking):
        return IDLE  # a fresh prompt under the cursor: any question above was answered
    if _input_area_drawn(screen, profile):
        # Gemini and Codex draw their input area only when no dialog is open.
        return _input_open(scope, screen, profile, extra)
    if _asks(scope, profile, asking) or shows_question(screen):
        return WAITING
    if has_marker(scope, profile.busy_markers):
        return WORKING
    if has_marker(scope, profile.idle_markers) or _at_line_prompt(screen, profile, cursor):
        return IDLE
    return None


# The agent's latest lines above its input, where its limit notice is looked
# for: further up, it is an old one the agent has since gone on from.  A
# dialog's notice (Gemini's "Usage limit reached … Keep trying / Stop") is
# anywhere in the dialog, which goes once answered.
LIMIT_TAIL = 4
LIMIT_DIALOG_TAIL = 14


def limit_notice(lines: Sequence[str], profile: AgentProfile,
                 tail: int = LIMIT_TAIL) -> str | None:
    """The agent's own notice that a provider's limit stopped it, if its
    latest ``tail`` lines show one."""
    if not profile.limit_patterns:
        return None
    screen = [line.rstrip() for line in lines]
    box = find_input_box(screen, profile.box_prompts) if profile.box_prompts else None
    above = screen[:box.top] if box is not None else screen
    patterns = [re.compile(p, re.IGNORECASE) for p in profile.limit_patterns]
    for line in reversed(_last_nonblank(above, tail)):
        if any(p.search(_unbox(line)) for p in patterns):
            return _unbox(line)
    return None


def shows_question(lines: Sequence[str]) -> bool:
    """The last lines ask something, in any CLI's words: never type into them."""
    tail = _last_nonblank(list(lines), QUESTION_TAIL)
    return (has_marker(tail, question_markers()) or has_pattern(tail, (MENU_OPTION,))
            or has_pattern((line.rstrip() for line in tail[-1:]), (ASKS_AT_END,)))


def _input_area_drawn(screen: list[str], profile: AgentProfile) -> bool:
    """A plain-line CLI's own input area (its idle markers) is on the last lines."""
    if profile.box_prompts or not profile.idle_markers or profile.line_prompt_ends:
        return False
    return has_marker(_last_nonblank(screen, INPUT_AREA_TAIL), profile.idle_markers)


def _asks(lines: list[str], profile: AgentProfile, markers: tuple[str, ...]) -> bool:
    return has_marker(lines, markers) or has_pattern(lines, profile.input_patterns)


def _scope(screen: list[str], profile: AgentProfile) -> list[str]:
    """The lines markers are looked for in."""
    if profile.tail_lines:
        return _last_nonblank(screen, profile.tail_lines)
    start = agent_area_start(screen) if profile.box_prompts else None
    return screen[start:] if start is not None else screen


def _at_line_prompt(screen: list[str], profile: AgentProfile,
                    cursor: tuple[int, int] | None) -> bool:
    """The last non-blank line is a prompt (and holds the cursor, if known)."""
    if not profile.line_prompt_ends:
        return False
    row = next((i for i in range(len(screen) - 1, -1, -1) if screen[i].strip()), None)
    if row is None or (cursor is not None and cursor[1] != row):
        return False
    return screen[row].rstrip().endswith(profile.line_prompt_ends)


def has_marker(lines: Iterable[str], markers: Iterable[str]) -> bool:
    """Any marker occurs (case-insensitively) in any line."""
    return any(map(matcher(markers), lines))


def has_pattern(lines: Iterable[str], patterns: Iterable[str]) -> bool:
    return any(map(matcher((), patterns), lines))


def matcher(markers: Iterable[str], patterns: Iterable[str] = ()) -> Callable[[str], bool]:
    """Whether a line holds any of ``markers`` (case-insensitively) or a match
    of any of ``patterns``; the markers lowered and the patterns compiled
    once, for every line asked about."""
    wanted = [m.lower() for m in markers if m]
    compiled = [re.compile(p) for p in patterns]

    def matches(line: str) -> bool:
        lowered = line.lower()
        return any(m in lowered for m in wanted) or any(p.search(line) for p in compiled)

    return matches


def _last_nonblank(lines: Sequence[str], count: int) -> list[str]:
    """The last ``count`` non-blank lines, in order; looked for from the
    bottom, so a full screen costs no more than a sparse one."""
    return _last_kept(lines, str.strip, count)


def _last_kept(lines: Sequence[str], keep: Callable[[str], object], count: int) -> list[str]:
    """The last ``count`` lines ``keep`` says yes to, in order, without
    asking about any line above them."""
    found: list[str] = []
    if count > 0:
        for line in reversed(lines):
            if keep(line):
                found.append(line)
                if len(found) == count:
                    break
    found.reverse()
    return found


# -- activity ---------------------------------------------------------------------


def activity_preview(lines: Sequence[str], profile: AgentProfile,
                     extra_chrome: Iterable[str] = (), max_lines: int = 3) -> list[str]:
    """The last ``max_lines`` meaningful lines above the input box or dialog."""
    screen = [line.rstrip() for line in lines]
    start = agent_area_start(screen) if profile.box_prompts else None
    region = screen[:start] if start is not None else screen
    # One matcher for the whole screen, not one per line: a preview is read
    # at every change of a role's view.  Looked for from the bottom: the
    # lines above the last few meaningful ones are never asked about (a
    # screen filled by a long conversation cost a look at each of its lines).
    chrome = matcher((*profile.chrome_markers, *extra_chrome), profile.chrome_patterns)
    kept = _last_kept(region, lambda line: _meaningful(line, chrome), max_lines)
    # Claude separates some glyphs from text with NBSP; a card wants plain spaces.
    return [_unbox(line).replace("\xa0", " ").strip() for line in kept]


def _meaningful(line: str, chrome: Callable[[str], bool]) -> bool:
    """Not blank, not a rule, and no chrome."""
    core = _unbox(line)
    if not core or is_rule(core) or set(core) <= {"╌", "┄", "-"}:
        return False
    return not chrome(line)


# -- injected input ----------------------------------------------------------------


def input_pending(lines: Sequence[str], text: str,
                  prompts: Iterable[str] = DEFAULT_BOX_PROMPTS,
                  cursor: tuple[int, int] | None = None) -> bool:
    """``text`` is visible in the input box: typed, not (yet) submitted.

    Without a box, a line editor is assumed: with the ``cursor`` known, the
    text is pending when it ends right where the cursor stands (a submitted
    line may still be echoed above, so "visible" is not enough), across
    as many rows as it wrapped onto; a cursor column one past the last
    (a row filled to its end, its wrap pending) takes the whole row in.
    Without it, the last lines of the screen stand for the prompt line.  Claude
    shows input over 800 characters (or long pastes) as a "[Pasted text #N
    +K lines]" placeholder, which counts when K matches.
    """
    screen = [line.rstrip() for line in lines]
    box = find_input_box(screen, prompts)
    if box is not None:
        return _shows(box.content, text) or _placeholder_matches(box.content, text)
    if cursor is not None:
        return _ends_at_cursor(lines, text, cursor) or _chars_placeholder_at(lines, text,
                                                                             cursor[1])
    return _shows(_tail_covering(screen, text), text)


def _chars_placeholder_at(lines: Sequence[str], text: str, row: int) -> bool:
    """The cursor's line shows "[Pasted Text: N chars]" (or "[Pasted Content N
    chars]") with N about ``len(text)``."""
    found = PASTE_CHARS_PLACEHOLDER().search(lines[row]) if 0 <= row < len(lines) else None
    # The CLI counts UTF-16 units of what arrived, so allow a little slack.
    return found is not None and abs(int(found.group(1)) - len(text)) <= 2 + len(text) // 50


def _ends_at_cursor(lines: Sequence[str], text: str, cursor: tuple[int, int]) -> bool:
    column, row = cursor
    if not 0 <= row < len(lines):
        return False
    before = "".join(line.rstrip() for line in lines[:row]) + lines[row][:column]
    needle, hay = squash(text), squash(before)
    return bool(needle) and hay.endswith(needle[-_TAIL:])


def input_landed(lines: Sequence[str], text: str,
                 prompts: Iterable[str] = DEFAULT_BOX_PROMPTS,
                 cursor: tuple[int, int] | None = None) -> bool:
    """``text`` reached the agent: pending in its box, or echoed as a sent message."""
    screen = [line.rstrip() for line in lines]
    if input_pending(screen, text, prompts, cursor):
        return True
    box = find_input_box(screen, prompts)
    return _shows(screen[:box.top] if box else screen, text)


def _shows(lines: Iterable[str], text: str) -> bool:
    """``text`` appears in ``lines``, ignoring wrapping, indentation and prompts."""
    needle = squash(text)
    if not needle:
        return False
    hay = squash("".join(_drop_prompt(line) for line in lines))
    return needle in hay or (len(needle) > _TAIL and needle[-_TAIL:] in hay)


def _placeholder_matches(lines: Iterable[str], text: str) -> bool:
    newlines = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").count("\n")
    found = PASTE_PLACEHOLDER().search(" ".join(lines))
    return found is not None and int(found.group(1) or 0) == newlines


def _drop_prompt(line: str) -> str:
    core = _unbox(line)
    for glyph in DEFAULT_BOX_PROMPTS:
        if core.startswith(glyph):
            return core[len(glyph):]
    return core


def _tail_covering(screen: list[str], text: str) -> list[str]:
    """The fewest last non-blank lines that together are longer than ``text``."""
    need, taken = len(squash(text)), []
    for line in reversed([line for line in screen if line.strip()]):
        taken.insert(0, line)
        if len(squash("".join(taken))) > need:
            break
    return taken


def squash(text: str) -> str:
    """``text`` without whitespace (NBSP included), ESC or box borders."""
    return "".join(text.replace("\x1b", "").replace("│", "").split())
