"""What the session server loads at rest.  Each library left out here is
megabytes of every server's resident memory and milliseconds of its start:
aiohttp and asyncio (about 13 MB) only with ``[web] listen``; the HTTP
client (ssl, email: 7 MB) only to probe a gateway or send a notification;
prometheus_client (12 MB with http.server) only to read or serve metrics;
urwid's optional event loops (trio alone is 14 MB where it is installed)
never, as the deck runs urwid's select loop; dulwich (10 MB) only once a
checkpoint store opens, so never in a session with checkpoints off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.actors.corepolicies import POLICIES
from choragos.terminal import ptyspawn

ROOT = Path(__file__).resolve().parents[2]

# Prefixed to a probe: every process it starts is listed in ``started``.
COUNT_PROCESSES = """
import subprocess
started = []
real_init = subprocess.Popen.__init__
def counting(self, *args, **kwargs):
    started.append(args[0] if args else kwargs.get("args"))
    real_init(self, *args, **kwargs)
subprocess.Popen.__init__ = counting
"""

PROBE = """
import json, sys
import choragos.actors.session
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "asyncio",
                                                                     "choragos"))))
"""

# What the server with its deck imports, as `serve` imports it (through the
# `choragos` command's entry, which defers what libraries import for nothing).
SERVER = """
import json, sys
import choragos.cli.main
from choragos.cli import serve
import choragos.actors.session, choragos.control.server
# serve loads urwid through load_urwid: nothing before it may import urwid.
assert "urwid" not in sys.modules
from choragos.ui.urwidload import load_urwid
load_urwid()
import choragos.ui.uiactor, choragos.actors.session, choragos.session.daemon
print(json.dumps(sorted(sys.modules)))
"""

NEVER_AT_REST = ("aiohttp", "asyncio", "trio", "twisted", "tornado", "zmq", "ssl", "http.client",
                 "http.server", "urllib.request", "prometheus_client", "dulwich",
                 # the checkpoint store and its walk: only with checkpoints on
                 "choragos.gitstore.checkpoints", "choragos.gitstore.walk",
                 "choragos.actors.checkpointer",
                 # `serve` reads its plain flags without them (the server is its fork)
                 "argparse", "gettext",
                 # remote seats' modules: only with a remote role
                 "choragos.actors.remoteseats", "choragos.remote.seat", "choragos.remote.link",
                 # a remote seat's archive and a limit's HTTP date: a megabyte each
                 "tarfile", "email",
                 # OpenSSL's libcrypto (3.6 MB): hashes are made where used, the
                 # socket's name by the interpreter's own SHA-256, and wcwidth's
                 # `secrets` (which imports hmac) stands in until it is used
                 "hashlib", "_hashlib", "hmac",
                 # a rate limit's jitter draws on the first limit; shutil's archives
                 "random", "_bz2", "_lzma",
                 # urwid's `deprecated` marks (0.3 MB): a stand-in while urwid loads
                 "typing_extensions",
                 # the deck's screen opens its PTY with os.openpty
                 "pty",
                 # the deck's commands run on workers of its own that end when idle
                 "concurrent")


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout)


def test_a_session_without_the_web_view_never_imports_aiohttp() -> None:
    loaded = _loaded(PROBE)
    assert "choragos.actors.session" in loaded
    assert [m for m in loaded if not m.startswith("choragos")] == []
    assert "choragos.web.server" not in loaded
    # Nor the web view's and the notifier's own modules (loaded when their
    # section is set), which were 6-9 ms of the start on the way to the deck.
    assert [m for m in ON_DEMAND if m in loaded] == []


FIRST_USE = (*(f"choragos.actors.{module}" for module, _, _ in POLICIES.values()
               if module != "admission"),  # the role actors send its messages
             "choragos.actors.reload", "choragos.actors.proxyrunner",
             "choragos.actors.startwatch",
             # the aftercare's verify, with the first work-done
             "choragos.roles.verify")

ON_DEMAND = ("choragos.actors.websession", "choragos.actors.web", "choragos.actors.notifier",
             "choragos.web.notify", "choragos.board.report", "choragos.board.timeline",
             # the web view's event streams (about 1 ms before the agents' spawn)
             "choragos.web.news")

DIALOGS = ("choragos.ui.overlays", "choragos.ui.editor", "choragos.gitstore.changes")


def test_the_server_with_its_deck_loads_none_of_the_libraries_it_uses_only_on_demand() -> None:
    loaded = _loaded(SERVER)
    assert "urwid" in loaded and "choragos.ui.uiactor" in loaded
    # ptyprocess forks the roles only where posix_spawn cannot give them a terminal.
    never = NEVER_AT_REST + (("ptyprocess",) if ptyspawn.NATIVE is not None else ())
    found = [m for m in loaded if m in never or m.split(".")[0] in never]
    assert found == []
    # The core's policies, a reload's, the built-in gateway's, --detach's wait
    # and the aftercare's: loaded when first used, after the agents started.
    first_use = [m for m in loaded if m in FIRST_USE]
    assert first_use == []
    # wcwidth's C functions answer pyte and urwid; the rest of the package (its
    # Python twins, text wrapper and tables: 1 MB) is not loaded.
    assert [m for m in loaded if m.split(".")[0] == "wcwidth"] == ["wcwidth", "wcwidth._wcwidth_c"]
    # urwid's and dataclasses' questions of inspect are answered without it
    # (with ast and dis: 0.7 MB; see choragos/staticinspect.py).
    assert [m for m in ("ast", "dis", "opcode", "_opcode") if m in loaded] == []
    # The deck's dialogs (and the changes' cells the board shows): loaded
    # when the first one opens.
    assert [m for m in loaded if m in DIALOGS] == []
    # Every module is start-up time before the deck's first frame (328 here,
    # with the widgets only the dialogs use loaded on first use; 347 with
    # them and logging's traceback a stand-in; 349 with its linecache and
    # textwrap, and the built-in gc that serve turns off for its start; 350 with
    # tokenize's token; 354 with inspect's ast, dis and opcode; 358 with the
    # dialogs and the actors started after the roles; 361 with
    # concurrent.futures; 363 with pty and base64 (and its
    # binascii); 391 with all of wcwidth; 410 with the core's policies; 458
    # with all of urwid's widgets, hashlib, random, bz2, lzma, the checkpoint
    # store, the remote seats' modules and argparse; 481 before the agents'
    # spawn, the web view's modules, tarfile and email were left out).
    assert len(loaded) < 329, f"{len(loaded)} modules"


# A role's screen: made by its actor after its agent is spawned.
SCREEN_MODULES = ("pyte", "wcwidth", "choragos.terminal.emulator", "choragos.terminal.transcript",
                  "choragos.terminal.vtparse", "choragos.terminal.vtscreen",
                  "choragos.terminal.vtcells", "choragos.terminal.pytelib")


# What the server has loaded when its roles' actors spawn the agents: the
# `serve` client's modules (the server is its fork) and the session's.
BEFORE_THE_SPAWN = """
import json, sys
import choragos.cli.main
from choragos.cli import serve
import choragos.actors.session, choragos.control.server, choragos.session.daemon
print(json.dumps(sorted(sys.modules)))
"""


# The actors the session starts after its roles: their modules load as they
# start (the core names their messages, in actors/latemessages.py).
AFTER_THE_ROLES = ("choragos.actors.clocks", "choragos.actors.aftercare",
                   "choragos.actors.gatewayprober", "choragos.actors.listener")


def test_the_server_spawns_its_agents_with_the_session_s_modules_alone() -> None:
    loaded = _loaded(BEFORE_THE_SPAWN)
    assert "choragos.actors.role" in loaded and "choragos.actors.core" in loaded
    assert [m for m in loaded if m in FIRST_USE or m.startswith("urwid")] == []
    assert [m for m in loaded if m in AFTER_THE_ROLES] == []
    # dataclasses' inspect (with ast and dis) is a stand-in until urwid loads it.
    assert [m for m in ("ast", "dis", "opcode") if m in loaded] == []
    # Each is start-up time before the first agent starts, while the second
    # core idles (238 here, with logging's traceback a stand-in; 240 with its
    # linecache and textwrap, choragos/onuse.py and the built-in gc; 242
    # with the actors started after the roles and the patterns compiled at
    # import; 247 with inspect; 265 with the roles' screens; 291 with all of
    # wcwidth; 312 with the core's policies).
    assert [m for m in loaded if m.split(".")[0] in SCREEN_MODULES or m in SCREEN_MODULES] == []
    assert len(loaded) < 239, f"{len(loaded)} modules"


# Every pattern a module of ours compiles as it is imported, by module: the
# serve client's and the session's imports, before the first spawn.
COMPILED_AT_IMPORT = """
import json, re, sys
compiled = []
real_compile = re._compile
def counting(pattern, flags):
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == "re":
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "")
    if frame.f_code.co_name == "<module>" and name.split(".")[0] == "choragos":
        compiled.append(name)
    return real_compile(pattern, flags)
re._compile = counting
""" + BEFORE_THE_SPAWN.replace("print(json.dumps(sorted(sys.modules)))",
                              "print(json.dumps(compiled))")


def test_the_session_s_modules_compile_no_pattern_as_they_are_imported() -> None:
    """Patterns are compiled when first used (choragos/onuse.py): 24 were
    compiled before the first spawn (some 1.2 ms), most of them used only
    later (to brief an agent, read a journal, route the gateway) or never."""
    assert hasattr(re, "_compile")  # the probe's hook into re
    assert _loaded(COMPILED_AT_IMPORT) == []

def test_urwid_loaded_without_its_event_loops_still_offers_them_on_use() -> None:
    pytest.importorskip("urwid")
    code = """
import json, sys
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
before = "asyncio" in sys.modules
loop = urwid.AsyncioEventLoop()
print(json.dumps([before, type(loop).__module__, "asyncio" in sys.modules,
                  "urwid.event_loop.trio_loop" in sys.modules,
                  load_urwid() is urwid]))
"""
    before, module, after, trio_entry, same = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60).stdout)
    assert (before, module, after, same) == (False, "urwid.event_loop.asyncio_loop", True, True)
    assert trio_entry is False  # no "not installed" marker left behind


def test_urwid_is_loaded_without_starting_a_process() -> None:
    """urwid asks platform.platform() about WSL, which runs ``uname -p``: a
    fork of the whole server at its start."""
    pytest.importorskip("urwid")
    code = """
import json, os, platform, subprocess
""" + COUNT_PROCESSES + """real_platform = platform.platform
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
print(json.dumps([started, platform.platform is real_platform,
                  urwid.display._raw_display_base.IS_WSL == ("wsl" in os.uname().release.lower())]))
"""
    started, restored, wsl = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60).stdout)
    assert started == []
    assert restored is True
    assert wsl is True  # urwid's answer is the kernel's


# What `choragos serve` loads before it forks the server and while it
# attaches: every module here is start-up time on the way to the first frame.
CLIENT = """
import json, sys
from choragos.cli.main import _dispatch
from choragos.cli import serve
from choragos.config.model import load_config
from choragos.session import daemon
from choragos.ui.attach import attach_to
print(json.dumps(sorted(sys.modules)))
"""

NOT_IN_THE_CLIENT = ("urwid", "pyte", "wcwidth", "dulwich", "pykka", "asyncio", "aiohttp",
                     "ssl", "http", "prometheus_client", "argcomplete", "difflib", "email",
                     "choragos.actors", "choragos.terminal.emulator",
                     # what inspect imports (dataclasses' inspect is a stand-in)
                     "ast", "dis", "opcode")


def test_the_serve_client_loads_nothing_the_server_or_an_error_needs() -> None:
    loaded = _loaded(CLIENT)
    assert "choragos.ui.attach" in loaded
    found = [m for m in loaded if any(m == name or m.startswith(name + ".")
                                      for name in NOT_IN_THE_CLIENT)]
    assert found == []
    assert len(loaded) < 200, f"{len(loaded)} modules"


def test_urwid_is_loaded_without_the_widgets_the_deck_does_not_use() -> None:
    """Every urwid name the deck's code uses is urwid's own; the widgets left
    out, and those only the dialogs use, are not loaded with the deck, and
    each loads when first asked for (the dialogs subclass them)."""
    pytest.importorskip("urwid")
    used = sorted({name for path in (ROOT / "ui").glob("*.py") if path.name != "urwidload.py"
                   for name in re.findall(r"\burwid\.([A-Za-z_]\w*)", path.read_text())})
    code = f"""
import json, sys
from choragos.ui.urwidload import LEFT_OUT, ON_FIRST_USE, _LeftOut, load_urwid
urwid = load_urwid()
import choragos.ui.uiactor, choragos.ui.deck
loaded = [name for name in LEFT_OUT + ON_FIRST_USE if name in sys.modules]
widgets = sorted(name for name in sys.modules if name.startswith("urwid.widget."))
left_out = [name for name in {used!r} if hasattr(getattr(urwid, name), "left_out")]
text = [type(urwid.Text).__name__, urwid.widget.Text is urwid.Text,
        "urwid.widget.text" in sys.modules]
import choragos.ui.overlays
hint = isinstance(choragos.ui.overlays.KeyHint("x"), urwid.Text)
button = type(urwid.Button("x")).__module__
import urwid.vterm
print(json.dumps([loaded, widgets, left_out, text, hint, button,
                  isinstance(urwid.vterm, _LeftOut)]))
"""
    loaded, widgets, left_out, text, hint, button, vterm_stood_in = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60).stdout)
    assert "Text" in used and "ListBox" in used  # the scan finds the deck's names
    assert loaded == []
    # The deck draws on its own widget: urwid's base classes and constants alone.
    assert widgets == ["urwid.widget.constants", "urwid.widget.widget"]
    assert left_out == []  # asked for: the real classes, not stand-ins
    assert text == ["WidgetMeta", True, True]
    assert hint is True  # a dialog's widget is one of urwid's own
    assert button == "urwid.widget.wimp"  # called: the real widget, its module loaded
    assert vterm_stood_in is False  # imported later: the real module


def test_an_urwid_that_needs_a_module_left_out_is_loaded_whole() -> None:
    pytest.importorskip("urwid")
    code = """
import json, sys
from choragos.ui import urwidload
urwidload.LEFT_OUT += ("urwid.display.common",)  # every urwid's raw display needs it to load
urwid = urwidload.load_urwid()
stand_ins = [n for n, m in list(sys.modules.items()) if type(m) is urwidload._LeftOut]
print(json.dumps([stand_ins, type(urwid.Text).__name__, "urwid.vterm" in sys.modules,
                  "asyncio" in sys.modules, "trio" in sys.modules]))
"""
    stand_ins, text, vterm, asyncio_loaded, trio = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60).stdout)
    assert stand_ins == []
    assert text == "WidgetMeta" and vterm is True  # the whole of urwid
    assert asyncio_loaded is False and trio is False  # still without its event loops


# Every urwid name marked deprecated, with its mark, in each module loaded.
DEPRECATED_MARKS = """
import json, sys, types
def marks():
    found = {}
    def look(path, obj):
        for what in (obj, getattr(obj, "fget", None), getattr(obj, "__func__", None)):
            mark = getattr(what, "__dict__", {}).get("__deprecated__")
            if mark is not None:
                found[path] = [mark, hasattr(what, "__wrapped__")]
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "urwid" or type(module) is not types.ModuleType:
            continue
        for attr, obj in list(vars(module).items()):
            look(f"{name}.{attr}", obj)
            if isinstance(obj, type) and obj.__module__ == name:
                for member, value in list(vars(obj).items()):
                    look(f"{name}.{attr}.{member}", value)
    return found
"""


def test_urwid_is_loaded_without_typing_extensions_and_marks_the_same_names() -> None:
    """urwid takes only ``deprecated`` from typing_extensions (0.3 MB), with
    ``category=None``: the stand-in marks the same names with the same words
    as the real decorator (an urwid that wraps or warns would differ here)."""
    pytest.importorskip("urwid")
    pytest.importorskip("typing_extensions")
    real = DEPRECATED_MARKS + """
import urwid
print(json.dumps(marks()))
"""
    ours = DEPRECATED_MARKS + """
from choragos.ui.urwidload import load_urwid
load_urwid()
import choragos.ui.uiactor
import urwid  # the widgets loaded on first use, marked as they load
for name in ("ListBox", "Frame", "LineBox", "Overlay", "Edit", "Pile", "AttrWrap"):
    getattr(urwid, name)
loaded = "typing_extensions" in sys.modules
print(json.dumps([marks(), loaded]))
"""
    real_marks = json.loads(subprocess.run([sys.executable, "-c", real], capture_output=True,
                                           text=True, check=True, timeout=60).stdout)
    our_marks, loaded = json.loads(subprocess.run([sys.executable, "-c", ours],
                                                  capture_output=True, text=True, check=True,
                                                  timeout=60).stdout)
    assert loaded is False
    assert len(our_marks) >= 5  # urwid's deprecated names are found
    assert our_marks == {path: mark for path, mark in real_marks.items() if path in our_marks}
    # Every name marked in a module both loaded is marked by both.
    modules = {path.rsplit(".", 1)[0] for path in our_marks}
    assert {p for p in real_marks if p.rsplit(".", 1)[0] in modules} <= set(our_marks)


def test_the_stand_in_for_typing_extensions_gives_the_real_module_on_use() -> None:
    pytest.importorskip("urwid")
    pytest.importorskip("typing_extensions")
    code = """
import json, sys, warnings
from choragos.ui import urwidload
urwidload.load_urwid()
import urwid._deprecation as marks
@marks.deprecated("old", category=DeprecationWarning)
def old():
    return 1
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    value = old()
import typing_extensions
print(json.dumps([value, [str(w.message) for w in caught], old.__deprecated__,
                  type(typing_extensions) is type(sys),
                  hasattr(typing_extensions, "TypeAliasType")]))
"""
    value, caught, mark, real_module, full = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60).stdout)
    assert (value, caught, mark) == (1, ["old"], "old")  # a category warns: the real decorator
    assert real_module is True and full is True


def test_the_server_with_its_deck_has_not_loaded_base64_and_urwid_still_encodes() -> None:
    """urwid's raw display imports base64 for a clipboard copy (OSC 52) the
    deck never makes: a stand-in until used (see choragos/deferred.py)."""
    code = SERVER.replace("print(json.dumps(sorted(sys.modules)))", """
from urwid.display import _raw_display_base as raw
kind = type(sys.modules["base64"]).__name__
print(json.dumps([kind, raw.base64.b64encode(b"copied").decode()]))
""")
    assert _loaded(code) == ["StandIn", "Y29waWVk"]


def test_the_server_with_its_deck_has_not_loaded_locale() -> None:
    """subprocess and urwid ask locale for an encoding only: answered
    without loading it (0.3 MB; see choragos/deferred.py)."""
    code = SERVER.replace("print(json.dumps(sorted(sys.modules)))",
                          "print(json.dumps(type(sys.modules['locale']).__name__))")
    assert _loaded(code) == "_Locale"


def test_the_server_with_its_deck_has_not_loaded_inspect_and_tokenize() -> None:
    """urwid asks inspect for a class's attribute, whether a callback is a
    coroutine function and the caller's frame, dataclasses for a docstring's
    signature: answered without loading it (see choragos/staticinspect.py).
    linecache's tokenize waits for a traceback written with its lines."""
    code = SERVER.replace("print(json.dumps(sorted(sys.modules)))", """
print(json.dumps([type(sys.modules[name]).__name__ for name in ("inspect", "tokenize")]
                 + ["token" in sys.modules]))
""")
    assert _loaded(code) == ["_Inspect", "StandIn", False]


def test_the_server_with_its_deck_has_not_loaded_traceback() -> None:
    """logging imports traceback (with linecache and textwrap) to write an
    exception, our modules to write one they caught: loaded when there is
    one (see choragos/deferred.py)."""
    code = SERVER.replace("print(json.dumps(sorted(sys.modules)))", """
print(json.dumps([type(sys.modules["traceback"]).__name__,
                  [name for name in ("linecache", "textwrap") if name in sys.modules]]))
""")
    assert _loaded(code) == ["StandIn", []]


def test_the_server_with_its_deck_has_not_loaded_platform() -> None:
    """uuid (under pykka) and urwid ask platform the system's name and about
    WSL: answered without loading it (1.2 ms; see choragos/deferred.py)."""
    code = SERVER.replace("print(json.dumps(sorted(sys.modules)))",
                          "print(json.dumps(type(sys.modules['platform']).__name__))")
    assert _loaded(code) == ("_Platform" if sys.platform == "linux" else "module")


# A real session, started as `serve` starts its server (its modules, then
# Session.start): what is loaded when the first agent is spawned, and whether
# the agents' spawns wait for the rest of the tree (its listener, the last
# child started here, is held until every agent is spawned, at most HOLD s)
# or for the other roles (the second role's preparation is held until the
# first agent is spawned) or for the journal's first sync (held likewise).
FIRST_SPAWN = """
import json, os, sys, threading
from pathlib import Path
import choragos.cli.main
from choragos.cli import serve
import choragos.actors.session as session_module, choragos.control.server
import choragos.actors.crew as crew_module, choragos.session.daemon
from choragos.config.model import load_config
from choragos.terminal import ptyspawn

work, roles, hold = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
at_first_spawn, spawned, held = [], threading.Semaphore(0), []
real_spawn = ptyspawn.spawn

briefs = work / ".choragos" / "briefs"
written = lambda: sorted(path.name for path in briefs.glob("*.md"))
briefs_at_first_spawn = []

def spawn(*args, **kwargs):
    if not at_first_spawn:
        at_first_spawn.append(sorted(sys.modules))
        briefs_at_first_spawn.append(written())
    try:
        return real_spawn(*args, **kwargs)
    finally:
        spawned.release()

real_listener = session_module.Session._listener

def listener(self, deps):
    held.append(all(spawned.acquire(timeout=hold) for _ in range(roles)))
    return real_listener(self, deps)

first_spawned, prepared_after = threading.Event(), []
real_launch = crew_module.Crew.launch

def launch(self, spec, worktree=None):
    if spec.name == "r1":  # the second role's preparation waits for the first agent
        prepared_after.append(first_spawned.wait(hold))
    return real_launch(self, spec, worktree)

def spawn_first(*args, **kwargs):
    try:
        return spawn(*args, **kwargs)
    finally:
        first_spawned.set()

synced_after, real_fdatasync = [], os.fdatasync

def fdatasync(fd):  # the journal's first sync waits for the first agent
    if not synced_after:
        synced_after.append(first_spawned.wait(hold))
    return real_fdatasync(fd)

ptyspawn.spawn, session_module.Session._listener = spawn_first, listener
crew_module.Crew.launch, os.fdatasync = launch, fdatasync
config, asked_after = load_config(work / ".choragos.toml", work), []

def hidden():  # what serve holds in a terminal, asked once the first agent is spawned
    asked_after.append(first_spawned.wait(hold))
    return serve._hidden_at_first(config)

session = session_module.Session(config, session_module.SessionOptions(workdir=work,
                                                                       socket=work / "s.sock"))
session.start(hold=hidden)
briefs_at_start = written()
session.stop()
print(json.dumps([at_first_spawn[0], held[0], prepared_after[0], synced_after[0],
                  briefs_at_first_spawn[0], briefs_at_start, asked_after[0]]))
"""

@pytest.mark.timeout(60)
def test_the_agents_are_spawned_before_their_screens_and_the_rest_of_the_tree_load(
        short_tmp: Path) -> None:
    """The emulator (some 15 ms of imports) is loaded by the role actors after
    their spawns, beside the agents' start; the spawns are told as the roles'
    actors start, so they wait neither for the listener (nor anything after
    the roles supervisor) nor for the emulator nor for the journal's first
    sync (the listener waits for that) nor for the briefs, and the first role
    starts before the others are prepared."""
    roles = 3
    (short_tmp / ".choragos.toml").write_text("".join(
        f'[[roles]]\nname = "r{n}"\ncommand = "sleep"\nargs = ["30"]\n'
        f'start = {"true" if n == 0 else "false"}\n\n' for n in range(roles))
        + "[checkpoints]\nenabled = false\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(short_tmp), "LANG": "C.UTF-8"}
    out = subprocess.run([sys.executable, "-c", FIRST_SPAWN, str(short_tmp), str(roles), "10"],
                         capture_output=True, text=True, check=True, timeout=50, env=env,
                         cwd=ROOT)
    (loaded, not_waited, first_alone, synced_after, briefs_at_spawn,
     briefs_at_start, hold_asked_after) = json.loads(out.stdout.splitlines()[-1])
    assert not_waited is True  # every agent spawned while the listener was held
    assert first_alone is True  # the first while the second role was being prepared
    assert synced_after is True  # and while the journal's first sync waited
    # The roles `serve` holds (its deck's first layout) are asked after the
    # first role's actor started: the deck's layout modules load beside
    # that agent's spawn, not before it.
    assert hold_asked_after is True
    assert [m for m in loaded if m.startswith("choragos.ui")] == []
    # The briefs (read by an agent once it has booted) are written after the
    # spawns, before the session answers anyone.
    assert briefs_at_spawn == []
    assert briefs_at_start == [f"r{n}.md" for n in range(roles)]
    assert "choragos.actors.role" in loaded
    assert [m for m in loaded if m.split(".")[0] in SCREEN_MODULES or m in SCREEN_MODULES] == []
    assert [m for m in loaded if m in AFTER_THE_ROLES] == []  # loaded as they start
    # 238 here, with logging's traceback a stand-in (240 with its linecache
    # and textwrap); 241 with choragos/onuse.py and the built-in gc; 242 with the
    # actors started after the roles and the patterns compiled at import; 247
    # with dataclasses' inspect (and ast, dis); 270 before the role actors
    # made the screens (and with the IDNA codec of the gateway's probe and the
    # web view's news).
    assert len(loaded) < 239, f"{len(loaded)} modules"
