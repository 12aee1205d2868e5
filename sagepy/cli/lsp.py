"""`sage lsp`: the language server on stdin/stdout (SPEC §19.2). pygls is the `lsp` extra: without it, a
message naming the pip command and exit 2."""
from __future__ import annotations

import sys
from typing import Any

MISSING = ("error: sage lsp needs pygls, which is not installed\n"
           "  = help: install it with `pip install 'sagepy[lsp]'`\n")


def run_lsp(args: Any) -> int:
    try:
        import pygls  # noqa: F401  (only to know whether the extra is installed and loads)
    except ImportError:
        sys.stderr.write(MISSING)
        return 2
    from ..lsp.server import serve
    return serve()
