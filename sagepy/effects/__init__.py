"""The effects boundary: every nondeterministic operation of a program is one `Step` passed through a chain
of layers (DESIGN.md "The effects boundary", SPEC §14).

- step.py: the steps, one small typed class per kind, numbered by the code that makes them;
- boundary.py: `Effects`, what the interpreter calls; it builds the steps (Sage values become JSON here);
- facts.py: what the boundary asks of the world besides steps (a test's and a replay's answers wrap these);
- chain.py: composing layers, each an object with `perform(step, next)`;
- approvals.py, mocks.py (only under `sage test`), cassette.py, trace.py, otel.py, journal.py, real.py: the
  layers, outermost first;
- world.py: the real resources (LLM client, MCP manager), created on first use;
- factory.py: `build_effects`, the one place that assembles a chain.
"""
from __future__ import annotations

from .boundary import Effects
from .factory import build_effects
from .step import Step

__all__ = ["Effects", "Step", "build_effects"]
