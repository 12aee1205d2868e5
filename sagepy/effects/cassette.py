"""Recorded runs (SPEC §22.2): a cassette is the model turns and tool calls of one run, written as it runs
(`sage run --record FILE`) and read back to answer them without the model or the servers (`--replay FILE`).

A cassette is JSON Lines. The first line says what wrote it (`{"kind": "cassette", "target": "sagepy",
"key": null, "outcome": {"format": 1, "sagepy": "<version>"}}`), the last that the recording ended
(`{"kind": "end", …, "outcome": {"records": n}}`); between them one record per step:
`{"kind", "target", "key", "outcome", "request"}`, with `"failed": true` when the outcome is an error (its
kind and message, as the journal records it, outcomes.py). `key` is the SHA-256 of the canonical JSON of the
step's kind, target and request — for a model turn the provider, model, messages, tools and options, else
the step's arguments —, and `request` that same JSON, which a replay miss shows as a diff. A cassette that
misses its first or last line, or has a line cut short, or was written by another sagepy, is refused rather
than replayed. Model turns, built-in and MCP tool calls and the dynamic `mcp_*` builtins are recorded; the
clock, the environment, stdin and files are not (nor replayed), and no header is part of a step, so no key
reaches a cassette.

A replayed run connects to no server: `ReplayedFacts` answers the boundary's questions that would need one
(sagepy.effects.facts).
"""
from __future__ import annotations

import collections
import difflib
import hashlib
import json
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

from ..core import types as T
from ..core.errors import AgentCancelled, SageRaise
from ..version import __version__
from .chain import Perform
from .facts import Facts
from .outcomes import decode_error, encode_error
from .step import LLM, MCP, TOOL, Step

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from .world import World

FORMAT = 1
RECORDED = (LLM, TOOL, MCP)
MISS_CODE = "E213"


class CassetteRefused(Exception):
    """A cassette that cannot be replayed; the message says why and names the file."""


class ReplayMiss(AgentCancelled):
    """A step the cassette has no outcome for: the run stops (SPEC §22.2); `Cassette.missed` says why."""


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""One encoder for every key (it keeps no state between calls): json.dumps would build one per call."""


def canonical(data: Any) -> str:
    return _CANONICAL.encode(data)


HEADER = canonical({"kind": "cassette", "target": "sagepy", "key": None,
                    "outcome": {"format": FORMAT, "sagepy": __version__}})
"""A cassette's first line."""


def _end_line(records: int) -> str:
    """A cassette's last line after `records` records: the canonical JSON of its record, spelled out."""
    return '{"key":null,"kind":"end","outcome":{"records":' + str(records) + '},"target":"cassette"}'


def step_key(kind: str, target: str, request: Any) -> str:
    text = canonical({"kind": kind, "target": target, "arguments": request})
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def step_request(step: Step, llm: Any) -> Any:
    """What identifies a step's request: for a model turn the provider, model, messages, offered tools and
    options (`llm`, the run's LlmConfig); for any other step its arguments."""
    if step.kind != LLM:
        return step.arguments
    if step.target == "sampling":
        a = step.arguments
        return {"provider": llm.provider, "model": llm.model, "messages": a["messages"], "tools": [],
                "options": {"server": a["server"], "system": a["system"], "max_tokens": a["max_tokens"]}}
    turn = step.turn
    overrides = dict((turn.overrides if turn is not None else step.overrides) or {})
    model = overrides.pop("model", None) or llm.model
    options = {name: value for name, value in overrides.items() if value is not None}
    if turn is not None:
        messages, tools = step.arguments["messages"], step.arguments["tools"]
        target = turn.target
    else:
        from ..llm.client import opening_messages
        messages, tools, target = opening_messages(step.arguments[0], step.ret), [], step.ret
    if target != T.STRING:
        options["type"] = T.type_name(target)
    return {"provider": llm.provider, "model": model, "messages": messages, "tools": tools, "options": options}


class Cassette:
    """One cassette being recorded (`mode` "record") or replayed ("replay")."""

    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.mode = mode
        self.lock = threading.Lock()
        self.missed: str | None = None     # the E213 report of the first replay miss
        self.count = 0
        self._file: Any = None
        self._unused: dict[str, collections.deque] = {}
        self._requests: list[tuple[str, str, Any]] = []   # (kind, target, request) of every record, for diffs

    # ---------------------------------------------------------------- recording
    @classmethod
    def record(cls, path: str, made: bool = False) -> "Cassette":
        """A new cassette at `path` (its directory made, unless `made` says it exists); raises OSError when it
        cannot be written."""
        cassette = cls(path, "record")
        folder = os.path.dirname(path)
        if folder and not made:
            os.makedirs(folder, exist_ok=True)
        cassette._file = open(path, "w", encoding="utf-8")
        cassette._file.write(HEADER + "\n")
        return cassette

    def _write(self, line: dict) -> None:
        self._file.write(canonical(line) + "\n")
        self._file.flush()

    def add(self, step: Step, key: str, request: Any, outcome: Any, failed: bool, usage: dict | None = None) -> None:
        line = {"kind": step.kind, "target": step.target, "key": key, "outcome": outcome, "request": request}
        if failed:
            line["failed"] = True
        if usage is not None:   # what the provider counted for a model turn: a replay counts it again
            line["usage"] = usage
        with self.lock:
            if self._file is not None:
                self._write(line)
                self.count += 1

    def close(self) -> None:
        with self.lock:
            if self._file is None:
                return
            if self.mode == "record":
                self._file.write(_end_line(self.count) + "\n")
            self._file.close()
            self._file = None

    # ---------------------------------------------------------------- replaying
    @classmethod
    def replay(cls, path: str) -> "Cassette":
        """The cassette at `path`, checked whole before any step is answered; raises CassetteRefused."""
        cassette = cls(path, "replay")
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8")
        except FileNotFoundError:
            raise CassetteRefused(f"error: cassette {path} not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CassetteRefused(f"error: cannot read cassette {path}: {exc}") from None
        lines = text.split("\n")
        if lines[-1] != "":
            raise CassetteRefused(f"error: cassette {path} is truncated: line {len(lines)} is incomplete")
        del lines[-1]
        if len(lines) >= 2 and lines[0] == HEADER and lines[-1] == _end_line(len(lines) - 2):
            # the first and last lines this sagepy writes: only the records between them need parsing
            body = [cassette._parse(line, number) for number, line in enumerate(lines[1:-1], 2)]
        else:
            body = cassette._checked(lines)
        for record in body:
            cassette._unused.setdefault(record["key"], collections.deque()).append(record)
            cassette._requests.append((record["kind"], record["target"], record.get("request")))
        return cassette

    def _checked(self, lines: list[str]) -> list[dict]:
        """The records of a cassette's lines, once its first and last lines are checked."""
        path = self.path
        records = [self._parse(line, number) for number, line in enumerate(lines, 1)]
        if not records or records[0].get("kind") != "cassette":
            raise CassetteRefused(f"error: {path} is not a sagepy cassette (its first line does not say so)")
        header = records[0].get("outcome") or {}
        if header.get("format") != FORMAT or header.get("sagepy") != __version__:
            raise CassetteRefused(f"error: cassette {path} was written by sagepy {header.get('sagepy')} (format "
                                  f"{header.get('format')}); this is sagepy {__version__} (format {FORMAT}): "
                                  "record it again")
        end = records[-1] if len(records) > 1 else {}
        body = records[1:-1]
        if end.get("kind") != "end" or (end.get("outcome") or {}).get("records") != len(body):
            raise CassetteRefused(f"error: cassette {path} is truncated: the recording did not finish")
        return body

    def facts(self, inner: Facts) -> Facts:
        """What a run with this cassette answers besides steps: a replay's, else those of the world."""
        return ReplayedFacts(inner) if self.mode == "replay" else inner

    def _parse(self, line: str, number: int) -> dict:
        try:
            record = json.loads(line)
        except ValueError:
            raise CassetteRefused(f"error: cassette {self.path} is damaged: line {number} is not JSON") from None
        if not isinstance(record, dict) or not {"kind", "target", "key", "outcome"} <= record.keys():
            raise CassetteRefused(f"error: cassette {self.path} is damaged: line {number} is not a record")
        return record

    def take(self, key: str) -> dict | None:
        """The first unused record of `key`, used up."""
        with self.lock:
            queue = self._unused.get(key)
            return queue.popleft() if queue else None

    def miss_report(self, kind: str, target: str, request: Any) -> str:
        """E213 and the closest recorded request of the same kind and target, as a unified diff."""
        head = f"error[{MISS_CODE}]: replay miss: {kind} {target}: no recorded outcome for this request"
        now = _pretty(request)
        candidates = [_pretty(r) for k, t, r in self._requests if k == kind and t == target]
        if not candidates:
            return head + f"\n  (the cassette {self.path} holds no {kind} {target} step)"
        closest = max(candidates, key=lambda old: difflib.SequenceMatcher(None, old, now, autojunk=False).ratio())
        diff = difflib.unified_diff(closest.splitlines(), now.splitlines(), "recorded", "this run", lineterm="")
        return head + "\n" + "\n".join(diff)


def _pretty(request: Any) -> str:
    return json.dumps(request, sort_keys=True, indent=2, ensure_ascii=False)


class CassetteLayer:
    """Below the mocks (a mock still answers first), above everything else: records the outcome of each
    model turn and tool call that comes back up, or answers it from the cassette."""

    def __init__(self, cassette: Cassette, llm: Any, world: World, stop_all: Callable[[], None]) -> None:
        """`llm`: the run's LlmConfig; `world`: the run's, whose model usage a replayed turn counts again;
        `stop_all`: stops every agent of the run (a replay miss)."""
        self.cassette = cassette
        self.llm = llm
        self.world = world
        self.stop_all = stop_all

    def perform(self, step: Step, next: Perform) -> Any:
        if step.kind not in RECORDED:
            return next(step)
        request = step_request(step, self.llm)
        key = step_key(step.kind, step.target, request)
        if self.cassette.mode == "replay":
            return self._replay(step, key, request)
        usage = self.world.usage if step.kind == LLM else None
        if usage is not None:
            usage.take_last_turn()   # a turn this thread made before, not this step's
        try:
            outcome = next(step)
        except SageRaise as exc:
            self.cassette.add(step, key, request, encode_error(exc.error), True)
            raise
        self.cassette.add(step, key, request, outcome, False, usage.take_last_turn() if usage is not None else None)
        return outcome

    def _replay(self, step: Step, key: str, request: Any) -> Any:
        record = self.cassette.take(key)
        if record is None:
            self._miss(step, request)
        if isinstance(record.get("usage"), dict):
            self.world.usage.replayed(record["usage"])
        if record.get("failed"):
            raise decode_error(step, record["outcome"])
        return record["outcome"]

    def _miss(self, step: Step, request: Any) -> None:
        cassette = self.cassette
        with cassette.lock:
            first = cassette.missed is None
            if first:
                cassette.missed = cassette.miss_report(step.kind, step.target, request)
        if first:
            self.stop_all()
        raise ReplayMiss()


class ReplayedFacts(Facts):
    """A replayed run connects to no server, not even for a remote tool's safety class: such a call counts as
    destructive (the model's calls of one answer then run one after another), and no server starts early."""

    def tool_safety(self, ref: ToolRef) -> str:
        return "destructive"

    def dynamic_safety(self, handle: str, tool: str) -> str:
        return "destructive"

    def prestart(self, tools: set[str]) -> None:
        """Nothing to start: the cassette answers every call."""
