"""Fixtures shared by the deck's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def running(tmp_path):
    """A started deck with a client attached, quiet; stopped afterwards."""
    from tests.ui.test_redraw import _running_deck

    deck, port = _running_deck(tmp_path)
    yield deck, port
    deck.stop()
    deck.screen.close()
