"""An Anthropic Messages API server on 127.0.0.1 that checks requests the way the hosted API does, for the
tests of the `anthropic` provider (SPEC §4.13). The Messages counterpart of strict_server.py.

It answers `POST …/v1/messages` from a script and, before answering, refuses what the hosted API refuses,
with its status and error body (`{"type": "error", "error": {"type", "message"}, "request_id"}`) and, where
known, its very message:

- headers: no `x-api-key` (401 `x-api-key header is required`), another key than the server's (401
  `invalid x-api-key`), no `anthropic-version` or an unknown one, a body that is not `application/json`;
- the body: `model` and `max_tokens` required, no field the API does not know (`response_format` is a chat
  completions field: refused), `temperature` within [0, 1], `system` a string or text blocks (never a message
  role), `stream` not supported here;
- the conversation: roles `user`/`assistant` only, starting with `user` and alternating, no empty text, no
  unknown keys; `tool_use` blocks only from the assistant and `tool_result` blocks only from the user; every
  `tool_use` id answered by a `tool_result` at the beginning of the very next user message, every
  `tool_result` answering a `tool_use` of the message just before; `tool_use`/`tool_result` blocks only when
  `tools` are given;
- tools: names matching `^[a-zA-Z0-9_-]{1,128}$`, unique; `input_schema` required, its root `type: "object"`,
  valid under JSON Schema draft 2020-12, property names matching `^[a-zA-Z0-9_.-]{1,64}$`; `tool_choice` one
  of `auto`, `any`, `none`, `tool` (naming an offered tool) and only with tools.

The script is a list of turns, consumed one per valid request:
- a `str`: the model answers with that text (`stop_reason: "end_turn"`);
- a `ToolCall(name, input)`, or a list of them: the model asks for those calls (`stop_reason: "tool_use"`);
  a list may start with a `str`, the text the model writes before its calls;
- `HttpError(status, body, headers)`: the server answers that, as a failing API would;
- a callable `(request_json) -> turn`: the turn is computed from the request (say, from tool results).

    with MessagesServer(["hello"]) as srv:
        ... POST srv.url + "/messages" with x-api-key: srv.key ...
        srv.requests  # every request body received, in order (srv.headers: their headers)
        srv.errors    # every validation failure: {"request": n, "status", "error": {...}}
        srv.arrivals  # when each request arrived (time.monotonic()), for the rate limits' tests
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

VERSION = "2023-06-01"
KEY = "sk-ant-test-0123456789abcdef"


@dataclass(frozen=True)
class ToolCall:
    """One call the scripted model asks for; `input` is the object it passes."""

    name: str
    input: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HttpError:
    """A scripted failure of the API itself: `status` with `body` (a dict is sent as JSON) and `headers`."""

    status: int
    body: dict | str = ""
    headers: dict = field(default_factory=dict)


def error_body(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}


Turn = Union[str, ToolCall, list, tuple, HttpError, Callable[[dict], Any]]


class ApiError(Exception):
    """A request the hosted API would refuse: the status and body to send."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(kind, message)


# ---------------------------------------------------------------- requests

_FIELDS = {"model", "max_tokens", "messages", "system", "temperature", "tools", "tool_choice", "stop_sequences",
           "top_p", "top_k", "metadata", "stream", "thinking", "service_tier"}
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_PROPERTY = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
_ID = re.compile(r"[a-zA-Z0-9_-]+")


def request_problem(body: Any) -> ApiError | None:
    """The 400 the hosted API answers to this request body, or None when it is valid."""
    try:
        _check_body(body)
    except ApiError as error:
        return error
    return None


def _check_body(body: Any) -> None:
    if not isinstance(body, dict):
        raise ApiError("There was an issue with the format or content of your request: the body is not a JSON object.")
    for key in body:
        if key not in _FIELDS:
            raise ApiError(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise ApiError("model: Field required")
    tokens = body.get("max_tokens")
    if "max_tokens" not in body:
        raise ApiError("max_tokens: Field required")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise ApiError("max_tokens: Input should be a valid integer greater than or equal to 1")
    if body.get("stream"):
        raise ApiError("stream: not supported by this test server")
    temperature = body.get("temperature")
    if temperature is not None and (not isinstance(temperature, (int, float)) or isinstance(temperature, bool)
                                    or not 0 <= temperature <= 1):
        raise ApiError("temperature: Input should be less than or equal to 1")
    _check_system(body.get("system"))
    names = _check_tools(body.get("tools"))
    _check_tool_choice(body, names)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ApiError("messages: Field required")
    if not messages:
        raise ApiError("messages: at least one message is required")
    _check_messages(messages, tools="tools" in body)


def _check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list) or not all(isinstance(b, dict) and b.get("type") == "text"
                                               and isinstance(b.get("text"), str) for b in system):
        raise ApiError("system: Input should be a valid string or a list of text blocks")


def _check_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise ApiError("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"tools.{i}.custom"
        if not isinstance(tool, dict):
            raise ApiError(f"tools.{i}: Input should be a valid dictionary")
        for key in tool:
            if key not in ("name", "description", "input_schema", "type", "cache_control"):
                raise ApiError(f"{where}.{key}: Extra inputs are not permitted")
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise ApiError(f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        if name in names:
            raise ApiError("tools: Tool names must be unique.")
        names.add(name)
        if "description" in tool and not isinstance(tool["description"], str):
            raise ApiError(f"{where}.description: Input should be a valid string")
        if "input_schema" not in tool:
            raise ApiError(f"{where}.input_schema: Field required")
        problem = input_schema_problem(tool["input_schema"])
        if problem is not None:
            raise ApiError(f"{where}.input_schema{problem}")
    return names


def input_schema_problem(schema: Any) -> str | None:
    """Why the API refuses `schema` as a tool's `input_schema` (the message after `…input_schema`), or None."""
    if not isinstance(schema, dict):
        return ": Input should be a valid dictionary"
    if schema.get("type") != "object":
        return ".type: Input should be 'object'"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return (": JSON schema is invalid. It must match JSON Schema draft 2020-12 "
                "(https://json-schema.org/draft/2020-12).")
    properties = schema.get("properties") or {}
    if not all(_PROPERTY.fullmatch(name) for name in properties):
        return ".properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'"
    return None


def _check_tool_choice(body: dict, names: set[str]) -> None:
    if "tool_choice" not in body:
        return
    if "tools" not in body:
        raise ApiError("tool_choice: tool_choice may only be specified while providing tools.")
    choice = body["tool_choice"]
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("auto", "any", "none"):
        return
    if kind == "tool":
        if choice.get("name") in names:
            return
        raise ApiError(f"tool_choice: Tool '{choice.get('name')}' not found in tools.")
    raise ApiError("tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'")


def _check_messages(messages: list, tools: bool) -> None:
    previous_role = None
    asked: list[str] = []        # tool_use ids of the previous assistant message
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ApiError(f"messages.{i}: Input should be a valid dictionary")
        for key in message:
            if key not in ("role", "content"):
                raise ApiError(f"messages.{i}.{key}: Extra inputs are not permitted")
        role = message.get("role")
        if role == "system":
            raise ApiError('messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                           'parameter, not "system" as an input message role.')
        if role not in ("user", "assistant"):
            raise ApiError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i == 0 and role != "user":
            raise ApiError('messages: first message must use the "user" role')
        if role == previous_role:
            raise ApiError(f'messages: roles must alternate between "user" and "assistant", but found multiple '
                           f'"{role}" roles in a row')
        blocks = _blocks(message.get("content"), i, role == "assistant" and i == len(messages) - 1)
        if role == "user":
            results = []
            for j, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    raise ApiError(f"messages.{i}.content.{j}: `tool_use` blocks can only be in `assistant` messages")
                if block["type"] == "tool_result":
                    if block["tool_use_id"] not in asked:
                        raise ApiError(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                                       f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a "
                                       "corresponding `tool_use` block in the previous message.")
                    results.append(block["tool_use_id"])
            leading = next((j for j, b in enumerate(blocks) if b["type"] != "tool_result"), len(blocks))
            missing = [call_id for call_id in asked if call_id not in results]
            if missing:
                raise ApiError(f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                               f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                               "corresponding `tool_result` block in the next message.")
            if asked and leading < len(results):
                raise ApiError(f"messages.{i}: Did not find {len(asked)} tool_result block(s) at the beginning of "
                               "this message. Messages following tool_use blocks must begin with a matching number "
                               "of tool_result blocks.")
            if len(set(results)) != len(results):
                raise ApiError(f"messages.{i}: each `tool_use_id` may be answered only once")
            asked = []
        else:
            asked = []
            for j, block in enumerate(blocks):
                if block["type"] == "tool_result":
                    raise ApiError(f"messages.{i}.content.{j}: `tool_result` blocks can only be in `user` messages")
                if block["type"] == "tool_use":
                    if block["id"] in seen_ids:
                        raise ApiError(f"messages.{i}.content.{j}: `tool_use` ids must be unique: {block['id']}")
                    seen_ids.add(block["id"])
                    asked.append(block["id"])
        if not tools and any(b["type"] in ("tool_use", "tool_result") for b in blocks):
            raise ApiError("Requests which include `tool_use` or `tool_result` blocks must define tools.")
        previous_role = role
    if asked:
        raise ApiError(f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
                       f"immediately after: {', '.join(asked)}. Each `tool_use` block must have a corresponding "
                       "`tool_result` block in the next message.")


def _blocks(content: Any, i: int, final_assistant: bool) -> list[dict]:
    """The content blocks of message i, checked; a string is one text block."""
    if isinstance(content, str):
        if not content and not final_assistant:
            raise ApiError("messages: text content blocks must be non-empty")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ApiError(f"messages.{i}.content: Input should be a valid string or a list of content blocks")
    if not content and not final_assistant:
        raise ApiError(f"messages.{i}: all messages must have non-empty content except for the optional final "
                       "assistant message")
    for j, block in enumerate(content):
        where = f"messages.{i}.content.{j}"
        kind = block.get("type") if isinstance(block, dict) else None
        allowed = {"text": {"type", "text", "cache_control"},
                   "tool_use": {"type", "id", "name", "input", "cache_control"},
                   "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"}}.get(kind)
        if allowed is None:
            raise ApiError(f"{where}: Input tag '{kind}' found using 'type' does not match any of the expected tags")
        for key in block:
            if key not in allowed:
                raise ApiError(f"{where}.{kind}.{key}: Extra inputs are not permitted")
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise ApiError(f"{where}.text.text: Field required")
            if not block["text"]:
                raise ApiError("messages: text content blocks must be non-empty")
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not _ID.fullmatch(block["id"]):
                raise ApiError(f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
            if not isinstance(block.get("name"), str) or not block["name"]:
                raise ApiError(f"{where}.tool_use.name: Field required")
            if not isinstance(block.get("input"), dict):
                raise ApiError(f"{where}.tool_use.input: Input should be a valid dictionary")
        else:
            if not isinstance(block.get("tool_use_id"), str):
                raise ApiError(f"{where}.tool_result.tool_use_id: Field required")
            result = block.get("content", "")
            if not (isinstance(result, str) or isinstance(result, list) and all(
                    isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"]
                    for b in result)):
                raise ApiError(f"{where}.tool_result.content: Input should be a valid string or a list of text blocks")
            if "is_error" in block and not isinstance(block["is_error"], bool):
                raise ApiError(f"{where}.tool_result.is_error: Input should be a valid boolean")
    return content


def check_headers(headers: dict[str, str], key: str) -> ApiError | None:
    """The refusal of a request's headers (names lower-cased), or None."""
    sent = headers.get("x-api-key")
    if not sent:
        return ApiError("x-api-key header is required", 401, "authentication_error")
    if sent != key:
        return ApiError("invalid x-api-key", 401, "authentication_error")
    version = headers.get("anthropic-version")
    if not version:
        return ApiError("anthropic-version: header is required")
    if version != VERSION:
        return ApiError(f"anthropic-version: invalid version '{version}'")
    if not (headers.get("content-type") or "").startswith("application/json"):
        return ApiError("content-type: the body must be application/json")
    return None


def tool_results(request: dict) -> list[dict]:
    """The `tool_result` blocks of the last user message of a request: what the tools answered to the calls
    the model asked for last."""
    content = request["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
        if isinstance(content, list) else []


# ---------------------------------------------------------------- the server

class MessagesServer:
    """The server: `with MessagesServer(script) as srv:`; `srv.url` is the base URL (POST `srv.url +
    "/messages"`); `srv.requests`, `srv.headers` and `srv.errors` record what happened."""

    def __init__(self, script: list | tuple = (), key: str = KEY) -> None:
        self.key = key
        self._script: list = list(script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[dict] = []
        self.arrivals: list[float] = []   # time.monotonic() of each request's arrival, in order
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread: threading.Thread | None = None

    def push(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def __enter__(self) -> MessagesServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="messages-server",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def answer(self, raw: bytes, headers: dict[str, str]) -> tuple[int, dict, dict]:
        """The status, JSON body and extra headers answering one request."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.arrivals.append(time.monotonic())
            index = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            error = check_headers(headers, self.key) or request_problem(body)
            if error is not None:
                self.errors.append({"request": index, "status": error.status, "error": error.body["error"]})
                return error.status, error.body, {}
            if not self._script:
                failure = error_body("api_error", "the script has no turn left")
                self.errors.append({"request": index, "status": 500, "error": failure["error"]})
                return 500, failure, {}
            turn = self._script.pop(0)
        try:
            return self._message(body, turn)
        except Exception as exc:  # a scripted callable failed: the test should see why
            failure = error_body("api_error", f"scripted turn failed: {exc!r}")
            with self._lock:
                self.errors.append({"request": index, "status": 500, "error": failure["error"]})
            return 500, failure, {}

    def _message(self, body: dict, turn: Turn) -> tuple[int, dict, dict]:
        while callable(turn) and not isinstance(turn, (ToolCall, HttpError)):
            turn = turn(body)
        if isinstance(turn, HttpError):
            payload = turn.body if isinstance(turn.body, dict) else error_body("api_error", turn.body)
            return turn.status, payload, turn.headers
        if isinstance(turn, str):
            content: list[dict] = [{"type": "text", "text": turn}] if turn else []
            stop = "end_turn"
        else:
            items = [turn] if isinstance(turn, ToolCall) else list(turn)
            content = [{"type": "text", "text": items.pop(0)}] if items and isinstance(items[0], str) else []
            content += [{"type": "tool_use", "id": f"toolu_{next(self._ids):06d}", "name": c.name, "input": c.input}
                        for c in items]
            stop = "tool_use"
        usage = {"input_tokens": len(json.dumps(body.get("messages"))) // 4 + 1,
                 "output_tokens": len(json.dumps(content)) // 4 + 1}
        return 200, {"id": f"msg_{next(self._ids):06d}", "type": "message", "role": "assistant",
                     "model": body.get("model"), "content": content, "stop_reason": stop, "stop_sequence": None,
                     "usage": usage}, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") != "/v1/messages":
                    self._send(404, error_body("not_found_error", f"Not Found: POST {self.path}"), {})
                    return
                self._send(*server.answer(raw, {k.lower(): v for k, v in self.headers.items()}))

            def _send(self, status: int, body: dict, headers: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
