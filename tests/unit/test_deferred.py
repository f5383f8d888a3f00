"""A module deferred is imported at its first use, then is itself."""

from __future__ import annotations

import json
import subprocess
import sys

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
    assert (before_hmac, before_type) == (False, "_StandIn")  # imported, not run
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
