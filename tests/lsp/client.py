"""A synchronous face on pygls's own LanguageClient: `sage lsp` started as a subprocess, spoken to over its
real stdin/stdout. The client's event loop runs on a thread of its own, so tests call plain methods."""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as L
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path


class SageClient:
    def __init__(self, root: Path, env: dict | None = None) -> None:
        self.root = root
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("sage-tests", "1")
        self.diagnostics: dict[str, list[L.Diagnostic]] = {}
        self.published: list[tuple[float, str]] = []
        self.logs: list[str] = []
        self.changed = threading.Condition()
        self.versions: dict[str, int] = {}

        @self.client.feature(L.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: L.PublishDiagnosticsParams) -> None:
            with self.changed:
                self.diagnostics[params.uri] = params.diagnostics
                self.published.append((time.perf_counter(), params.uri))
                self.changed.notify_all()

        @self.client.feature(L.WINDOW_LOG_MESSAGE)
        def on_log(params: L.LogMessageParams) -> None:
            self.logs.append(params.message)

        self.run(self.client.start_io(sys.executable, "-m", "sagepy", "lsp", cwd=str(root),
                                      env={**os.environ, **(env or {})}))
        self.init = self.run(self.client.initialize_async(L.InitializeParams(
            capabilities=L.ClientCapabilities(), root_uri=from_fs_path(str(root)),
            workspace_folders=[L.WorkspaceFolder(from_fs_path(str(root)), "root")])))
        self.client.initialized(L.InitializedParams())

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any) -> None:
        self.loop.call_soon_threadsafe(fn)

    def uri(self, name: str) -> str:
        return from_fs_path(str(self.root / name))

    # ---------------------------------------------------------------- documents
    def open(self, name: str, text: str | None = None) -> str:
        uri = self.uri(name)
        if text is None:
            text = (self.root / name).read_text(encoding="utf-8")
        self.versions[uri] = 1
        self.call(lambda: self.client.text_document_did_open(L.DidOpenTextDocumentParams(
            L.TextDocumentItem(uri=uri, language_id="sage", version=1, text=text))))
        return uri

    def change(self, name: str, text: str) -> None:
        uri = self.uri(name)
        self.versions[uri] += 1
        version = self.versions[uri]
        self.call(lambda: self.client.text_document_did_change(L.DidChangeTextDocumentParams(
            L.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [L.TextDocumentContentChangeWholeDocument(text=text)])))

    def wait_diagnostics(self, name: str, after: int = 0, timeout: float = 60,
                         predicate: Any = None) -> list[L.Diagnostic]:
        """The diagnostics of the first publication for `name` past the first `after` ones of all files that
        satisfies `predicate`."""
        uri = self.uri(name)
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for i, (_, u) in enumerate(self.published[after:]):
                    pass
                if any(u == uri for _, u in self.published[after:]):
                    found = self.diagnostics[uri]
                    if predicate is None or predicate(found):
                        return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no diagnostics for {name} within {timeout} s: {self.diagnostics.get(uri)}")
                self.changed.wait(left)

    def mark(self) -> int:
        with self.changed:
            return len(self.published)

    # ---------------------------------------------------------------- requests
    def request(self, method: str, params: Any) -> Any:
        return self.run(self.client.protocol.send_request_async(method, params))

    def pos(self, name: str, line: int, character: int) -> dict:
        return {"text_document": L.TextDocumentIdentifier(self.uri(name)), "position": L.Position(line, character)}

    def hover(self, name: str, line: int, character: int) -> Any:
        return self.run(self.client.text_document_hover_async(L.HoverParams(**self.pos(name, line, character))))

    def definition(self, name: str, line: int, character: int) -> Any:
        return self.run(self.client.text_document_definition_async(
            L.DefinitionParams(**self.pos(name, line, character))))

    def references(self, name: str, line: int, character: int) -> Any:
        return self.run(self.client.text_document_references_async(L.ReferenceParams(
            context=L.ReferenceContext(include_declaration=True), **self.pos(name, line, character))))

    def rename(self, name: str, line: int, character: int, new: str) -> Any:
        return self.run(self.client.text_document_rename_async(
            L.RenameParams(new_name=new, **self.pos(name, line, character))))

    def completion(self, name: str, line: int, character: int) -> Any:
        return self.run(self.client.text_document_completion_async(
            L.CompletionParams(**self.pos(name, line, character))))

    def signature_help(self, name: str, line: int, character: int) -> Any:
        return self.run(self.client.text_document_signature_help_async(
            L.SignatureHelpParams(**self.pos(name, line, character))))

    def symbols(self, name: str) -> Any:
        return self.run(self.client.text_document_document_symbol_async(
            L.DocumentSymbolParams(L.TextDocumentIdentifier(self.uri(name)))))

    def formatting(self, name: str) -> Any:
        return self.run(self.client.text_document_formatting_async(L.DocumentFormattingParams(
            L.TextDocumentIdentifier(self.uri(name)), L.FormattingOptions(tab_size=4, insert_spaces=True))))

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_async(None), timeout=20)
            self.client.exit(None)
            self.run(self.client.stop(), timeout=20)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
