"""Durable runs as a service for the commands (SPEC §14, §14.2, §17.4): `service.py` finds, approves, denies,
answers, resolves, cancels and submits runs for `sage runs` and the web console alike."""
