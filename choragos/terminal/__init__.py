"""The agents' terminals: each role's process in its pseudo-terminal (the
one seam to the operating system's processes, and when a process comes
back), the emulated screen its bytes draw, its transcript, and the wait for
a typed key's echo.

Imports the shared modules at the top of choragos/ only.
"""
