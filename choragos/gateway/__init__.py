"""Model traffic: the built-in proxy (usage read off the streams, counters and
their labels, budgets that block or cut an answer, provider limits), the
session's client of its gateway (the external one or the built-in proxy),
prices, and how each agent CLI's traffic is routed.

Imports the shared modules and the sub-packages below it: terminal/,
gitstore/, control/, agents/, config/.
"""
