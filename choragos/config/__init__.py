"""The configuration: its model and loader, the schema that checks it, the
user's own file, the starter templates, the environment policy and the
memory floor.

Imports the shared modules, terminal/, control/, agents/, and the remote
hosts' table (choragos/remote/hosts.py).
"""
