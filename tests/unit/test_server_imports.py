"""What the session server loads at rest: aiohttp and asyncio (with what
they pull in, about 13 MB of the server's resident memory) only with
``[web] listen``."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import choragos.actors.session
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("aiohttp", "asyncio",
                                                                     "choragos"))))
"""


def test_a_session_without_the_web_view_never_imports_aiohttp() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=60)
    loaded = json.loads(out.stdout)
    assert "choragos.actors.session" in loaded
    assert [m for m in loaded if not m.startswith("choragos")] == []
    assert "choragos.webserver" not in loaded
