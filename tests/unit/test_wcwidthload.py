"""wcwidth's C functions stand in for its package: the same answers, the
same objects a real import binds, two modules loaded instead of thirty."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("wcwidth")

SEAM = "from choragos.terminal.wcwidthload import load_wcwidth\nload_wcwidth()\n"
# The package imported first, as it would be without the seam (which then
# leaves it be: importing choragos.terminal calls it).
REAL = "import wcwidth\nimport choragos.terminal.wcwidthload\n"


def _run(code: str, env: dict[str, str] | None = None) -> object:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60, env=env)
    return json.loads(out.stdout.splitlines()[-1])


def _has_c_extension() -> bool:
    return _run("import json, wcwidth\nprint(json.dumps(wcwidth.HAS_C_EXTENSION))") is True


def test_a_real_import_binds_the_objects_the_stand_in_takes() -> None:
    """What the stand-in binds is what wcwidth's own ``__init__`` binds: a
    wcwidth that takes one of these names from elsewhere fails here."""
    if not _has_c_extension():
        pytest.skip("this wcwidth has no C extension: the stand-in runs its __init__")
    code = REAL + """
import importlib, json, wcwidth
from choragos.terminal.wcwidthload import CACHE, C_MODULE, FROM_C, FROM_MODULES
c = importlib.import_module(C_MODULE)
print(json.dumps([[name for name in FROM_C if getattr(wcwidth, name) is not getattr(c, name)],
                  [name for name, module in FROM_MODULES.items()
                   if getattr(wcwidth, name) is not getattr(importlib.import_module(module), name)],
                  wcwidth.wcwidth.__wrapped__ is c.wcwidth,
                  wcwidth.wcwidth.cache_info().maxsize == CACHE]))
"""
    assert _run(code) == [[], [], True, True]


# Every code point's width and a few strings' (wide, combining, emoji,
# escapes), as one digest: through pyte, as the screens ask.
WIDTHS = """
import hashlib, json, sys
from pyte.screens import wcwidth as pyte_wcwidth
import wcwidth
widths = bytes(wcwidth.wcwidth(chr(cp)) & 0xFF for cp in range(sys.maxunicode + 1))
texts = ["héllo 中文", "e\\u0301x", "👩\\u200d👩\\u200d👧 ok", "a\\x1b[31mb\\x1b[0m", "ｗｉｄｅ"]
strings = [[wcwidth.width(t, control_codes="ignore"), wcwidth.wcswidth(t),
            list(wcwidth.iter_graphemes(t)), wcwidth.strip_sequences(t),
            wcwidth.grapheme_boundary_before(t, len(t)),
            [list(part) for part in wcwidth.iter_sequences(t)]] for t in texts]
print(json.dumps([hashlib.sha256(widths).hexdigest(), strings,
                  [pyte_wcwidth(t[0]) for t in texts],
                  sorted(m for m in sys.modules if m.split(".")[0] == "wcwidth")]))
"""


def test_every_code_point_has_the_width_the_package_gives() -> None:
    seam_digest, seam_strings, seam_pyte, seam_modules = _run(SEAM + WIDTHS)
    real_digest, real_strings, real_pyte, real_modules = _run(REAL + WIDTHS)
    assert seam_digest == real_digest
    assert seam_strings == real_strings and seam_pyte == real_pyte
    assert len(real_modules) > 20  # the package whole
    if _has_c_extension():
        assert seam_modules == ["wcwidth", "wcwidth._wcwidth_c", "wcwidth.escape_sequences",
                                "wcwidth.sgr_state"]


def test_pyte_and_the_deck_load_wcwidth_s_c_extension_alone() -> None:
    if not _has_c_extension():
        pytest.skip("this wcwidth has no C extension")
    code = """
import json, sys
from choragos.terminal.vtcells import NARROW  # the screens import pyte, as the session does
import pyte
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
screen = pyte.Screen(20, 2)
pyte.Stream(screen).feed("中文 e\\u0301")
canvas = urwid.Text("héllo 中文").render((12,))
print(json.dumps([screen.display[0], canvas.text[0].decode(),
                  sorted(m for m in sys.modules if m.split(".")[0] == "wcwidth")]))
"""
    row, drawn, modules = _run(code)
    assert row == "中文 é" + " " * 14  # two cells each, the accent on its letter
    assert drawn == "héllo 中文  "
    assert modules == ["wcwidth", "wcwidth._wcwidth_c"]  # 30 when the package is imported


def test_any_other_name_runs_the_package_s_init_and_the_stand_in_is_it() -> None:
    code = SEAM + """
import json, sys, types
import wcwidth
first = wcwidth.width("中")
wrapped = wcwidth.wrap("hello world", 5)
from wcwidth import textwrap, __all__ as names
print(json.dumps([first, wrapped, type(wcwidth) is types.ModuleType,
                  sys.modules["wcwidth"] is wcwidth, wcwidth.__version__ != "",
                  [name for name in names if not hasattr(wcwidth, name)],
                  type(wcwidth._wcwidth_module).__name__, wcwidth.wcwidth("中")]))
"""
    assert _run(code) == [2, ["hello", "world"], True, True, True, [], "module", 2]


@pytest.mark.parametrize("switch", ["no C extension", "WCWIDTH_PYTHON"])
def test_without_the_c_extension_the_package_s_python_answers(switch: str) -> None:
    import os

    env = dict(os.environ)
    hide = ""
    if switch == "WCWIDTH_PYTHON":
        env["WCWIDTH_PYTHON"] = "1"
    else:
        hide = "import sys\nsys.modules['wcwidth._wcwidth_c'] = None  # an import of it fails\n"
    code = hide + SEAM + """
import json, types
import wcwidth
print(json.dumps([wcwidth.wcwidth("中"), wcwidth.width("héllo 中文"), wcwidth.HAS_C_EXTENSION,
                  type(wcwidth) is types.ModuleType, wcwidth.width.__module__]))
"""
    assert _run(code, env) == [2, 10, False, True, "wcwidth._width"]


def test_threads_asking_at_once_all_get_the_package_s_answers() -> None:
    code = SEAM + """
import json, threading
import wcwidth
names = ["wrap", "width", "clip", "wcwidth", "iter_sequences", "list_versions", "ljust"] * 4
got, start = [], threading.Barrier(len(names))
def ask(name):
    start.wait()
    got.append((name, callable(getattr(wcwidth, name))))
threads = [threading.Thread(target=ask, args=(name,)) for name in names]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps([len(got), all(ok for _, ok in got), type(wcwidth).__name__]))
"""
    assert _run(code) == [28, True, "module"]


def test_the_screens_start_with_no_width_cached() -> None:
    """The scan that builds the narrow-character class asks 4,320 widths;
    neither pyte's cache (0.6 MB) nor wcwidth's under it (0.2 MB) keeps them."""
    code = """
import json
from choragos.terminal.vtcells import NARROW
from pyte.screens import wcwidth
print(json.dumps([wcwidth.cache_info().currsize, wcwidth.__wrapped__.cache_info().currsize]))
"""
    assert _run(code) == [0, 0]


def test_the_scan_asks_the_width_function_under_the_caches() -> None:
    """The scan asks each character's width once: through pyte's cache and
    wcwidth's it took twice as long, and filled them for nothing."""
    code = """
import json
from choragos.terminal import pytelib
real, calls = pytelib.wcwidth, []
def cached(char):  # stands in for pyte's cache: counts who asks through it
    calls.append(char)
    return real(char)
cached.__wrapped__ = real
pytelib.wcwidth = cached
from choragos.terminal.vtcells import NARROW
print(json.dumps([len(calls), NARROW.fullmatch("abc ─│") is not None,
                  NARROW.match("中") is None]))
"""
    assert _run(code) == [0, True, True]
