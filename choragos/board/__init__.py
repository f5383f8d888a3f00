"""What lasts: the task board and its ids, the session journal and its
checks, the event log, and the report and timeline read back from it.

Imports the shared modules and the sub-packages below it, up to gateway/
(prices).
"""
