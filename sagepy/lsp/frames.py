"""What `sage lsp` reads from its client, made safe before pygls acts on it (SPEC §19.2: errors never end
the server, and no answer carries a traceback).

- **Frames.** pygls reads a `Content-Length` header and then exactly that many bytes: a length it cannot
  allocate (`Content-Length: 1099511627776`, or hundreds of digits) ended the server. `FrameGuard` wraps
  stdin: a header announcing more than `MAX_MESSAGE` bytes is not given to pygls; in its place pygls reads
  a `$/sage/unreadableFrame` notification, which the server logs to the client, and the reading goes on
  with the client's next header.
- **Params.** A request whose params do not fit its method (`params: null`, `{}`, `position.line: -1`) made
  pygls log a traceback and answer nothing, so the client waited forever. `SageProtocol` turns it into a
  `$/sage/invalidParams` request with the same id, whose handler raises -32602 with a plain message naming
  the method and what is wrong; a notification with such params is logged and dropped.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, BinaryIO

from lsprotocol import types as L
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

MAX_MESSAGE = 64 * 1024 * 1024
UNREADABLE = "$/sage/unreadableFrame"
INVALID = "$/sage/invalidParams"
_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*", re.IGNORECASE)


class FrameGuard:
    """stdin as pygls reads it (`readline`, `read`), with over-long frames replaced (the module's docstring)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.body: bytes | None = None   # the notification that stands for a refused frame, read next

    def readline(self) -> bytes:
        line = self.stream.readline()
        match = _LENGTH.fullmatch(line)
        if match and (len(match.group(1)) > 12 or int(match.group(1)) > MAX_MESSAGE):
            shown = line.strip()[:60].decode("ascii", "replace") + ("…" if len(line.strip()) > 60 else "")
            self.body = json.dumps({"jsonrpc": "2.0", "method": UNREADABLE,
                                    "params": {"header": shown}}).encode()
            return b"Content-Length: %d\r\n" % len(self.body)
        return line

    def read(self, n: int) -> bytes:
        if self.body is not None:
            body, self.body = self.body, None
            return body
        return self.stream.read(n)


def _reason(exc: BaseException | None) -> str:
    """What is wrong with the params, in cattrs's words with the wire's names
    (`required field missing @ $.params.textDocument`)."""
    if exc is None:
        return "they do not fit the method"
    try:
        from cattrs import transform_error
        from cattrs.v import format_exception

        def say(error: BaseException, type_: Any) -> str:
            # lsprotocol's validators say it best: "Position.line should be in range [0:2147483647], but was -1."
            return str(error) if type(error) is ValueError and str(error) else format_exception(error, type_)
        found = transform_error(exc, format_exception=say)
    except Exception:
        return str(exc) or type(exc).__name__
    return "; ".join(re.sub(r"_([a-z])", lambda m: m.group(1).upper(), line) for line in found) or str(exc)


class SageProtocol(LanguageServerProtocol):
    """pygls's protocol, with messages whose params cannot be read answered instead of dropped."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if not isinstance(method, str):
                raise
            reason = f"invalid params for {method}: {_reason(exc.__cause__)}"
            msg_id = data.get("id")
            if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool):
                return JsonRPCRequestMessage(id=msg_id, method=INVALID, jsonrpc="2.0", params=reason)
            return JsonRPCNotification(method=UNREADABLE, jsonrpc="2.0", params={"params": reason})


def install(server: Any) -> None:
    """The two handlers the replacements above are answered by, and pygls's own log kept off stderr (its
    tracebacks of malformed messages say nothing the client's log does not)."""
    logging.getLogger("pygls").addHandler(logging.NullHandler())
    logging.getLogger("pygls").propagate = False

    @server.feature(INVALID)
    def invalid_params(ls: Any, reason: Any) -> None:
        raise JsonRpcInvalidParams(str(reason))

    @server.feature(UNREADABLE)
    def unreadable(ls: Any, params: Any) -> None:
        what = params.get("header") if isinstance(params, dict) else getattr(params, "header", None)
        if what is not None:
            text = f"skipped a message whose header `{what}` announces more than {MAX_MESSAGE} bytes"
        else:
            text = f"skipped a notification: {params.get('params') if isinstance(params, dict) else params}"
        ls.window_log_message(L.LogMessageParams(L.MessageType.Warning, text))


def serve_io(server: Any) -> None:
    import sys
    install(server)
    server.start_io(stdin=FrameGuard(sys.stdin.buffer))
