"""Admission by memory: the size grammar, the reading and the gate's policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.config.memfloor import (
    MEMINFO_ENV,
    MemoryGate,
    available_bytes,
    format_size,
    parse_size,
)
from choragos.config.model import CONFIG_NAME, ConfigError, load_config

GiB = 1024**3
MiB = 1024**2
LEAD = '[[roles]]\nname = "lead"\ncommand = "sh"\nstart = true\n'


@pytest.mark.parametrize(("text", "size"), [
    ("1GiB", GiB), ("512MiB", 512 * MiB), ("2G", 2 * 1000**3), ("1.5 GiB", int(1.5 * GiB)),
    ("0", 0), ("300kB", 300_000), ("64KiB", 65536), ("1tib", 1024**4),
])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "1 GiB extra", "-1GiB", "1XB", "GiB"])
def test_what_is_not_a_size_is_said_plainly(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a size; write it like \"1GiB\""):
        parse_size(text)


@pytest.mark.parametrize("text", ["9" * 400, "2048TiB", "1e3TiB"])
def test_a_size_past_a_pebibyte_is_refused_in_a_sentence(text: str) -> None:
    # 400 nines are an infinite float: int() of it raised OverflowError out of
    # the loader, a traceback instead of the config's error line.
    with pytest.raises(ValueError, match=r"is more than 1 PiB|is not a size"):
        parse_size(text)
    assert parse_size("1024TiB") == 1024**5


def test_a_size_in_other_digits_is_not_one() -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size("\u0661GiB")


def test_sizes_are_shown_short() -> None:
    assert [format_size(n) for n in (GiB, int(1.5 * GiB), 300 * MiB, 10)] == [
        "1 GiB", "1.5 GiB", "300 MiB", "10 B"]


def test_the_reading_is_memavailable_in_bytes(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:  24683792 kB\nMemFree: 1 kB\nMemAvailable:   2048 kB\n")
    assert available_bytes(str(fake)) == 2048 * 1024
    monkeypatch.setenv(MEMINFO_ENV, str(fake))
    assert available_bytes() == 2048 * 1024
    fake.write_text("MemTotal:  24683792 kB\n")  # a kernel before 3.14
    assert available_bytes() is None
    assert available_bytes(str(tmp_path / "absent")) is None


# Each step: (what, role, available MiB or None for no reading, what comes back).
# "ask" gives (admitted, new hold); "release" gives the role let in, or None.
GATE_CASES = {
    "plenty: every start goes": [
        ("ask", "a", 4096, (True, False)), ("ask", "b", 4096, (True, False))],
    "short: held once, asked again it is the same hold": [
        ("ask", "a", 500, (False, True)), ("ask", "a", 500, (False, False)),
        ("release", None, 900, None), ("release", None, 1024, "a"),
        ("release", None, 4096, None)],
    "the waiting start in the order they asked, one a release": [
        ("ask", "a", 10, (False, True)), ("ask", "b", 10, (False, True)),
        ("ask", "c", 10, (False, True)), ("release", None, 2048, "a"),
        ("release", None, 2048, "b"), ("release", None, 100, None),
        ("release", None, 2048, "c")],
    "a newcomer queues behind the waiting even with memory back": [
        ("ask", "a", 10, (False, True)), ("ask", "b", 4096, (False, True)),
        ("release", None, 4096, "a"), ("release", None, 4096, "b")],
    "a dropped role waits no longer": [
        ("ask", "a", 10, (False, True)), ("ask", "b", 10, (False, True)),
        ("drop", "a", 10, None), ("release", None, 4096, "b"),
        ("release", None, 4096, None)],
    "no reading: nothing is held": [
        ("ask", "a", None, (True, False)), ("ask", "b", None, (True, False))],
    "held, then the reading is gone: the waiting go": [
        ("ask", "a", 10, (False, True)), ("release", None, None, "a")],
    "a floor of zero is off": [("ask", "a", 0, (True, False))],
}


@pytest.mark.parametrize("steps", GATE_CASES.values(), ids=GATE_CASES.keys())
def test_the_gate(steps: list) -> None:
    reading: list[int | None] = [None]
    floor = 0 if steps[0][2] == 0 else GiB
    gate = MemoryGate(floor, lambda: reading[0])
    for what, role, mib, want in steps:
        reading[0] = None if mib is None else mib * MiB
        if what == "ask":
            verdict = gate.ask(role)
            assert (verdict.admitted, verdict.new) == want, (what, role, mib)
            assert verdict.admitted or "under the 1 GiB floor ([ui] min_free_memory)" in (
                verdict.reason)
        elif what == "release":
            assert gate.release() == want, (what, mib)
        else:
            gate.drop(role)


def test_the_hold_says_what_memory_there_is() -> None:
    gate = MemoryGate(GiB, lambda: 300 * MiB)
    assert gate.ask("coder").reason.startswith("300 MiB of memory available, under the 1 GiB")
    assert gate.waiting == ["coder"]


def test_the_floor_in_the_config(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(LEAD)
    assert load_config(cwd=tmp_path).ui.min_free_memory == GiB
    (tmp_path / CONFIG_NAME).write_text(LEAD + '[ui]\nmin_free_memory = "512MiB"\n')
    assert load_config(cwd=tmp_path).ui.min_free_memory == 512 * MiB
    for bad, said in (('"plenty"', "'plenty' is not a size"), ("1024", "a size string")):
        (tmp_path / CONFIG_NAME).write_text(LEAD + f"[ui]\nmin_free_memory = {bad}\n")
        with pytest.raises(ConfigError) as caught:
            load_config(cwd=tmp_path)
        assert len(caught.value.errors) == 1
        assert "ui.min_free_memory" in caught.value.errors[0]
        assert said in caught.value.errors[0]


def test_memory_is_read_once_per_start_and_never_while_nobody_waits() -> None:
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        return 4 * GiB

    gate = MemoryGate(GiB, read)
    for role in ("a", "b", "c"):
        assert gate.ask(role).admitted
    assert len(reads) == 3
    for _ in range(100):
        assert gate.release() is None
    assert len(reads) == 3  # an empty queue costs no reading
    assert MemoryGate(0, read).ask("d").admitted and len(reads) == 3  # off: never read


def test_a_wait_is_told_inside_the_gate_in_the_queue_s_order() -> None:
    """Roles ask on their own threads at once: what they tell the core of a
    hold must come in the order the gate queued them, so it is told while
    the gate is still locked."""
    gate = MemoryGate(GiB, lambda: 200 * MiB)
    told: list[tuple[str, bool, bool]] = []

    def held(role: str):
        return lambda verdict: told.append((role, verdict.new, gate._lock.locked()))

    assert not gate.ask("orchestrator", held("orchestrator")).admitted
    assert not gate.ask("coder", held("coder")).admitted
    assert not gate.ask("coder", held("coder")).admitted  # asked again: not a new hold
    assert told == [("orchestrator", True, True), ("coder", True, True), ("coder", False, True)]
    assert gate.waiting == ["orchestrator", "coder"]
    roomy = MemoryGate(GiB, lambda: 2 * GiB)
    assert roomy.ask("coder", held("roomy")).admitted and told[-1][0] == "coder"
