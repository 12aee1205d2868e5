"""AST -> Python closures (the tree-walking interpreter, compiled once per node): `compiler.Compiler`, one
visitor, and its helpers (see compiler.py)."""
from __future__ import annotations

from .compiler import Compiler
from .frames import located
from .items import CompiledAgent, CompiledBody, FnRecord

__all__ = ["Compiler", "CompiledAgent", "CompiledBody", "FnRecord", "located"]
