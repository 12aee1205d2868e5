"""`python -m sagepy` runs the `sage` command."""
import sys

from sagepy.cli.main import main

sys.exit(main())
