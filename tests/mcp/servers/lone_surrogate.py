"""A stdio MCP server (plain JSON-RPC lines, no SDK) whose one tool, `smile`, answers at once with a text that
holds a lone surrogate escape, `\\ud83d`, after the argument `a` it was given (JSON-escaped as received)."""
import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "lone-surrogate", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "smile", "inputSchema": {"type": "object"},
                             "annotations": {"readOnlyHint": True}}]}
    elif method == "tools/call":
        text = message["params"]["arguments"].get("a", "") + " smile \ud83d here"
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
