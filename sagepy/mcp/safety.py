"""Safety classes of MCP tools from their annotations (SPEC §8.6); shared by the runtime and the CLI."""
from __future__ import annotations

from typing import Any, Mapping


def safety_of(tool_annotations: Mapping[str, Any] | None, trust: bool, override: str | None) -> str:
    """`read_only`, `idempotent` or `destructive` for one tool.

    `tool_annotations` is the listing's `annotations` object in MCP wire spelling (`readOnlyHint`,
    `idempotentHint`, …) or None. An override (`[tools.X.safety]`) wins; with `trust = false` every tool
    is destructive; otherwise `readOnlyHint: true` means read_only whatever the other hints say,
    `idempotentHint: true` means idempotent, and anything else (no annotations, hints left out) destructive:
    the client applies the MCP defaults itself, since unset hints arrive as absent.
    """
    if override is not None:
        return override
    if not trust or not tool_annotations:
        return "destructive"
    if tool_annotations.get("readOnlyHint") is True:
        return "read_only"
    if tool_annotations.get("idempotentHint") is True:
        return "idempotent"
    return "destructive"
