"""The control protocol: the command registry, the wire format and its client
side, the control socket's server, who may do what (authority, the peer of
a loopback TCP connection), and where a session keeps its socket.

Imports the shared modules and terminal/ (a caller's process ancestry).
The agent verbs that run on a remote host carry commands, paths and wire
from here: those three import the standard library and each other only.
"""
