"""`sage lsp`: the Language Server Protocol on stdin/stdout, on pygls (SPEC §19.2).

Analysis runs on one worker thread, so requests are answered from the last analysis while the next one is
under way. A change is analysed 150 ms after the last keystroke (typing faster than that analyses once);
open and save are analysed at once. After each analysis the diagnostics of every open document of the
re-analysed programs are published. Positions are converted between the checker's code-point columns and
the negotiated encoding (UTF-16 unless the client offers another) by pygls's codec. An exception inside a
handler is logged to the client and answered as an error; the server goes on.

What a client sends is never trusted to be well formed (`frames.py`): a frame whose length cannot be read
is skipped, a request whose params do not fit its method is answered -32602 with a plain message, a rename
to a keyword or an invalid name too, and a document that is no file of a project (a non-`file:` URI, a
file in a directory that does not exist) gets the empty answer — null, no symbols, no completions. No answer
carries a Python traceback.

The cyclic garbage collector would scan the whole kept analyses (millions of objects) every other analysis,
for nothing: they stay alive until replaced. So each analysis ends with `gc.freeze()` (what survives it is left
out of collections), and the garbage of replaced analyses is collected once the server has been idle for
`COLLECT_AFTER_S` (no change nor analysis since the last diagnostics), or at the latest after
`COLLECT_EVERY` analyses, so that memory stays bounded while someone types without a pause.
"""
from __future__ import annotations

import asyncio
import gc
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from lsprotocol import types as L
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ..project import ProjectError
from ..version import __version__
from . import features as F
from .frames import SageProtocol, serve_io
from .workspace import Workspace

DEBOUNCE_S = 0.15
COLLECT_AFTER_S = 2.0
COLLECT_EVERY = 10

KINDS = {"fn": L.CompletionItemKind.Function, "function": L.CompletionItemKind.Function,
         "const": L.CompletionItemKind.Constant, "record": L.CompletionItemKind.Struct,
         "enum": L.CompletionItemKind.Enum, "variant": L.CompletionItemKind.EnumMember,
         "agent": L.CompletionItemKind.Class, "supervisor": L.CompletionItemKind.Class,
         "tool": L.CompletionItemKind.Interface, "method": L.CompletionItemKind.Method,
         "field": L.CompletionItemKind.Field, "variable": L.CompletionItemKind.Variable,
         "module": L.CompletionItemKind.Module, "keyword": L.CompletionItemKind.Keyword}
SYMBOL_KINDS = {"FnDecl": L.SymbolKind.Function, "ConstDecl": L.SymbolKind.Constant,
                "RecordDecl": L.SymbolKind.Struct, "EnumDecl": L.SymbolKind.Enum, "AgentDecl": L.SymbolKind.Class,
                "SupervisorDecl": L.SymbolKind.Class, "ToolDecl": L.SymbolKind.Interface,
                "ProtocolDecl": L.SymbolKind.Interface, "EffectHandlerDecl": L.SymbolKind.Object,
                "FieldDecl": L.SymbolKind.Field, "AgentField": L.SymbolKind.Field,
                "VariantDecl": L.SymbolKind.EnumMember, "ToolFn": L.SymbolKind.Method, "Handler": L.SymbolKind.Event}


class SageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("sage", __version__, protocol_cls=SageProtocol)
        self.ws = Workspace()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sage-analysis")
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.collection: asyncio.TimerHandle | None = None
        self.frozen = 0   # analyses since the last collection

    # ---------------------------------------------------------------- positions
    def lines(self, path: str) -> list[str]:
        text = self.ws.texts.get(path)
        if text is None:
            text = F._source_of(self.ws, path)
        return text.split("\n")

    def to_range(self, path: str, span: tuple) -> L.Range:
        lines = self.lines(path)
        codec = self.workspace.position_codec
        start = codec.position_to_client_units(lines, L.Position(span[0] - 1, span[1] - 1))
        end = codec.position_to_client_units(lines, L.Position(span[2] - 1, max(span[3] - 1, 0)))
        return L.Range(start, end)

    def from_position(self, path: str, pos: L.Position) -> tuple[int, int]:
        at = self.workspace.position_codec.position_from_client_units(self.lines(path), L.Position(pos.line,
                                                                                                   pos.character))
        return at.line + 1, at.character + 1

    # ---------------------------------------------------------------- analysis and diagnostics
    def schedule(self, path: str, delay: float) -> None:
        loop = asyncio.get_running_loop()
        self.postpone_collection()
        old = self.pending.pop(path, None)
        if old is not None:
            old.cancel()
        self.pending[path] = loop.call_later(delay, lambda: loop.create_task(self.analyze(path)))

    async def analyze(self, path: str) -> None:
        self.pending.pop(path, None)
        self.postpone_collection()
        loop = asyncio.get_running_loop()
        try:
            analyses = await loop.run_in_executor(self.worker, self._analyze, path)
        except ProjectError as exc:   # e.g. a file in a directory that does not exist: nothing to analyse
            self.log_plain(f"cannot analyse {path}: {exc}")
            return
        except Exception:
            self.log_error(f"analysis of {path} failed")
            return
        touched = {path} if path in self.ws.texts else set()
        for analysis in analyses:
            touched.update(p for p in analysis.files if p in self.ws.texts)
        for doc in sorted(touched):
            self.publish(doc)
        self.frozen += 1
        if self.frozen >= COLLECT_EVERY:
            await self.collect()
        elif not self.pending:
            self.collection = loop.call_later(COLLECT_AFTER_S, lambda: loop.create_task(self.collect()))

    def _analyze(self, path: str) -> list:
        analyses = self.ws.analyze(path)
        gc.freeze()
        return analyses

    def postpone_collection(self) -> None:
        if self.collection is not None:
            self.collection.cancel()
            self.collection = None

    async def collect(self) -> None:
        """On the worker thread, so never during an analysis."""
        self.collection = None
        self.frozen = 0
        await asyncio.get_running_loop().run_in_executor(self.worker, _collect)

    def publish(self, path: str) -> None:
        diagnostics = []
        for d in self.ws.diagnostics_for(path):
            span = d.span or (1, 1, 1, 1)
            message = d.message + (f"\n{d.hint}" if d.hint else "")
            related = [L.DiagnosticRelatedInformation(L.Location(from_fs_path(path), self.to_range(path, span)), note)
                       for note in d.notes] if d.notes else None
            diagnostics.append(L.Diagnostic(range=self.to_range(path, span), message=message, code=d.code,
                                            source="sage", related_information=related,
                                            severity=L.DiagnosticSeverity.Error if d.severity == "error"
                                            else L.DiagnosticSeverity.Warning))
        diagnostics.sort(key=lambda x: (x.range.start.line, x.range.start.character))
        self.text_document_publish_diagnostics(L.PublishDiagnosticsParams(uri=from_fs_path(path),
                                                                          diagnostics=diagnostics))

    def log_error(self, what: str) -> None:
        self.window_log_message(L.LogMessageParams(L.MessageType.Error, f"{what}:\n{traceback.format_exc()}"))

    def log_plain(self, message: str) -> None:
        self.window_log_message(L.LogMessageParams(L.MessageType.Warning, message))


def _collect() -> None:
    gc.unfreeze()
    gc.collect()
    gc.freeze()


server = SageServer()


class NotAFile(ProjectError):
    """A document that is no file (an `untitled:` buffer, an `http:` URI): no project to look it up in."""


def _path(uri: str) -> str:
    path = to_fs_path(uri)
    if not path:
        raise NotAFile(f"{uri} is not a file")
    return os.path.abspath(path)


def guarded(empty: Any) -> Callable:
    """Answer a request from its handler: `empty` for a document of no project, -32602 with the reason for a
    request the features refuse (F.RequestError), and for any other exception -32603 with a one-line
    message (the traceback goes to the client's log, never into the answer); never end the server."""
    def wrap(handler: Callable) -> Callable:
        def run(ls: SageServer, params: Any) -> Any:
            try:
                return handler(ls, params)
            except JsonRpcException:
                raise
            except F.RequestError as exc:
                raise JsonRpcInvalidParams(str(exc)) from None
            except ProjectError:
                return empty() if callable(empty) else empty
            except Exception as exc:
                ls.log_error(f"{handler.__name__} failed")
                raise JsonRpcInternalError(f"internal error: {type(exc).__name__}: {exc}") from None
        run.__name__ = handler.__name__
        return run
    return wrap


def _document(handler: Callable) -> Callable:
    """A notification about a document: ignored when the document is no file."""
    def run(ls: SageServer, params: Any) -> Any:
        try:
            return handler(ls, params)
        except NotAFile:
            return None
    run.__name__ = handler.__name__
    return run


@server.feature(L.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: SageServer, params: L.DidOpenTextDocumentParams) -> None:
    try:
        path = _path(params.text_document.uri)
    except NotAFile:
        return
    ls.ws.texts[path] = params.text_document.text
    await ls.analyze(path)


@server.feature(L.TEXT_DOCUMENT_DID_CHANGE)
@_document
def did_change(ls: SageServer, params: L.DidChangeTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    ls.ws.texts[path] = ls.workspace.get_text_document(params.text_document.uri).source
    ls.schedule(path, DEBOUNCE_S)


@server.feature(L.TEXT_DOCUMENT_DID_SAVE)
@_document
def did_save(ls: SageServer, params: L.DidSaveTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    ls.schedule(path, 0)


@server.feature(L.TEXT_DOCUMENT_DID_CLOSE)
@_document
def did_close(ls: SageServer, params: L.DidCloseTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    ls.ws.close(path)
    ls.schedule(path, 0)


def _at(ls: SageServer, params: Any) -> tuple[str, str, int, int]:
    path = _path(params.text_document.uri)
    line, col = ls.from_position(path, params.position)
    return path, ls.ws.texts.get(path) or F._source_of(ls.ws, path), line, col


@server.feature(L.TEXT_DOCUMENT_HOVER)
@guarded(None)
def hover(ls: SageServer, params: L.HoverParams) -> L.Hover | None:
    path, text, line, col = _at(ls, params)
    found = F.hover(ls.ws, path, text, line, col)
    if found is None:
        return None
    markdown, span = found
    return L.Hover(L.MarkupContent(L.MarkupKind.Markdown, markdown), ls.to_range(path, span))


@server.feature(L.TEXT_DOCUMENT_DEFINITION)
@guarded(None)
def definition(ls: SageServer, params: L.DefinitionParams) -> L.Location | None:
    path, text, line, col = _at(ls, params)
    found = F.definition(ls.ws, path, text, line, col)
    if found is None:
        return None
    return L.Location(from_fs_path(found[0]), ls.to_range(found[0], found[1]))


@server.feature(L.TEXT_DOCUMENT_REFERENCES)
@guarded(list)
def references(ls: SageServer, params: L.ReferenceParams) -> list[L.Location]:
    path, text, line, col = _at(ls, params)
    found = F.references(ls.ws, path, text, line, col, params.context.include_declaration)
    return [L.Location(from_fs_path(p), ls.to_range(p, span)) for p, span in found]


@server.feature(L.TEXT_DOCUMENT_RENAME)
@guarded(None)
def rename(ls: SageServer, params: L.RenameParams) -> L.WorkspaceEdit:
    path, text, line, col = _at(ls, params)
    edits = F.rename(ls.ws, path, text, line, col, params.new_name)
    changes = {from_fs_path(p): [L.TextEdit(ls.to_range(p, span), new) for span, new in spans]
               for p, spans in edits.items()}
    return L.WorkspaceEdit(changes=changes)


@server.feature(L.TEXT_DOCUMENT_COMPLETION, L.CompletionOptions(trigger_characters=[".", ":"]))
@guarded(lambda: L.CompletionList(is_incomplete=False, items=[]))
def completion(ls: SageServer, params: L.CompletionParams) -> L.CompletionList:
    path, text, line, col = _at(ls, params)
    items = [L.CompletionItem(label=i.label, kind=KINDS.get(i.kind, L.CompletionItemKind.Text), detail=i.detail,
                              documentation=L.MarkupContent(L.MarkupKind.Markdown, i.doc) if i.doc else None)
             for i in F.completion(ls.ws, path, text, line, col)]
    return L.CompletionList(is_incomplete=False, items=items)


@server.feature(L.TEXT_DOCUMENT_SIGNATURE_HELP, L.SignatureHelpOptions(trigger_characters=["(", ","]))
@guarded(None)
def signature_help(ls: SageServer, params: L.SignatureHelpParams) -> L.SignatureHelp | None:
    path, text, line, col = _at(ls, params)
    found = F.signature_help(ls.ws, path, text, line, col)
    if found is None:
        return None
    label, offsets, active, doc = found
    info = L.SignatureInformation(label=label, parameters=[L.ParameterInformation(label=o) for o in offsets],
                                  documentation=L.MarkupContent(L.MarkupKind.Markdown, doc) if doc else None)
    return L.SignatureHelp(signatures=[info], active_signature=0,
                           active_parameter=min(active, max(len(offsets) - 1, 0)))


@server.feature(L.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@guarded(list)
def document_symbol(ls: SageServer, params: L.DocumentSymbolParams) -> list[L.DocumentSymbol]:
    path = _path(params.text_document.uri)

    def convert(o: F.Outline) -> L.DocumentSymbol:
        return L.DocumentSymbol(name=o.name, kind=SYMBOL_KINDS.get(o.kind, L.SymbolKind.Variable),
                                range=ls.to_range(path, o.span), selection_range=ls.to_range(path, o.name_span),
                                children=[convert(c) for c in o.children] or None)
    return [convert(o) for o in F.document_symbols(ls.ws, path)]


@server.feature(L.TEXT_DOCUMENT_FORMATTING)
@guarded(list)
def formatting(ls: SageServer, params: L.DocumentFormattingParams) -> list[L.TextEdit]:
    from ..fmt import SyntaxErrors, format_source
    path = _path(params.text_document.uri)
    text = ls.ws.texts.get(path) or F._source_of(ls.ws, path)
    try:
        formatted = format_source(text, path)
    except SyntaxErrors:
        return []
    if formatted == text:
        return []
    lines = text.split("\n")
    end = L.Position(len(lines) - 1, ls.workspace.position_codec.client_num_units(lines[-1]))
    return [L.TextEdit(L.Range(L.Position(0, 0), end), formatted)]


def serve() -> int:
    serve_io(server)
    return 0
