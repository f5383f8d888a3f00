"""Seats on other machines, over OpenSSH.

A role with ``host = "<name>"`` runs its program on that host in a PTY that
``ssh -tt`` gives it, through one multiplexed connection per host.  The
connection also carries the role's control socket (a private socket on the
remote side, every request on it taken as that role's) and the built-in
gateway (a forwarded port), and git moves the role's work back and forth.

- :mod:`hosts` reads the ``[hosts.<name>]`` tables;
- :mod:`ssh` builds every ``ssh`` command line (never from task text);
- :mod:`link` keeps one host's master connection, its forwards and its
  private directory;
- :mod:`tether` ends the master connection with the server, however it ends;
- :mod:`seat` turns a role's launch into the remote one;
- :mod:`checkout` moves the role's branch between the two checkouts;
- :mod:`client` is what runs over there: the launcher and the agent verbs.

It may import the core (``choragos.*``), never the actors or the deck.
"""
