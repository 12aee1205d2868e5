"""sagepy's version: one literal, which the package, the wheel's metadata and every client report."""
__version__ = "0.1.0"
