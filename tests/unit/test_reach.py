"""What an ssh failure means, and when a host that stopped answering is probed."""

from __future__ import annotations

import pytest

from choragos.remote import reach
from choragos.remote.reach import ANSWERED, REFUSED, UNREACHABLE, Probe, Reach

# What OpenSSH 8-9 writes on standard error, as seen on Linux and macOS.
UNREACHABLE_SAID = [
    "ssh: connect to host 10.0.0.5 port 22: Connection refused",
    "ssh: connect to host gpu-box port 22: Connection timed out",
    "ssh: connect to host gpu-box port 22: No route to host",
    "ssh: connect to host gpu-box port 22: Network is unreachable",
    "ssh: Could not resolve hostname mac-mini: Temporary failure in name resolution",
    "kex_exchange_identification: read: Connection reset by peer",
    "Connection closed by 10.0.0.5 port 22",
    "Timeout, server gpu-box not responding.",
    "client_loop: send disconnect: Broken pipe",
    "",
]
REFUSED_SAID = [
    "me@gpu-box: Permission denied (publickey).",
    "Host key verification failed.",
    "@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@",
    "Received disconnect from 10.0.0.5 port 22:2: Too many authentication failures",
    "Unable to negotiate with 10.0.0.5 port 22: no matching host key type found.",
    "/home/me/.ssh/config: line 3: Bad configuration option: identityfle",
]


@pytest.mark.parametrize("said", UNREACHABLE_SAID)
def test_a_host_that_did_not_answer_is_unreachable(said):
    assert reach.classify(255, said) == UNREACHABLE


@pytest.mark.parametrize("said", REFUSED_SAID)
def test_a_login_turned_away_is_a_fault_of_the_configuration(said):
    assert reach.classify(255, "Warning: Permanently added 'x' to the list of known hosts.\n"
                          + said) == REFUSED


@pytest.mark.parametrize("code", [0, 1, 127, None])
def test_an_exit_not_ssh_s_own_is_the_host_answering(code):
    # A command (or an agent) that failed there: the host answered it.
    assert reach.classify(code, "Permission denied") == ANSWERED


def test_the_probes_back_off_doubles_from_a_few_seconds_to_a_cap():
    delays = [reach.next_delay(tries) for tries in range(9)]
    assert delays[:6] == [3.0, 6.0, 12.0, 24.0, 48.0, 96.0]
    assert delays[6:] == [reach.DELAY_CAP] * 3
    assert reach.next_delay(10_000) == reach.DELAY_CAP  # no float overflow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _reach() -> tuple[Reach, Clock]:
    clock = Clock()
    return Reach(clock, wall=lambda: 5.0e9 + clock.now), clock


def test_roles_on_one_host_share_its_outage_and_its_rounds():
    host, clock = _reach()
    first = host.lost(UNREACHABLE, "Connection refused")
    assert (first.episode, first.next_try) == (1, 1003.0)
    clock.now += 1
    second = host.lost(UNREACHABLE, "the connection was lost")
    assert second == first  # the same outage, the same round: one probe answers both
    probe = Probe(UNREACHABLE, "Connection refused", 1003.5)
    after = host.probed(probe)
    assert (after.episode, after.next_try) == (1, 1003.5 + 6.0)
    assert host.fresh(1003.0) is probe  # a role whose round was due then takes it
    assert host.fresh(1004.0) is None   # a later round probes again
    clock.now = 1010.0
    after = host.probed(Probe(UNREACHABLE, "Connection refused", 1010.0))
    assert after.next_try == 1010.0 + 12.0


def test_an_answer_ends_the_outage_and_a_later_one_is_new():
    host, clock = _reach()
    host.lost(UNREACHABLE, "Connection refused")
    assert host.probed(Probe(ANSWERED, "", 1004.0)) is None
    assert host.current is None
    clock.now = 1004.0 + reach.SETTLE + 1
    again = host.lost(UNREACHABLE, "Connection refused")
    assert again.episode == 2 and again.next_try == clock.now + reach.FIRST_DELAY


def test_a_connection_that_flaps_continues_its_outage_and_its_back_off():
    host, clock = _reach()
    host.lost(UNREACHABLE, "Connection refused")
    clock.now = 1003.0
    host.probed(Probe(UNREACHABLE, "Connection refused", 1003.0))
    clock.now = 1009.0
    host.probed(Probe(ANSWERED, "", 1009.0))
    clock.now = 1020.0  # dropped again within SETTLE of its return
    again = host.lost(UNREACHABLE, "the connection was lost")
    assert again.episode == 1  # nothing said again
    assert again.next_try == 1020.0 + 6.0  # the back-off goes on (one probe found nothing)


def test_a_refused_login_is_not_probed():
    host, _ = _reach()
    held = host.lost(UNREACHABLE, "the connection was lost")
    refused = host.probed(Probe(REFUSED, "Permission denied (publickey).", 1003.0))
    assert refused.episode == held.episode and refused.kind == REFUSED
    assert refused.next_try is None
    # The operator's restart is turned away again: the same hold, still not probed.
    assert host.lost(REFUSED, "Permission denied (publickey).").next_try is None
    # ... or finds the host gone: probed again.
    assert host.lost(UNREACHABLE, "Connection refused").next_try is not None
