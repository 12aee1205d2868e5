"""Where sagepy's data files are: the Lark grammar and the Sage-syntax prelude (stdlib/*.sg).

A wheel ships them inside the package as sagepy/_grammar and sagepy/_stdlib (pyproject.toml maps the
top-level grammar/ and stdlib/ directories onto those packages). A source checkout, and an editable install,
which imports sagepy straight from the checkout, have them at the repository top level beside sagepy/.
Two `Path` checks tell the layouts apart, so start-up never pays for importing importlib.resources.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _locate(installed: Path, checkout: Path) -> Path:
    for candidate in (installed, checkout):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"sagepy installation is incomplete: neither {installed} nor {checkout} exists")


def grammar_file() -> Path:
    """The grammar, `sage.lark`."""
    return _locate(_PACKAGE_DIR / "_grammar" / "sage.lark", _PACKAGE_DIR.parent / "grammar" / "sage.lark")


def stdlib_dir() -> Path:
    """The directory that holds the prelude's `.sg` files."""
    return _locate(_PACKAGE_DIR / "_stdlib", _PACKAGE_DIR.parent / "stdlib")
