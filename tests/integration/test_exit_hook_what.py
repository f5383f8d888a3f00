"""``on_exit`` says what exited: a role (``CHORAGOS_EXITED=role``), even one
named ``deck``, and its variables as before; the deck's give-up says
``CHORAGOS_EXITED=part`` and ``CHORAGOS_PART=deck`` (tests/deck/test_deck_given_up.py)."""

from __future__ import annotations

from tests.integration.harness import Serve, role_toml

HOOK = ("[ui]\non_exit = 'printf \"%s|%s|%s|%s|%s\\\\n\" \"$CHORAGOS_ROLE\" \"$CHORAGOS_TASK\" "
        "\"$CHORAGOS_EXIT\" \"$CHORAGOS_EXITED\" \"${{CHORAGOS_PART-unset}}\" >> {out}'\n")


def test_a_role_named_deck_exits_as_a_role(serve, short_tmp):
    out = short_tmp / "on_exit.log"
    s: Serve = serve(role_toml("orchestrator", start=True)
                     + role_toml("deck", "--crash-after", "0.5", "--exit-code", "4")
                     + HOOK.format(out=out))
    s.wait(lambda: out.exists() and out.read_text(), 20, "the on_exit hook")
    assert out.read_text() == "deck|exit status 4|exit status 4|role|unset\n"
