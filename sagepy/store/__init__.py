"""The durable store: `@persistent` fields, runs, journal steps and leases (see base.py)."""
