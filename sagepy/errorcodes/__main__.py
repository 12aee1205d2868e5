"""`python -m sagepy.errorcodes` prints docs/errors.md."""
import sys

from . import markdown

sys.stdout.write(markdown())
