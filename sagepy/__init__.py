"""sagepy: a Python implementation of the Sage agent language."""

__version__ = "0.1.0"


class SageFail(Exception):
    """Raised by a `fails` extern function to signal a Sage `User` error with this message."""
