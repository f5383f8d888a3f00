"""pyte, imported once wcwidth's stand-in is in place.

pyte imports wcwidth at its top; :func:`load_wcwidth` must run first so
that only wcwidth's C functions are loaded (see ``wcwidthload``).  Every
module of the terminal takes pyte's names from here, so none can import
pyte before the stand-in.
"""

from choragos.terminal.wcwidthload import load_wcwidth

load_wcwidth()

import pyte  # noqa: E402
from pyte import charsets  # noqa: E402
from pyte import modes as mo  # noqa: E402
from pyte.screens import Char, StaticDefaultDict, wcwidth  # noqa: E402

__all__ = ["Char", "StaticDefaultDict", "charsets", "mo", "pyte", "wcwidth"]
