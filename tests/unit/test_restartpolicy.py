import pytest

from choragos.terminal.restartpolicy import Decision, ExitStatus, decide

FAIL = ExitStatus(code=1)
KILLED = ExitStatus(signal=9)
CLEAN = ExitStatus(code=0)


@pytest.mark.parametrize("policy,status,expected", [
    ("", FAIL, False), ("", CLEAN, False),
    ("on-failure", FAIL, True), ("on-failure", KILLED, True), ("on-failure", CLEAN, False),
    ("always", CLEAN, True), ("always", FAIL, True),
])
def test_policies(policy, status, expected):
    assert decide(policy, 3, 0, status).restart is expected


def test_budget_and_backoff():
    delays = [decide("on-failure", 3, used, FAIL).delay for used in range(3)]
    assert delays == [1.0, 2.0, 4.0]
    spent = decide("on-failure", 3, 3, FAIL)
    assert not spent.restart and "budget" in spent.reason


def test_deliberate_stop_is_respected():
    assert not decide("always", 3, 0, KILLED, stopping=True).restart


def test_describe():
    assert KILLED.describe() == "killed by signal 9"
    assert FAIL.describe() == "exit status 1"


def test_backoff_doubles_up_to_its_cap():
    delays = [decide("always", 20, used, FAIL).delay for used in (4, 5, 10)]
    assert delays == [16.0, 30.0, 30.0]  # 2**5 = 32 and 2**10 would overshoot the cap


@pytest.mark.parametrize("args,expected", [
    (("always", 3, 0, KILLED, True), Decision(False, 0.0, "stopped on purpose")),
    (("always", 3, 0, CLEAN), Decision(True, 1.0, "restart 1 of 3")),
    (("on-failure", 3, 2, FAIL), Decision(True, 4.0, "restart 3 of 3")),
    (("on-failure", 3, 3, KILLED), Decision(False, 0.0, "restart budget spent (3 of 3)")),
    (("on-failure", 3, 0, CLEAN), Decision(False, 0.0, "clean exit")),
    (("", 3, 0, FAIL), Decision(False, 0.0, "no restart policy")),
])
def test_each_decision_says_why(args, expected):
    """The reason is what the operator reads in the role's detail line."""
    assert decide(*args) == expected


def test_exit_status_failed():
    assert FAIL.failed and KILLED.failed and not CLEAN.failed
    assert not ExitStatus().failed  # nothing known: not a failure
    assert ExitStatus(code=0, signal=15).failed


def test_a_thousand_restarts_in_the_delay_stays_the_cap():
    # restart_retries has no ceiling: after 1024 restarts 2 ** used was no
    # float, and deciding the next restart raised OverflowError in the role.
    for used in (64, 1024, 10**6):
        assert decide("always", 10**7, used, FAIL) == Decision(
            True, 30.0, f"restart {used + 1} of {10**7}")
