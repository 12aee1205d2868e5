"""Elicitation: what a server asks during a call, the answers, and the terminal form (SPEC §8.7).

The manager hands every request to one synchronous resolver `resolver(server_name, request) -> answer`
supplied by the runtime: under `sage run` a `TerminalElicitation`, under `sage test` the `mock elicit`
queue. The request carries the server's effective mode setting (`prompt`/`decline`/`defaults`/`auto`) so that the
terminal resolver can honour it while a test resolver answers from mocks whatever the setting says.
A resolver may raise `ElicitationRefused` to answer the server with an error (a `fail("m")` mock).

The terminal form shows the message and every field with its limits before asking to accept, and checks
each answer against its property schema with jsonschema, formats included, asking again with the reason:
a server that validates the answer itself would otherwise reject the whole call, long after the typo.
"""
from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable, TextIO

from ..progress import paused
from ..terminal import wait_for_line


class ElicitationRequest:
    """One request: `mode` is "form" (a message plus a flat JSON schema) or "url" (a URL to visit)."""

    __slots__ = ("server", "mode", "message", "schema", "url", "setting")

    def __init__(self, server: str, mode: str, message: str, schema: dict | None, url: str | None,
                 setting: str) -> None:
        self.server = server
        self.mode = mode
        self.message = message
        self.schema = schema
        self.url = url
        self.setting = setting

    def __repr__(self) -> str:
        return f"ElicitationRequest({self.server!r}, {self.mode!r}, {self.message!r})"


class ElicitationAnswer:
    """`accept` (with the content, a dict of property values), `decline` or `cancel`."""

    __slots__ = ("action", "content")

    def __init__(self, action: str, content: dict | None = None) -> None:
        if action not in ("accept", "decline", "cancel"):
            raise ValueError(f"unknown elicitation action {action!r}")
        self.action = action
        self.content = content if action == "accept" else None

    def __repr__(self) -> str:
        return f"ElicitationAnswer({self.action!r}, {self.content!r})"


DECLINE = ElicitationAnswer("decline")
CANCEL = ElicitationAnswer("cancel")


class ElicitationRefused(Exception):
    """Raised by a resolver to answer the server with an error carrying this message."""


def answer_from(value: Any) -> ElicitationAnswer:
    """An answer from what a resolver returned: an ElicitationAnswer, `"decline"`/`"cancel"`, or content to
    accept with (a dict, a Sage record or map, or a string holding a JSON object), as `mock elicit` allows
    (§9.3). Raises ValueError for anything else."""
    if isinstance(value, ElicitationAnswer):
        return value
    if value in ("decline", "cancel"):
        return ElicitationAnswer(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"elicitation answer {value!r} is neither decline, cancel nor a JSON object") from None
    else:
        from ..core.convert import to_json
        value = to_json(value)
    if not isinstance(value, dict):
        raise ValueError("an accepted elicitation answer must be an object of property values")
    return ElicitationAnswer("accept", value)


def defaults_answer(request: ElicitationRequest) -> ElicitationAnswer:
    """`elicitation = "defaults"` (SEP-1034), for runs with nobody to ask: accept a form whose required
    properties all have a `default`, with exactly the properties that have one; decline anything else."""
    if request.mode != "form":
        return DECLINE
    schema = request.schema if isinstance(request.schema, dict) else {}
    properties = {name: prop for name, prop in (schema.get("properties") or {}).items() if isinstance(prop, dict)}
    if any("default" not in properties.get(name, {}) for name in schema.get("required") or []):
        return DECLINE
    return ElicitationAnswer("accept", {name: prop["default"] for name, prop in properties.items()
                                        if "default" in prop})


# ---------------------------------------------------------------- the terminal form

FORM_LOCK = threading.Lock()  # one form or approval prompt at a time across all agents (§8.7, §17.3)
_form_open = threading.Event()      # a form is waiting for the user's input
_form_interrupted = threading.Event()


def interrupt_open_form() -> bool:
    """Ctrl-C while a form is open answers *cancel* (§8.7) instead of stopping the program: called from the
    SIGINT handler; True when a form was open and takes the interrupt."""
    if not _form_open.is_set():
        return False
    _form_interrupted.set()
    return True


class _Cancelled(Exception):
    pass


class TerminalElicitation:
    """Asks the user on the terminal; declines when the setting (or `auto` without a terminal) says so.

    Runs on a worker thread of the event loop, never on the loop itself. The streams can be replaced
    (tests drive the form through them).
    """

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None,
                 interactive: bool | None = None) -> None:
        self.stdin = stdin
        self.stderr = stderr
        self.interactive = interactive

    def __call__(self, server: str, request: ElicitationRequest) -> ElicitationAnswer:
        if request.setting == "defaults":
            return defaults_answer(request)
        if not self._should_prompt(request.setting):
            return DECLINE
        with FORM_LOCK, paused():   # no status line drawn over the questions (sagepy.progress)
            _form_interrupted.clear()
            _form_open.set()
            try:
                if request.mode == "url":
                    return self._url(request)
                return self._form(request)
            except (_Cancelled, KeyboardInterrupt, EOFError):
                self._say("\n")
                return CANCEL
            finally:
                _form_open.clear()

    def _in(self) -> TextIO:
        return self.stdin if self.stdin is not None else sys.stdin

    def _err(self) -> TextIO:
        return self.stderr if self.stderr is not None else sys.stderr

    def _should_prompt(self, setting: str) -> bool:
        if setting == "decline":
            return False
        if setting == "prompt":
            return True
        if self.interactive is not None:
            return self.interactive
        return _isatty(self._in()) and _isatty(self._err())

    def _say(self, text: str) -> None:
        err = self._err()
        err.write(text)
        err.flush()

    def _ask(self, prompt: str) -> str:
        self._say(prompt)
        stream = self._in()
        # Ctrl-C (`interrupt_open_form`) cancels the form while it waits
        if not wait_for_line(stream, _form_interrupted.is_set):
            raise _Cancelled()
        line = stream.readline()
        if line == "":
            raise _Cancelled()
        return line.rstrip("\r\n")

    def _url(self, request: ElicitationRequest) -> ElicitationAnswer:
        self._say(f"MCP server '{request.server}' asks you to open a URL: {request.message}\n  {request.url}\n")
        while True:
            answer = self._ask("Did you complete it? [y/n] ").strip().lower()
            if answer in ("y", "yes"):
                return ElicitationAnswer("accept", {})
            if answer in ("n", "no"):
                return DECLINE

    def _form(self, request: ElicitationRequest) -> ElicitationAnswer:
        schema = request.schema or {}
        properties = {name: prop if isinstance(prop, dict) else {}
                      for name, prop in (schema.get("properties") or {}).items()}
        required = set(schema.get("required") or [])
        # The whole form first, limits included, so that the user can decide before accepting.
        lines = [f"MCP server '{request.server}' asks: {request.message}"]
        lines += [f"  {field_summary(name, prop, name in required)}" for name, prop in properties.items()]
        self._say("\n".join(lines) + "\n")
        while True:
            choice = self._ask("accept / decline / cancel? [a/d/c] ").strip().lower()
            if choice in ("d", "decline"):
                return DECLINE
            if choice in ("c", "cancel"):
                return CANCEL
            if choice in ("a", "accept"):
                break
        content: dict[str, Any] = {}
        for name, prop in properties.items():
            value = self._property(name, prop, name in required)
            if value is not _SKIP:
                content[name] = value
        return ElicitationAnswer("accept", content)

    def _property(self, name: str, prop: dict, required: bool) -> Any:
        title = prop.get("title") or name
        choices = _choices(prop)
        lines = [f"{title}{' (required)' if required else ''}"]
        if prop.get("description"):
            lines.append(f"  {prop['description']}")
        if choices is not None:
            lines.append("  one of: " + ", ".join(f"{i + 1}) {label}" for i, (_, label) in enumerate(choices)))
        limits = _limits(prop)
        if limits:
            lines.append("  " + ", ".join(limits))
        if "default" in prop:
            lines.append(f"  default: {json.dumps(prop['default'], ensure_ascii=False)}")
        self._say("\n".join(lines) + "\n")
        while True:
            text = self._ask(f"{name}: ").strip()
            if text == "":
                if "default" in prop:
                    return prop["default"]
                if not required:
                    return _SKIP
                self._say("  a value is required\n")
                continue
            try:
                value = _parse_value(text, prop, choices)
                refusal = schema_refusal(value, prop)
            except ValueError as exc:
                refusal = str(exc)
            if refusal is None:
                return value
            self._say(f"  {refusal}; try again\n")


def field_summary(name: str, prop: dict, required: bool) -> str:
    """One line of the form's overview: `guests (required): integer, at most 4, default 2`."""
    parts = [prop["type"]] if isinstance(prop.get("type"), str) else []
    choices = _choices(prop)
    if choices is not None:
        parts = ["one of " + ", ".join(label for _, label in choices)]
    parts += _limits(prop)
    if "default" in prop:
        parts.append(f"default {json.dumps(prop['default'], ensure_ascii=False)}")
    title = prop.get("title")
    label = f"{name} ({title})" if title and title.lower() != name.lower().replace("_", " ") else name
    summary = f"{label}{' (required)' if required else ''}: {', '.join(parts) or 'any value'}"
    return f"{summary} - {prop['description']}" if prop.get("description") else summary


def _limits(prop: dict) -> list[str]:
    """The constraints of a property, in words: ranges, lengths, pattern and format."""
    limits = []
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None:
        limits.append(f"at least {low}")
    if prop.get("exclusiveMinimum") is not None:
        limits.append(f"more than {prop['exclusiveMinimum']}")
    if high is not None:
        limits.append(f"at most {high}")
    if prop.get("exclusiveMaximum") is not None:
        limits.append(f"less than {prop['exclusiveMaximum']}")
    if prop.get("minLength") is not None:
        limits.append(f"at least {prop['minLength']} characters")
    if prop.get("maxLength") is not None:
        limits.append(f"at most {prop['maxLength']} characters")
    if prop.get("minItems") is not None:
        limits.append(f"at least {prop['minItems']} items")
    if prop.get("maxItems") is not None:
        limits.append(f"at most {prop['maxItems']} items")
    if prop.get("pattern"):
        limits.append(f"matching {prop['pattern']}")
    if prop.get("format"):
        limits.append(f"format {prop['format']}")
    return limits


def schema_refusal(value: Any, prop: dict) -> str | None:
    """Why `value` does not satisfy its property schema (formats checked too: `format: email` refuses
    `not-an-email`), or None when it does. jsonschema is imported when a form is first answered."""
    import jsonschema

    validator_class = jsonschema.validators.validator_for(prop, default=jsonschema.Draft202012Validator)
    try:
        validator_class.check_schema(prop)
        validator = validator_class(prop, format_checker=validator_class.FORMAT_CHECKER)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except jsonschema.exceptions.SchemaError:
        return None   # the server's schema is broken: the server itself will judge the answer
    if error is None:
        return None
    return _REASONS.get(error.validator, lambda e: e.message)(error)


# Readable reasons for the usual keywords; jsonschema's own message for the rest.
_REASONS: dict[str, Callable[[Any], str]] = {
    "format": lambda e: f"not a valid {e.validator_value}",
    "minimum": lambda e: f"must be at least {e.validator_value}",
    "maximum": lambda e: f"must be at most {e.validator_value}",
    "exclusiveMinimum": lambda e: f"must be more than {e.validator_value}",
    "exclusiveMaximum": lambda e: f"must be less than {e.validator_value}",
    "minLength": lambda e: f"must be at least {e.validator_value} characters long",
    "maxLength": lambda e: f"must be at most {e.validator_value} characters long",
    "pattern": lambda e: f"must match {e.validator_value}",
    "minItems": lambda e: f"needs at least {e.validator_value} items",
    "maxItems": lambda e: f"takes at most {e.validator_value} items",
}


_SKIP = object()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _choices(prop: dict) -> list[tuple[Any, str]] | None:
    """(value, label) pairs of an enum property: `enum` (+ `enumNames`) or `oneOf` of `const`/`title`."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        values = prop["enum"]
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        return [(v, str(label)) for v, label in zip(values, labels)]
    options = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
        return [(o["const"], str(o.get("title", o["const"]))) for o in options]
    return None


def _parse_value(text: str, prop: dict, choices: list[tuple[Any, str]] | None) -> Any:
    kind = prop.get("type")
    if choices is not None:
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1][0]
        for value, label in choices:
            if text == str(value) or text == label:
                return value
        raise ValueError("choose one of the listed values")
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("enter a whole number") from None
    if kind == "number":
        try:
            return float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            raise ValueError("enter a number") from None
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return text
