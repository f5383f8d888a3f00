"""The git store: checkpoints and rollback, the work-tree walk and object
writes behind them, one worktree per role and its merge, and what a task
changed.

Imports the shared modules at the top of choragos/ only.
"""
