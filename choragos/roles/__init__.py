"""A role at work: how it is launched, its state machine, what it is told
(briefs), its conversation, its verify command, its owned files, the
choragos first on its PATH, and the doctor's checks of its seat.

Imports the shared modules and the sub-packages below it, up to board/.
"""
