"""A stand-in for the browser in OAuth tests (SAGE_OAUTH_OPEN): follow the authorisation URL given as the
last argument, redirects included, so that an authorisation server that approves at once delivers the code
to sagepy's redirect listener. `--delay S` first waits S seconds, like a person would. Exits 1 when the last
answer is not a success."""
from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request

if "--delay" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--delay") + 1]))
try:
    with urllib.request.urlopen(sys.argv[-1], timeout=10) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except urllib.error.URLError as exc:
    sys.stderr.write(f"oauth_open: {exc.reason}\n")
    sys.exit(1)
