"""What runs on a remote host: the seat launcher, with the standard library only.

These files are copied to the host as they are; nothing here may import
anything but the standard library (the host has Python 3 and nothing else
of ours).
"""
