"""The deck's model: its state, and the one way what the news change is
changed.

The parts of the deck read ``model.state``; the roles, tasks, gates and
the gateway's state in it change only through :meth:`DeckModel.apply`,
which runs the pure reducer (``ui/reducer.py``) and hands back its
effects for the loop to carry out.  The tiling (layout, panes, sizes) is
the view's own and is changed in place by the parts that own it.
"""

from __future__ import annotations

import logging

from choragos.ui.deckstate import DeckState
from choragos.ui.layout import Layout, LayoutError
from choragos.ui.reducer import Effect, Item, reduce

log = logging.getLogger("choragos.deck")


class DeckModel:
    """The deck's state; ``apply`` is its only writer of news."""

    def __init__(self, state: DeckState, saved_layout: dict | None = None) -> None:
        self._state = state
        if saved_layout:  # a resumed session shows the layout it had
            try:
                state.layout = Layout.from_dict(saved_layout, state.layout.roster)
            except LayoutError as exc:
                log.warning("starting with the default layout: %s", exc)
        self._saved_layout = state.layout.to_dict()

    @property
    def state(self) -> DeckState:
        return self._state

    def apply(self, item: Item) -> list[Effect]:
        """``item`` reduced into the state; what the view must do about it."""
        self._state, effects = reduce(self._state, item)
        return effects

    def layout_to_save(self) -> dict | None:
        """The layout, when it changed since it was last saved (or restored)."""
        now = self._state.layout.to_dict()
        if now == self._saved_layout:
            return None
        self._saved_layout = now
        return now
