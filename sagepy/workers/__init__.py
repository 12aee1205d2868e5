"""Queued runs and workers (SPEC §14.2): program versions, the worker loop, and what a run's process does when
a worker started it."""
