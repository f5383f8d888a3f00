"""The attach protocol's frames."""

from __future__ import annotations

import pytest

from choragos.ui import framing as f


def test_round_trip_in_any_chunking():
    stream = (f.encode_json(f.HELLO, {"cols": 80, "rows": 24}) + f.encode_data(b"x" * 70000)
              + f.window(100, 30) + f.encode_json(f.EXIT, {"reason": "bye", "code": 0}))
    for step in (1, 3, 5, 4096, len(stream)):
        decoder = f.Decoder()
        frames = []
        for i in range(0, len(stream), step):
            frames += decoder.feed(stream[i:i + step])
        kinds = [kind for kind, _ in frames]
        assert kinds == [f.HELLO, f.DATA, f.DATA, f.WINDOW, f.EXIT], step
        assert b"".join(p for k, p in frames if k == f.DATA) == b"x" * 70000
        assert f.decode_json(frames[0][1]) == {"cols": 80, "rows": 24}
        assert f.size_of(f.decode_json(frames[3][1])) == (100, 30)
        assert decoder.buffered == 0


def test_data_is_cut_into_chunks():
    encoded = f.encode_data(b"y" * (f.CHUNK * 2 + 1))
    frames = f.Decoder().feed(encoded)
    assert [len(p) for _, p in frames] == [f.CHUNK, f.CHUNK, 1]
    assert f.encode_data(b"") == b""


def test_unknown_kinds_and_oversize_frames_are_refused():
    with pytest.raises(f.FrameError, match="unknown frame kind"):
        f.Decoder().feed(b"Z\x00\x00\x00\x00")
    with pytest.raises(f.FrameError, match="over the limit"):
        f.Decoder().feed(b"D\x7f\xff\xff\xff")
    with pytest.raises(ValueError):
        f.encode(b"Q", b"")
    with pytest.raises(ValueError):
        f.encode(f.DATA, b"x" * (f.MAX_PAYLOAD + 1))


def test_control_frames_must_be_json_objects():
    with pytest.raises(f.FrameError):
        f.decode_json(b"not json")
    with pytest.raises(f.FrameError):
        f.decode_json(b"[1, 2]")


@pytest.mark.parametrize(("value", "size"), [
    ({"cols": 80, "rows": 24}, (80, 24)), ({"cols": 0, "rows": 24}, None),
    ({"cols": "80", "rows": 24}, None), ({"cols": 5000, "rows": 24}, None), ({}, None),
])
def test_window_sizes_are_checked(value, size):
    assert f.size_of(value) == size


def test_the_attach_client_loads_without_urwid():
    import subprocess
    import sys
    code = ("import sys, choragos.ui.attach, choragos.cli.attach, choragos.cli.ls,"
            " choragos.cli.kill;"
            "print('urwid' in sys.modules, 'pykka' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]
