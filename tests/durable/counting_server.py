"""A stdio MCP server that counts what it does: the witness of the durable-run tests (crash sweep, soak, bench).

One tool per safety class (SPEC §8.6), told by its annotations:
  echo(text) -> text                          read-only
  put(key, value) -> "stored <key>"           idempotent (writes <ledger>.kv, one line per key, last wins)
  charge(account, amount) -> receipt          destructive
  slow_charge(account, amount, ms) -> receipt destructive, sleeps `ms` before it charges

Every destructive call appends one JSON line to the ledger file named by COUNTING_LEDGER:
`{"tool", "args", "value", "pid"}`, where `value` is what the call returns: the account's receipt number,
1 for its first charge, 2 for its second… A call that fired twice shows as two lines (and as a receipt one
higher than expected). A slow charge that is cancelled or whose process dies while it sleeps never charges.
The ledger is locked while a receipt is counted and written, so several server processes (an orphan of a
crashed run finishing a call while the resumed run's server starts) never hand out one receipt twice.
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import os

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

LEDGER_VAR = "COUNTING_LEDGER"

server = MCPServer("counting", version="1.0.0")

READ_ONLY = ToolAnnotations(read_only_hint=True)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, idempotent_hint=True, destructive_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=True)


def _ledger() -> str:
    return os.environ[LEDGER_VAR]


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool(annotations=IDEMPOTENT)
def put(key: str, value: str) -> str:
    """Store value under key (again and again: the same effect as once)."""
    with open(_ledger() + ".kv", "a", encoding="utf-8") as kv:
        fcntl.flock(kv, fcntl.LOCK_EX)
        kv.write(json.dumps({"key": key, "value": value}) + "\n")
    return f"stored {key}"


@server.tool(annotations=DESTRUCTIVE)
def charge(account: str, amount: int) -> int:
    """Charge the account; returns the receipt number (1 for the account's first charge)."""
    return _charge("charge", {"account": account, "amount": amount})


@server.tool(annotations=DESTRUCTIVE)
async def slow_charge(account: str, amount: int, ms: int) -> int:
    """Wait `ms` milliseconds, then charge the account; returns the receipt number."""
    await asyncio.sleep(ms / 1000)
    return _charge("slow_charge", {"account": account, "amount": amount, "ms": ms})


def _charge(tool: str, args: dict) -> int:
    with open(_ledger(), "a+", encoding="utf-8") as ledger:
        fcntl.flock(ledger, fcntl.LOCK_EX)
        ledger.seek(0)
        earlier = sum(1 for line in ledger if json.loads(line)["args"]["account"] == args["account"])
        receipt = earlier + 1
        ledger.write(json.dumps({"tool": tool, "args": args, "value": receipt, "pid": os.getpid()}) + "\n")
        ledger.flush()
    return receipt


if __name__ == "__main__":
    server.run()
