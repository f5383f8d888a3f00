"""The wheel, installed in a fresh venv, runs ``choragos demo`` to the first delegation.

Offline: the wheel is built from a copy of the source tree with this
environment's setuptools (no build isolation, no index), installed with
``--no-deps``, and the fresh venv finds its dependencies (pykka, urwid …) in
this environment's site-packages through a ``.pth`` line.  That line does not
make this environment's *editable* choragos visible (a ``.pth`` in a
directory added that way is not processed), and the test checks that the
``choragos`` the demo ran is the one installed from the wheel.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.integration.harness import read_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(".git", ".venv", ".cache", "build", "dist", "*.egg-info",
                               "__pycache__", "node_modules", ".pytest_cache")


def run(*argv: object, **options: object) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=240, **options)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def build_wheel(tmp: Path) -> Path:
    source = tmp / "src"
    shutil.copytree(ROOT, source, ignore=_SKIP, symlinks=True)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--no-index", "-q", "-w", tmp / "dist", source)
    (wheel,) = (tmp / "dist").glob("choragos-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel)
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    ours = sysconfig.get_path("purelib")
    (Path(site.stdout.strip()) / "zz_choragos_deps.pth").write_text(ours + "\n")
    return venv


def test_the_wheel_runs_the_demo_to_the_first_delegation(short_tmp: Path) -> None:
    wheel = build_wheel(short_tmp)
    names = zipfile.ZipFile(wheel).namelist()
    assert "choragos/demo/demo.toml" in names and "choragos/demo/worker.py" in names
    assert "choragos/actors/core.py" in names and "choragos/ui/deck.py" in names
    # the web view's page is served from the package itself
    assert {"choragos/web/page/index.html", "choragos/web/page/app.js",
            "choragos/web/page/app.css"} <= set(names)
    # what a remote seat's host is sent comes from the installed package too
    assert {"choragos/remote/link.py", "choragos/remote/client/seat.py"} <= set(names)
    packages = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(
        (".dist-info", ".data"))}
    assert packages == {"choragos"}, packages  # one top-level name in site-packages
    venv = fresh_venv(short_tmp, wheel)
    home = short_tmp / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "XDG_RUNTIME_DIR": str(short_tmp / "run"),
           "CHORAGOS_SOCK": str(short_tmp / "d.sock")}
    where = run(venv / "bin" / "python", "-c", "import choragos; print(choragos.__file__)",
                cwd=home, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout
    demo = home / ".cache" / "choragos" / "demo"  # the default place
    err = short_tmp / "demo.err"
    with open(err, "w") as stderr:
        proc = subprocess.Popen([venv / "bin" / "choragos", "demo", "--headless"], cwd=home,
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr)
    try:
        log = demo / ".choragos" / "logs" / "events.jsonl"
        wait_until(lambda: proc.poll() is not None
                   or any(e["event"] == "delegate" for e in read_jsonl(log)), 90,
                   message="the demo's first delegation")
        assert proc.poll() is None, err.read_text()
        first = next(e for e in read_jsonl(log) if e["event"] == "delegate")
        assert first["role"] == "coder" and "--version" in first["label"]
        start = next(e for e in read_jsonl(log) if e["event"] == "deck starting")
        assert start["config"] == str(demo / ".choragos.toml")
        assert str(venv / "bin" / "python") in (demo / ".choragos.toml").read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(60) == 0, err.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # the team file `choragos init` writes points at docs installed with the wheel
    project = short_tmp / "project"
    project.mkdir()
    run(venv / "bin" / "choragos", "init", cwd=project, env=env)
    text = (project / ".choragos.toml").read_text()
    docs = venv / "share" / "doc" / "choragos" / "configuration.md"
    assert f"described in {docs};" in text and docs.is_file()
    assert "gateway off" not in json.dumps([line for line in err.read_text().splitlines()
                                            if "WARNING" in line])
