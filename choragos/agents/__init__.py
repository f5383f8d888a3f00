"""What choragos knows of each agent CLI: its profile (screen and input), the
wrappers in front of it, the project settings it reads, and its state read
off its emulated screen.

Imports the shared modules, terminal/ and control/.
"""
