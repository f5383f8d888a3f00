"""Choragos: run a team of AI coding-agent CLIs on one machine.

This package is the UI-free, actor-free core, in sub-packages by concern
(each one's docstring says what it holds and what it may import) around a
few shared modules that import nothing of ours but one another.  Keep this module free of
imports: the ``delegate`` and ``work-done`` verbs load it on every call.
"""

__version__ = "0.1.0"
