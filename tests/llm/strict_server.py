"""A chat-completions server on 127.0.0.1 that checks requests the way the hosted APIs do, for the tests of
the model's tool loop (SPEC §4.12).

It answers `POST …/chat/completions` from a script and, before answering, rejects with HTTP 400 and
OpenAI's error body (`{"error": {"message", "type": "invalid_request_error", "param", "code"}}`) what a
hosted API rejects:

- a tool (or a `response_format` json_schema) sent with `"strict": true` whose schema is outside the strict
  subset (`strict_schema_problem`): an object without `"additionalProperties": false`, a property missing
  from `required`, an unsupported keyword (`format`, `pattern`, bounds, `default`, `oneOf`, `allOf`, …),
  a root that is not an object, past the size limits;
- a conversation where an assistant's `tool_calls` are not each answered by exactly one following
  `{"role": "tool", "tool_call_id"}` message before the next assistant or user message, a tool message
  that answers no pending call (a call naming a function that `tools` does not offer is accepted in the
  history, as the hosted APIs accept it: models do invent names, and the answer to such a call is a tool
  message with an error);
- malformed tools (names outside `[A-Za-z0-9_-]{1,64}`, twice the same name), a bad `tool_choice`.

The strict subset is OpenAI's structured-outputs one (root an object, not `anyOf`; every object closed
with `additionalProperties: false` and every property required; `anyOf`, `enum`, `const`, `$ref`/`$defs`;
at most 10 levels of object nesting, 5000 properties, 1000 enum values), plus the keywords that OpenAI
refuses for some models and that other providers refuse outright (`format`, `pattern`, length and range
bounds, `default`, `examples`): the most portable subset, which is what the dialectizer promises.

The script is a list of turns, consumed one per valid request:
- a `str`: the model answers with that text;
- a `ToolCall(name, arguments)`, or a list of them: the model asks for those calls; `arguments` is the
  JSON text as sent (so a test can send malformed JSON), or a dict/list that is encoded;
- `HttpError(status, body)`: the server answers that, as a failing API would;
- a callable `(request_json) -> turn`: the turn is computed from the request (say, from tool results).

    with StrictChatServer(["hello"]) as srv:
        ... POST srv.url + "/chat/completions" ...
        srv.requests  # every request body received, in order
        srv.errors    # every validation failure: {"request": n, "status", "error": {...}}
        srv.arrivals  # when each request arrived (time.monotonic()), for the rate limits' tests
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union


@dataclass(frozen=True)
class ToolCall:
    """One call the scripted model asks for."""

    name: str
    arguments: str | dict | list = "{}"

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class HttpError:
    """A scripted failure of the API itself: `status` with `body` (a dict is sent as JSON)."""

    status: int
    body: dict | str = ""


Turn = Union[str, ToolCall, list, tuple, HttpError, Callable[[dict], Any]]


class ApiError(Exception):
    """A request the hosted API would refuse: the 400 answer to send."""

    def __init__(self, message: str, param: str | None, code: str | None = None) -> None:
        super().__init__(message)
        self.body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


# ---------------------------------------------------------------- the strict schema subset

MAX_OBJECT_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000

_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
_ALLOWED = {
    "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties",
    "items", "anyOf", "$ref", "$defs", "definitions",
}


def strict_schema_problem(schema: Any) -> str | None:
    """Why a hosted API refuses `schema` in strict mode, in its words (`In context=(…), …`), or None."""
    checker = _StrictChecker(schema)
    try:
        if not isinstance(schema, dict):
            raise _Refused((), "schema must be a JSON Schema object")
        if schema.get("type") != "object":
            raise _Refused((), f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'.")
        checker.check(schema, (), 0)
        if checker.properties > MAX_PROPERTIES:
            raise _Refused((), f"too many object properties ({checker.properties} > {MAX_PROPERTIES}).")
        if checker.enum_values > MAX_ENUM_VALUES:
            raise _Refused((), f"too many enum values ({checker.enum_values} > {MAX_ENUM_VALUES}).")
    except _Refused as refused:
        return f"In context={refused.context!r}, {refused.reason}"
    return None


class _Refused(Exception):
    def __init__(self, context: tuple, reason: str) -> None:
        super().__init__(reason)
        self.context = context
        self.reason = reason


class _StrictChecker:
    def __init__(self, root: dict) -> None:
        self.root = root
        self.properties = 0
        self.enum_values = 0
        self.refs_seen: set[str] = set()

    def check(self, schema: Any, context: tuple, depth: int) -> None:
        if not isinstance(schema, dict):
            raise _Refused(context, "schema must be an object.")
        for key in schema:
            if key not in _ALLOWED:
                raise _Refused(context, f"'{key}' is not permitted.")
        for table in ("$defs", "definitions"):
            for name, sub in (schema.get(table) or {}).items():
                self.check(sub, (*context, table, name), depth)
        if "$ref" in schema:
            self._ref(schema, context, depth)
            return
        kinds = schema.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
        for kind in kinds:
            if kind not in _TYPES:
                raise _Refused(context, f"'{kind}' is not a valid type.")
        if not kinds and "anyOf" not in schema and "enum" not in schema and "const" not in schema:
            raise _Refused(context, "schema must have a 'type' key.")
        if "enum" in schema:
            if not isinstance(schema["enum"], list) or not schema["enum"]:
                raise _Refused(context, "'enum' must be a non-empty array.")
            self.enum_values += len(schema["enum"])
        if "object" in kinds:
            self._object(schema, context, depth + 1)
        elif "properties" in schema or "additionalProperties" in schema or "required" in schema:
            raise _Refused(context, "'properties', 'required' and 'additionalProperties' need 'type: \"object\"'.")
        if "array" in kinds:
            if "items" not in schema:
                raise _Refused(context, "'items' is required for arrays.")
            self.check(schema["items"], (*context, "items"), depth)
        elif "items" in schema:
            raise _Refused(context, "'items' needs 'type: \"array\"'.")
        if "anyOf" in schema:
            if context == () and self.root is schema:
                raise _Refused(context, "'anyOf' is not permitted at the root.")
            branches = schema["anyOf"]
            if not isinstance(branches, list) or not branches:
                raise _Refused(context, "'anyOf' must be a non-empty array.")
            for i, branch in enumerate(branches):
                self.check(branch, (*context, "anyOf", i), depth)

    def _object(self, schema: dict, context: tuple, depth: int) -> None:
        if depth > MAX_OBJECT_DEPTH:
            raise _Refused(context, f"objects may not nest more than {MAX_OBJECT_DEPTH} levels.")
        if schema.get("additionalProperties", True) is not False:
            raise _Refused(context, "'additionalProperties' is required to be supplied and to be false.")
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise _Refused(context, "'properties' must be an object.")
        required = schema.get("required")
        if not isinstance(required, list):
            missing = next(iter(properties), None)
            raise _Refused(context, "'required' is required to be supplied and to be an array including every "
                                    f"key in properties. Missing '{missing}'.")
        for name in properties:
            if name not in required:
                raise _Refused(context, "'required' is required to be supplied and to be an array including "
                                        f"every key in properties. Missing '{name}'.")
        for name in required:
            if name not in properties:
                raise _Refused(context, f"Extra required key '{name}' supplied.")
        for name, sub in properties.items():
            self.properties += 1
            self.check(sub, (*context, "properties", name), depth)

    def _ref(self, schema: dict, context: tuple, depth: int) -> None:
        ref = schema["$ref"]
        if len(schema) > 1:
            raise _Refused(context, "'$ref' may not have sibling keywords.")
        if ref == "#":
            return
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", ref) if isinstance(ref, str) else None
        target = (self.root.get(match.group(1)) or {}).get(match.group(2)) if match else None
        if not isinstance(target, dict):
            raise _Refused(context, f"reference to component '{ref}' which was not found in the schema.")


# ---------------------------------------------------------------- requests

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ROLES = {"system", "developer", "user", "assistant", "tool"}


def request_problem(body: Any) -> ApiError | None:
    """The 400 a hosted API answers to this chat-completions request body, or None when it is valid."""
    try:
        _check_request(body)
    except ApiError as error:
        return error
    return None


def _check_request(body: Any) -> None:
    if not isinstance(body, dict):
        raise ApiError("We could not parse the JSON body of your request.", None)
    if not isinstance(body.get("model"), str):
        raise ApiError("you must provide a model parameter", "model")
    if body.get("stream"):
        raise ApiError("stream is not supported by this test server", "stream")
    names = _check_tools(body.get("tools"))
    _check_tool_choice(body, names)
    _check_response_format(body.get("response_format"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("'messages' must be a non-empty array.", "messages")
    _check_messages(messages)


def _check_tools(tools: Any) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list) or not tools:
        raise ApiError("'tools' must be a non-empty array.", "tools", "empty_array")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise ApiError(f"Invalid value for 'tools[{i}]': expected a function tool.", f"tools[{i}]")
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise ApiError(f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string "
                           "that matches the pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters.",
                           f"tools[{i}].function.name", "invalid_value")
        if name in names:
            raise ApiError(f"Duplicate tool name '{name}' in 'tools'.", f"tools[{i}].function.name")
        names.add(name)
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise ApiError(f"Invalid type for 'tools[{i}].function.description'.", f"tools[{i}].function.description")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise ApiError(f"Invalid type for 'tools[{i}].function.parameters'.", f"tools[{i}].function.parameters")
        if function.get("strict") is True:
            problem = strict_schema_problem(parameters if parameters is not None else {
                "type": "object", "properties": {}, "required": [], "additionalProperties": False})
            if problem is not None:
                raise ApiError(f"Invalid schema for function '{name}': {problem}",
                               f"tools[{i}].function.parameters", "invalid_function_parameters")
        elif "strict" in function and not isinstance(function["strict"], bool):
            raise ApiError(f"Invalid type for 'tools[{i}].function.strict'.", f"tools[{i}].function.strict")
    return names


def _check_tool_choice(body: dict, names: set[str]) -> None:
    if "tool_choice" not in body:
        return
    choice = body["tool_choice"]
    if not names:
        raise ApiError("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
                       "tool_choice")
    if choice in ("none", "auto", "required"):
        return
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if name in names:
            return
        raise ApiError(f"Invalid value for 'tool_choice': no function named '{name}' was specified in the "
                       "'tools' parameter.", "tool_choice")
    raise ApiError("Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a named function.",
                   "tool_choice")


def _check_response_format(fmt: Any) -> None:
    if fmt is None:
        return
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in ("text", "json_object"):
        return
    if kind != "json_schema" or not isinstance(fmt.get("json_schema"), dict):
        raise ApiError("Invalid value for 'response_format'.", "response_format")
    spec = fmt["json_schema"]
    if not isinstance(spec.get("name"), str) or not _TOOL_NAME.fullmatch(spec["name"]):
        raise ApiError("Invalid 'response_format.json_schema.name'.", "response_format.json_schema.name")
    if spec.get("strict") is True:
        problem = strict_schema_problem(spec.get("schema"))
        if problem is not None:
            raise ApiError(f"Invalid schema for response_format '{spec['name']}': {problem}",
                           "response_format", "invalid_json_schema")


def _check_messages(messages: list) -> None:
    pending: dict[str, int] = {}  # tool_call_id -> index of the assistant message that asked
    asked_at = 0
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            raise ApiError(f"Invalid value for 'messages[{i}].role'.", f"messages.[{i}].role")
        if role != "tool" and pending:
            raise ApiError("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                           "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                           + ", ".join(pending), f"messages.[{asked_at}].role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise ApiError(f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                               f"messages.[{i}].tool_call_id", "missing_required_parameter")
            if call_id not in pending:
                if i == 0 or not any(m.get("role") == "assistant" and m.get("tool_calls") for m in messages[:i]):
                    raise ApiError("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                                   "message with 'tool_calls'.", f"messages.[{i}].role")
                raise ApiError(f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of "
                               "previous message.", f"messages.[{i}].tool_call_id")
            del pending[call_id]
            if not isinstance(message.get("content"), (str, list)):
                raise ApiError(f"Invalid type for 'messages[{i}].content'.", f"messages.[{i}].content")
        elif role == "assistant" and message.get("tool_calls"):
            asked_at = i
            pending = _calls_asked(message["tool_calls"], i)
        elif role in ("user", "system", "developer") and not isinstance(message.get("content"), (str, list)):
            raise ApiError(f"Invalid type for 'messages[{i}].content'.", f"messages.[{i}].content")
    if pending:
        raise ApiError("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                       "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                       + ", ".join(pending), f"messages.[{asked_at}].role")


def _calls_asked(calls: Any, i: int) -> dict[str, int]:
    if not isinstance(calls, list):
        raise ApiError(f"Invalid type for 'messages[{i}].tool_calls'.", f"messages.[{i}].tool_calls")
    pending: dict[str, int] = {}
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        where = f"messages.[{i}].tool_calls.[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or call.get("type") != "function" \
                or not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            raise ApiError(f"Invalid value for '{where}': expected {{id, type: 'function', function: {{name, "
                           "arguments}}}} with arguments a string.", where)
        if call["id"] in pending:
            raise ApiError(f"Duplicate tool_call_id '{call['id']}'.", f"{where}.id")
        pending[call["id"]] = j
    return pending


def tool_results(request: dict) -> list[dict]:
    """The tool messages that follow the last assistant message of a request: what the tools answered to
    the calls the model asked for last (for scripted turns that depend on them)."""
    messages = request.get("messages", [])
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return [m for m in messages[last + 1:] if m.get("role") == "tool"]


# ---------------------------------------------------------------- the server

class StrictChatServer:
    """The server: `with StrictChatServer(script) as srv:`; `srv.url` is the base URL (POST
    `srv.url + "/chat/completions"`); `srv.requests` and `srv.errors` record what happened; `push` adds
    turns to the script."""

    def __init__(self, script: list | tuple = ()) -> None:
        self._script: list = list(script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[dict] = []
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
        """How many scripted turns have not been used."""
        with self._lock:
            return len(self._script)

    def __enter__(self) -> StrictChatServer:
        # A short poll interval: `shutdown` waits for it, and every test stops a server.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="strict-chat-server",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def answer(self, raw: bytes) -> tuple[int, dict]:
        """The status and JSON body answering one request body (also what the HTTP handler sends)."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.arrivals.append(time.monotonic())
            index = len(self.requests)
            self.requests.append(body)
            error = request_problem(body)
            if error is not None:
                self.errors.append({"request": index, "status": 400, "error": error.body["error"]})
                return 400, error.body
            if not self._script:
                failure = {"message": "the script has no turn left", "type": "server_error", "param": None,
                           "code": "script_exhausted"}
                self.errors.append({"request": index, "status": 599, "error": failure})
                return 599, {"error": failure}
            turn = self._script.pop(0)
        try:
            return self._completion(body, turn)
        except Exception as exc:  # a scripted callable failed: the test should see why
            failure = {"message": f"scripted turn failed: {exc!r}", "type": "server_error", "param": None,
                       "code": "script_failed"}
            with self._lock:
                self.errors.append({"request": index, "status": 500, "error": failure})
            return 500, {"error": failure}

    def _completion(self, body: dict, turn: Turn) -> tuple[int, dict]:
        while callable(turn) and not isinstance(turn, (ToolCall, HttpError)):
            turn = turn(body)
        if isinstance(turn, HttpError):
            return turn.status, turn.body if isinstance(turn.body, dict) else {"error": {"message": turn.body}}
        message: dict[str, Any] = {"role": "assistant"}
        if isinstance(turn, str):
            message["content"] = turn
            finish = "stop"
        else:
            calls = [turn] if isinstance(turn, ToolCall) else list(turn)
            message["content"] = None
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids):06d}", "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments_text()}} for c in calls]
            finish = "tool_calls"
        prompt = len(json.dumps(body.get("messages"))) // 4 + 1
        completion = len(json.dumps(message)) // 4 + 1
        return 200, {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"Invalid URL (POST {self.path})", "type":
                                               "invalid_request_error", "param": None, "code": None}})
                    return
                self._send(*server.answer(raw))

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
