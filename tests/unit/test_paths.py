"""Socket and state paths and role-name confinement."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.control import paths


def test_runtime_dir_prefers_xdg(tmp_path: Path) -> None:
    assert paths.runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path


def test_runtime_dir_falls_back_to_tempdir() -> None:
    import tempfile

    assert paths.runtime_dir({}) == Path(tempfile.gettempdir())


def test_socket_dir_is_per_user(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert paths.socket_dir(env) == tmp_path / f"choragos-{os.getuid()}"


def test_dir_hash_is_first_8_hex_of_sha256_of_resolved_path(tmp_path: Path) -> None:
    expected = hashlib.sha256(str(tmp_path.resolve()).encode()).hexdigest()[:8]
    assert paths.dir_hash(tmp_path) == expected
    assert paths.dir_hash(tmp_path / "sub" / "..") == expected


def test_dir_hash_names_a_directory_without_loading_openssl(tmp_path: Path) -> None:
    """The same eight digits as hashlib's SHA-256 (the socket's name a client
    of another version computes), from the interpreter's own SHA-256: hashlib
    maps OpenSSL's libcrypto, 3.6 MB of the server's resident memory."""
    code = ("import json, sys\n"
            "from choragos.control.paths import dir_hash\n"
            f"name = dir_hash({str(tmp_path)!r})\n"
            "print(json.dumps([name, [m for m in ('hashlib', '_hashlib') if m in sys.modules]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    name, loaded = json.loads(out.stdout)
    assert name == hashlib.sha256(os.fsencode(str(tmp_path.resolve()))).hexdigest()[:8]
    assert loaded == []


def test_dir_hash_without_the_interpreters_own_sha256_uses_hashlib(tmp_path: Path) -> None:
    code = ("import sys\n"
            "sys.modules['_sha2'] = sys.modules['_sha256'] = None  # a build without them\n"
            "from choragos.control.paths import dir_hash\n"
            f"print(dir_hash({str(tmp_path)!r}), '_hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    expected = hashlib.sha256(os.fsencode(str(tmp_path.resolve()))).hexdigest()[:8]
    assert out.stdout.split() == [expected, "True"]


def test_socket_path_default_and_override(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    work = tmp_path / "proj"
    expected = tmp_path / f"choragos-{os.getuid()}" / f"{paths.dir_hash(work)}.sock"
    assert paths.socket_path(work, env) == expected
    assert paths.socket_path(work, {**env, "CHORAGOS_SOCK": "/x/y.sock"}) == Path("/x/y.sock")


def test_ui_socket_sits_next_to_the_control_socket(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    control = paths.socket_path(tmp_path, env)
    ui = paths.ui_socket_path(tmp_path, env)
    assert ui.parent == control.parent
    assert ui.name == control.name.replace(".sock", ".ui.sock")
    assert paths.ui_socket_path(tmp_path, {"CHORAGOS_SOCK": "/r/a.sock"}) == Path("/r/a.ui.sock")


def test_default_socket_path_fits_sun_path(tmp_path: Path) -> None:
    sock = paths.socket_path(tmp_path / ("deep" * 40), {"XDG_RUNTIME_DIR": "/run/user/1000"})
    assert len(os.fsencode(sock)) < 100


def _listen(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def test_find_socket_env_wins(short_tmp: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(short_tmp), "CHORAGOS_SOCK": "/elsewhere/s.sock"}
    assert paths.find_socket(short_tmp, env) == Path("/elsewhere/s.sock")


def test_find_socket_walks_up_to_the_nearest_session(short_tmp: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(short_tmp / "rt")}
    project = short_tmp / "proj"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    assert paths.find_socket(deep, env) == paths.socket_path(deep, env)
    with _listen(paths.socket_path(project, env)):
        assert paths.find_socket(deep, env) == paths.socket_path(project, env)
        assert paths.find_socket(project, env) == paths.socket_path(project, env)
        with _listen(paths.socket_path(deep / "..", env)):
            assert paths.find_socket(deep, env) == paths.socket_path(project / "src", env)


def test_find_socket_without_any_session_names_cwd(short_tmp: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(short_tmp)}
    assert paths.find_socket(short_tmp, env) == paths.socket_path(short_tmp, env)


def test_state_dir(tmp_path: Path) -> None:
    assert paths.state_dir(tmp_path) == tmp_path / ".choragos"


@pytest.mark.parametrize("name", ["coder", "a", "A_b-9", "-", "x" * 32])
def test_good_role_names(name: str) -> None:
    assert paths.check_role_name(name) is None


@pytest.mark.parametrize("name", [
    "", "x" * 33, "../etc", "a/b", "a b", ".", "..", "coder\n", "rôle", "a\x00b",
    "a\x1b[31m", None, 3, ["coder"],
])
def test_bad_role_names(name: object) -> None:
    problem = paths.check_role_name(name)
    assert problem and "\x1b" not in problem and "\n" not in problem


def test_role_name_checked_names_stay_in_state_dir(tmp_path: Path) -> None:
    state = paths.state_dir(tmp_path)
    for name in ["coder", "a-b", "__", "x" * 32]:
        assert paths.check_role_name(name) is None
        target = paths.confine(f"worker-task-{name}.md", state)
        assert target.parent == state.resolve()


def test_confine_accepts_inside_and_refuses_escapes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    assert paths.confine("sub/x.md", root) == (root / "sub" / "x.md").resolve()
    assert paths.confine(root / "y", root) == (root / "y").resolve()
    for escape in ["../x", "/etc/passwd", "sub/../../x", str(tmp_path)]:
        with pytest.raises(ValueError):
            paths.confine(escape, root)


def test_confine_refuses_symlink_escape(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError):
        paths.confine("link/outside", root)
