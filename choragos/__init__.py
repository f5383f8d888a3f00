"""Choragos: run a team of AI coding-agent CLIs on one machine.

This package is the UI-free, actor-free core.  Keep this module free of
imports: the ``delegate`` and ``work-done`` verbs load it on every call.
"""

__version__ = "0.1.0"
