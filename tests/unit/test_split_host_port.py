"""``host:port`` split once (choragos.config.model.split_host_port) for the
gateway's listener, its port check and the session's probe of it."""

from __future__ import annotations

import socket

import pytest

from choragos.config.model import split_host_port
from choragos.gateway.client import is_listening
from choragos.gateway.portfree import bindable


@pytest.mark.parametrize(("addr", "split"), [
    ("127.0.0.1:8787", ("127.0.0.1", 8787)),
    ("gw.internal:1", ("gw.internal", 1)),
    ("[::1]:8787", ("::1", 8787)),
    ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
    ("localhost:0", ("localhost", 0)),
    ("localhost:65535", ("localhost", 65535)),
])
def test_an_address_splits_into_host_and_port(addr: str, split: tuple[str, int]) -> None:
    assert split_host_port(addr) == split


@pytest.mark.parametrize(("addr", "said"), [
    ("127.0.0.1", "'127.0.0.1' is not host:port (e.g. 127.0.0.1:8787)"),
    (":8787", "':8787' is not host:port (e.g. 127.0.0.1:8787)"),
    ("[]:8787", "'[]:8787' is not host:port (e.g. 127.0.0.1:8787)"),
    ("", "'' is not host:port (e.g. 127.0.0.1:8787)"),
    ("host:", "'host:': the port must be a number from 0 to 65535"),
    ("host:http", "'host:http': the port must be a number from 0 to 65535"),
    ("host:65536", "'host:65536': the port must be a number from 0 to 65535"),
    ("host:-1", "'host:-1': the port must be a number from 0 to 65535"),
    ("host:８０", "'host:８０': the port must be a number from 0 to 65535"),
    ("::1:8787", "'::1:8787': '::1' is not a host name or address (IPv6 goes in brackets, "
                 "e.g. [::1]:8787)"),
    ("[::1:8787", "'[::1:8787': '[::1' is not a host name or address (IPv6 goes in "
                  "brackets, e.g. [::1]:8787)"),
])
def test_a_bad_address_is_one_sentence_saying_what_is_wrong(addr: str, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        split_host_port(addr)
    assert str(caught.value) == said


def test_the_gateway_checks_split_with_it() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        addr = f"127.0.0.1:{held.getsockname()[1]}"
        assert is_listening(addr) and not bindable(addr)
    # A wrong address: nothing listens there, and the port wait does not wait for it.
    for wrong in ("127.0.0.1", ":8787", "::1:8787", "host:http"):
        assert not is_listening(wrong) and bindable(wrong)
