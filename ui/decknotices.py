"""What the session said as it started, shown in the deck.

``choragos serve`` in a terminal prints its start notices (a previous
state kept aside, config warnings) just before the deck takes the screen,
whose alternate screen hides them until the deck leaves.  The deck shows
them too, in a dialog on its first frame: the dialog stays (across detaches)
until a key closes it, and then never comes back in this session.
"""

from __future__ import annotations

from collections.abc import Sequence

from choragos.ui.deckoverlays import OverlayStack


class StartNotices:
    """The start's notices not read yet, and their dialog."""

    def __init__(self, overlays: OverlayStack) -> None:
        self.overlays = overlays
        self.unread: tuple[str, ...] = ()

    def hold(self, notices: Sequence[str]) -> None:
        """Show ``notices`` on the next attach (or now, if a client is attached)."""
        self.unread = tuple(notices)

    def show(self) -> bool:
        """Open the dialog when there is anything unread and nothing else is
        open; True when it is open (a gate waits behind it)."""
        if self.overlays.kind == "notices":
            return True
        if not self.unread or not self.overlays.free:
            return False
        # The dialogs' module only for a start that has something to say.
        from choragos.ui.overlays import NoticeOverlay

        self.overlays.open(NoticeOverlay(self.unread, self._read), "notices",
                           ("relative", 80), ("relative", 70))
        return True

    def _read(self) -> None:
        self.unread = ()
        self.overlays.close()
