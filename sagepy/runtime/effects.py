"""THE boundary between the interpreter and the world (DESIGN.md "The effects boundary").

Output, the clock, stdin, LLM calls, tool calls and trace events all go through one `Effects` object, so that
mocks (under `sage test`), journaling (durable runs) and tracing each live in one place.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from .. import types as T
from .errors import SageRaise
from .values import ErrorValue

_NO_MODEL = ("no model configured; set SAGE_API_KEY (and SAGE_LLM_URL for a non-OpenAI endpoint) or [llm] in "
             "grove.toml; use model \"echo\" to run offline")


class Effects:
    def __init__(self, runtime: Any, llm_config: dict | None = None, trace_path: str | None = None,
                 trace_stderr: bool = False) -> None:
        self.runtime = runtime
        self.llm_config = llm_config or {}
        self.trace_lock = threading.Lock()
        self.trace_stream = None
        if trace_path:
            self.trace_stream = open(trace_path, "a", encoding="utf-8")
        elif trace_stderr:
            self.trace_stream = sys.stderr
        self.stdin_lock = threading.Lock()

    # ---------------------------------------------------------------- output
    def write(self, ctx: Any, stream: str, text: str) -> None:
        runtime = ctx.runtime if ctx is not None else self.runtime
        if stream == "out":
            runtime.write_out(text)
        else:
            runtime.write_err(text)

    # ---------------------------------------------------------------- clock and stdin
    def now_ms(self, ctx: Any) -> int:
        return time.time_ns() // 1_000_000

    def read_line(self, ctx: Any) -> str:
        with self.stdin_lock:
            line = sys.stdin.readline()
        if line == "":
            raise SageRaise(ErrorValue("Agent", "end of input"))
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        return line

    def read_all(self, ctx: Any) -> str:
        with self.stdin_lock:
            data = sys.stdin.read()
        if data == "":
            raise SageRaise(ErrorValue("Agent", "end of input"))
        return data

    # ---------------------------------------------------------------- LLM
    def model(self) -> str:
        return os.environ.get("SAGE_MODEL") or self.llm_config.get("model") or "gpt-4o-mini"

    def divine(self, ctx: Any, prompt: str, target: T.Type, infer: bool) -> Any:
        typed = target != T.STRING
        self.trace(ctx, "llm.request", {"model": self.model(), "prompt_chars": len(prompt), "typed": typed})
        model = self.model()
        if model == "echo":
            if not typed:
                return "echo: " + prompt[:200]
            from ..convert import default_value
            return default_value(target)
        if os.environ.get("SAGE_API_KEY") == "mock":
            if typed:
                raise SageRaise(ErrorValue("Llm", "mock client cannot produce structured output"))
            return f"[Mock LLM response for: {prompt}]"
        configured = (os.environ.get("SAGE_LLM_URL") or os.environ.get(self.llm_config.get("api_key_env") or
                      "SAGE_API_KEY") or self.llm_config)
        if not configured:
            raise SageRaise(ErrorValue("Llm", _NO_MODEL))
        raise SageRaise(ErrorValue("Llm", "request failed: the HTTP LLM client is not available in this version"))

    # ---------------------------------------------------------------- tools
    def tool_call(self, ctx: Any, tool: str, fn: str, args: list) -> Any:
        raise SageRaise(ErrorValue("Tool", f"{tool}.{fn}: tool calls are not available in this version"))

    # ---------------------------------------------------------------- tracing
    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        stream = self.trace_stream
        if stream is None:
            return
        event = {"t": time.time_ns() // 1_000_000, "kind": kind,
                 "agent": getattr(ctx, "display_name", None)}
        event.update(data)
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        with self.trace_lock:
            stream.write(line + "\n")
            stream.flush()

    def close(self) -> None:
        if self.trace_stream is not None and self.trace_stream is not sys.stderr:
            self.trace_stream.close()
