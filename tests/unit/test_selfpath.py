"""The session's own choragos, first on every role's PATH (choragos/roles/selfpath.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from choragos import __version__
from choragos.roles import selfpath


def test_prepend_puts_the_folder_first_once_whatever_path_held(tmp_path):
    folder = tmp_path / ".choragos" / "bin"
    env = selfpath.prepend({"PATH": f"/usr/bin:{folder}:/bin", "HOME": "/h"}, folder)
    assert env == {"PATH": f"{folder}:/usr/bin:/bin", "HOME": "/h"}
    bare = selfpath.prepend({}, folder)["PATH"].split(os.pathsep)
    assert bare[0] == str(folder) and bare[1:] == [p for p in os.defpath.split(":") if p]


def test_the_shim_runs_this_choragos_with_a_hostile_environment(tmp_path):
    folder = selfpath.write_shim(tmp_path)
    shim = folder / "choragos"
    assert folder == tmp_path / ".choragos" / "bin" and os.access(shim, os.X_OK)
    decoy = tmp_path / "decoy" / "choragos"
    decoy.parent.mkdir()
    (decoy.parent / "__init__.py").write_text("raise SystemExit('the wrong choragos')\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(decoy.parent.parent)}
    out = subprocess.run([str(shim), "--version"], cwd=decoy.parent.parent, env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == f"choragos {__version__}", out.stderr
    assert sys.executable in shim.read_text()


def test_paths_with_spaces_and_quotes_still_run(tmp_path):
    odd = tmp_path / "it's \"here\" $HOME"
    odd.symlink_to(selfpath.package_root())
    shim = tmp_path / "choragos"
    shim.write_text(selfpath.shim_text(sys.executable, odd))
    shim.chmod(0o755)
    out = subprocess.run([str(shim), "--version"], env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == f"choragos {__version__}", out.stderr
