"""A module deferred is imported at its first use, then is itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from choragos.deferred import defer
defer("secrets")
import secrets
from wcwidth import textwrap  # imports secrets at its top, as it does under pyte
steps = ["hmac" in sys.modules, type(sys.modules["secrets"]).__name__]
token = textwrap.SequenceTextWrapper._next_hyperlink_id()
import secrets as again
from secrets import token_hex
steps += [len(token), "hmac" in sys.modules, type(sys.modules["secrets"]).__name__,
          again is sys.modules["secrets"], secrets.token_hex is token_hex,
          secrets.compare_digest("a", "a")]
print(json.dumps(steps))
"""


def test_a_deferred_module_is_imported_at_its_first_use_and_is_itself_after() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=60)
    (before_hmac, before_type, token, after_hmac, after_type, same, same_function,
     answer) = json.loads(out.stdout)
    assert (before_hmac, before_type) == (False, "StandIn")  # imported, not run
    assert token == 8 and after_hmac is True  # a use runs it...
    assert after_type == "module" and same is True  # ...and the real one takes its place
    assert same_function is True and answer is True  # the stand-in passes questions on


def test_deferring_a_module_already_imported_changes_nothing() -> None:
    code = ("import json, sys, secrets\nfrom choragos.deferred import defer\n"
            "before = sys.modules['secrets']\ndefer('secrets')\n"
            "print(json.dumps(sys.modules['secrets'] is before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) is True


def test_a_module_this_python_lacks_is_not_stood_in_for() -> None:
    code = ("import json, sys\nfrom choragos.deferred import defer\n"
            "defer('no_such_module_here')\n"
            "try:\n    import no_such_module_here\n    found = True\n"
            "except ImportError:\n    found = False\n"
            "print(json.dumps([found, 'no_such_module_here' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == [False, False]


# What subprocess (a text run) and urwid (at its import) ask of locale.
LOCALE_PROBE = """
import json, sys
from choragos.deferred import defer
defer("locale")
import subprocess
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
import locale
answers = [locale.getencoding(), locale.getpreferredencoding(False),
           subprocess.run(["echo", "é"], capture_output=True, text=True).stdout,
           urwid.util.detected_encoding]
stood_in = type(sys.modules["locale"]).__name__
answers.append(locale.getpreferredencoding())  # a setlocale round trip: the real one
print(json.dumps([answers, stood_in, type(sys.modules["locale"]).__name__,
                  locale.LC_CTYPE == locale.LC_CTYPE]))
"""

REAL_LOCALE = """
import json, locale, subprocess, urwid
print(json.dumps([locale.getencoding(), locale.getpreferredencoding(False),
                  subprocess.run(["echo", "é"], capture_output=True, text=True).stdout,
                  urwid.util.detected_encoding, locale.getpreferredencoding()]))
"""


def test_locale_answers_subprocess_and_urwid_as_the_real_one_without_loading() -> None:
    """locale (0.3 MB) is not loaded for the encoding a text run or urwid's
    import asks for; the answers are the real module's, in any locale."""
    pytest.importorskip("urwid")
    for lang in ("C.UTF-8", "C", "POSIX", "en_US.ISO-8859-1"):
        env = {**os.environ, "LANG": lang, "LC_ALL": lang}
        run = {"capture_output": True, "text": True, "check": True, "timeout": 60, "env": env}
        answers, stood_in, after, same = json.loads(
            subprocess.run([sys.executable, "-c", LOCALE_PROBE], **run).stdout)
        real = json.loads(subprocess.run([sys.executable, "-c", REAL_LOCALE], **run).stdout)
        assert answers == real, lang
        assert after == "module" and same is True  # the real module, once asked more
        if real[1].lower().replace("-", "") == "utf8":
            assert stood_in == "_Locale", lang  # urwid's and a text run's answers: no import


def test_the_command_defers_locale() -> None:
    code = ("import json, sys\nimport choragos.cli.main\nimport subprocess\n"
            "print(json.dumps(type(sys.modules['locale']).__name__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == "_Locale"


# What uuid (under pykka, at its import) and urwid (about WSL) ask of platform.
PLATFORM_PROBE = """
import json, sys
import choragos.cli.main
import uuid
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
stood_in = type(sys.modules["platform"]).__name__
answers = [uuid._LINUX, uuid._AIX, urwid.display._raw_display_base.IS_WSL]
import platform
answers += [platform.system(), platform.platform()]
print(json.dumps([answers, stood_in, type(sys.modules["platform"]).__name__]))
"""

REAL_PLATFORM = """
import json, platform, uuid, urwid
print(json.dumps([uuid._LINUX, uuid._AIX, urwid.display._raw_display_base.IS_WSL,
                  platform.system(), platform.platform()]))
"""


def test_platform_answers_uuid_and_urwid_as_the_real_one_without_loading() -> None:
    """uuid's and urwid's imports ask platform the system's name and about
    WSL: answered without loading it (1.2 ms of the server's start); later
    questions get the real module's answers."""
    pytest.importorskip("urwid")
    run = {"capture_output": True, "text": True, "check": True, "timeout": 60}
    answers, stood_in, after = json.loads(
        subprocess.run([sys.executable, "-c", PLATFORM_PROBE], **run).stdout)
    real = json.loads(subprocess.run([sys.executable, "-c", REAL_PLATFORM], **run).stdout)
    assert answers == real
    if sys.platform == "linux":
        assert stood_in == "_Platform"  # not loaded by uuid's or urwid's import
    assert after == "module"  # the real module, once asked more


# A dataclass with no docstring of its own gets one written from its
# signature's text: without the real module; another question loads it.
INSPECT_PROBE = """
import json, sys
import choragos.cli.main
import dataclasses
before = [type(sys.modules["inspect"]).__name__, "ast" in sys.modules, "dis" in sys.modules]

@dataclasses.dataclass
class Plain:
    name: str
    count: int = 0

written = type(sys.modules["inspect"]).__name__
import inspect
parameters = list(inspect.signature(Plain).parameters)
print(json.dumps([before, Plain.__doc__, written, parameters,
                  type(sys.modules["inspect"]).__name__, "ast" in sys.modules]))
"""


def test_inspect_is_loaded_only_when_asked_more_than_the_server_asks() -> None:
    """dataclasses imports inspect (with ast and dis: some 3 ms of the serve
    client's start, 0.7 MB of the server) for the docstring of a class
    without one: written without it (choragos/staticinspect.py)."""
    out = subprocess.run([sys.executable, "-c", INSPECT_PROBE], capture_output=True, text=True,
                         check=True, timeout=60)
    before, doc, written, parameters, after, ast_loaded = json.loads(out.stdout)
    assert before == ["_Inspect", False, False]
    assert doc == "Plain(name: str, count: int = 0)"  # as the real module writes it
    assert written == "_Inspect"
    assert parameters == ["name", "count"]  # any other question: the real module's answer
    assert (after, ast_loaded) == ("module", True)


# A traceback written with its source lines: linecache opens the file
# through tokenize (for its declared encoding).
TRACEBACK_PROBE = """
import json, sys
{setup}
import traceback
before = type(sys.modules["tokenize"]).__name__
try:
    json.loads("{{")
except ValueError:
    text = traceback.format_exc()
print(json.dumps([before, text, type(sys.modules["tokenize"]).__name__]))
"""


def test_tokenize_is_loaded_when_a_traceback_is_written_and_the_lines_are_the_same() -> None:
    run = {"capture_output": True, "text": True, "check": True, "timeout": 60}
    before, text, after = json.loads(subprocess.run(
        [sys.executable, "-c", TRACEBACK_PROBE.format(setup="import choragos.cli.main")],
        **run).stdout)
    real = json.loads(subprocess.run(
        [sys.executable, "-c", TRACEBACK_PROBE.format(setup="import tokenize")], **run).stdout)
    assert before == "StandIn"  # the command's modules (logging's traceback) did not load it
    assert after == "module"
    assert "obj, end = self.scan_once(s, idx)" in text  # the source line, read through it
    assert text == real[1]


# An exception logged, and one written by traceback itself, after the
# ``choragos`` command's modules are loaded ({setup}).
LOGGED_PROBE = """
import sys
{setup}
import io, json, logging, traceback
before = [type(sys.modules.get(name)).__name__ for name in ("traceback", "linecache", "textwrap")]
out = io.StringIO()
log = logging.getLogger("probe")
log.addHandler(logging.StreamHandler(out))
try:
    json.loads("{{")
except ValueError:
    log.exception("it failed")
    written = traceback.format_exc()
print(json.dumps([before, out.getvalue(), written, type(sys.modules["traceback"]).__name__]))
"""


def test_traceback_is_loaded_when_an_exception_is_written_and_writes_the_same() -> None:
    """logging's ``traceback`` (with linecache and textwrap) is a stand-in
    until an exception is written: logged, or formatted by our code."""
    run = {"capture_output": True, "text": True, "check": True, "timeout": 60}
    before, logged, written, after = json.loads(subprocess.run(
        [sys.executable, "-c", LOGGED_PROBE.format(setup="import choragos.cli.main")],
        **run).stdout)
    real = json.loads(subprocess.run(
        [sys.executable, "-c", LOGGED_PROBE.format(setup="")], **run).stdout)
    assert before == ["StandIn", "NoneType", "NoneType"]
    assert real[0] == ["module", "module", "module"]
    assert after == "module"
    assert "it failed\nTraceback (most recent call last):" in logged
    assert "obj, end = self.scan_once(s, idx)" in logged  # with its source lines
    assert (logged, written) == (real[1], real[2])


# The command's modules, then pathlib, in an interpreter without the site's
# modules (an editable install's finder imports pathlib there, as an
# installed choragos's start does not); then a URL with a bracketed host split.
IPADDRESS_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
before = "ipaddress" in sys.modules
import choragos.cli.main
import pathlib, urllib.parse
kind = type(sys.modules["ipaddress"]).__name__
url = pathlib.Path("/tmp/a b").as_uri()
try:
    urllib.parse.urlsplit("http://[::1x]/")
    refused = False
except ValueError:
    refused = True
print(json.dumps([before, kind, url, type(sys.modules["ipaddress"]).__name__, refused,
                  urllib.parse.urlsplit("http://[::1]:80/").port]))
"""


def test_ipaddress_waits_for_a_bracketed_host() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-S", "-c", IPADDRESS_PROBE, root],
                         capture_output=True, text=True, check=True, timeout=60)
    before, kind, url, after, refused, port = json.loads(out.stdout)
    assert before is False  # nothing in this interpreter loaded it before the command
    assert kind == "StandIn"  # pathlib's urllib.parse imported it, did not run it
    assert url == "file:///tmp/a%20b"
    assert after == "module" and refused is True  # the real module checked the host
    assert port == 80
