"""The session server around the actors: daemonizing, resuming, live reload
plans, the news it publishes to its subscribers, its own metrics, the
hooks it runs, the stop flag its main thread sleeps on, its one malloc
arena, and the hop stamps the attach bench reads.

Imports the shared modules and the sub-packages below it, up to roles/.
"""
