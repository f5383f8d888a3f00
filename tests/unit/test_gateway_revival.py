"""The built-in gateway's cool-down after a give-up: how long, and when it starts over."""

from __future__ import annotations

from choragos.actors.gatewayrevival import FIRST_WAIT, LONGEST_WAIT, cool_down


def test_the_wait_doubles_from_half_a_minute_to_a_quarter_of_an_hour() -> None:
    assert [cool_down(n) for n in range(8)] == [30, 60, 120, 240, 480, 900, 900, 900]
    assert cool_down(0) == FIRST_WAIT and cool_down(10_000) == LONGEST_WAIT


def test_a_shortened_first_wait_doubles_the_same_way() -> None:
    assert [cool_down(n, 1.0) for n in range(4)] == [1, 2, 4, 8]
