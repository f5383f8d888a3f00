"""Regular expressions compiled the first time they are used.

Compiling a pattern runs the ``re`` module's parser and compiler in Python
(50-350 microseconds each); a module that compiles its patterns as it is
imported pays that on every start, whether it matches anything or not.
The session's start imports some twenty such patterns before its first
agent is spawned, most of them used only later (to brief an agent, to
read a journal, to route the gateway) or never.  :func:`pattern` gives a
function that compiles its pattern on its first call and returns the same
compiled pattern from then on (``_NAME().fullmatch(text)``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, partial


def pattern(text: str | bytes, flags: int = 0) -> Callable[[], re.Pattern]:
    """``text`` compiled with ``flags`` on the first call, the same pattern after."""
    return cache(partial(re.compile, text, flags))
