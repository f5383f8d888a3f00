"""The web view: its server and its limits, the session's news as events,
the access token, a pane as the page shows it, and push notifications; the
page itself is in page/.

Imports the shared modules and every sub-package below it.
"""
