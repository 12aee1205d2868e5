"""What the language server knows: the projects of the open documents, their programs, and the last analysis
of each program (its diagnostics and the checker's name index).

A document belongs to the project of its nearest grove.toml (or its own directory without one). A project's
programs are those `sage check` checks: the entry program and one per test file, plus, for an open document
that none of them loads, the document's own program. A change to a document re-analyses every program that
loads it, which covers every module importing it, directly or through others. Files are read through
`OverlaySources`: the unsaved text of open documents, else the disk. Nothing here imports pygls.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from ..check.index import ProgramIndex
from ..diagnostics import Diagnostic
from ..loader import Sources
from ..syntax.incremental import IncrementalParser


class OverlaySources(Sources):
    """The open documents' text over the disk. Open documents are parsed by an `IncrementalParser` (only the
    items an edit changed are parsed again; fresh objects each time, so that every program gets its own AST
    to annotate) instead of through the on-disk cache, which would keep every version typed."""

    def __init__(self, cache_dir: str | None, texts: dict[str, str], parser: IncrementalParser | None = None) -> None:
        super().__init__(cache_dir)
        self.texts = texts
        self.parser = parser or IncrementalParser()

    def exists(self, path: str) -> bool:
        return path in self.texts or os.path.isfile(path)

    def read(self, path: str) -> tuple[str, Diagnostic | None]:
        text = self.texts.get(path)
        if text is None:
            return super().read(path)
        return text, None

    def parse(self, path: str, text: str) -> tuple[list, list[Diagnostic]]:
        if path not in self.texts:
            return super().parse(path, text)
        return self.parser.parse(text, path)


class Analysis:
    """One analysed program: the files it loads, its diagnostics, and its index (None when it did not get
    as far as the checker: a file with syntax errors)."""

    __slots__ = ("entry", "files", "diagnostics", "index", "sources", "modules")

    def __init__(self, entry: str, modules: list, diagnostics: list[Diagnostic], index: ProgramIndex | None) -> None:
        self.entry = entry
        self.modules = {m.path: m for m in modules}
        self.files = set(self.modules)
        self.diagnostics = diagnostics
        self.index = index
        self.sources = {m.path: m.source for m in modules}   # the text as analysed: what the spans refer to


class Project:
    def __init__(self, root: str, session: Any) -> None:
        self.root = root
        self.session = session
        self.analyses: dict[str, Analysis] = {}
        self.good: dict[str, Analysis] = {}    # per entry, its last analysis that has an index

    def entries(self, open_paths: list[str]) -> list[str]:
        from ..testfiles import EVAL_SUFFIX, TEST_SUFFIX, test_files
        found = []
        entry = self.session.entry_file()
        if os.path.isfile(entry):
            found.append(os.path.abspath(entry))
        found.extend(test_files(self.root, self.session.settings.grove_path is not None, (TEST_SUFFIX, EVAL_SUFFIX)))
        return found + [p for p in open_paths if p not in found and not self.loads(p)]

    def loads(self, path: str) -> bool:
        return any(path in a.files for a in self.analyses.values())


class Workspace:
    """Documents and projects. `analyze` runs on the server's worker thread; the rest on its event loop."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.projects: dict[str, Project] = {}
        self.sources_by_root: dict[str, OverlaySources] = {}
        self.lock = threading.Lock()

    # ---------------------------------------------------------------- documents and projects
    def project_of(self, path: str) -> Project:
        from ..project import locate_project
        root, _grove, _file = locate_project(os.path.dirname(path))
        project = self.projects.get(root)
        if project is None:
            from ..session import Session
            from ..project import find_project
            found, _ = find_project(root)
            project = self.projects[root] = Project(root, Session(found))
        return project

    def close(self, path: str) -> None:
        """The document is closed: its file is read from the disk again, and its kept parse is dropped."""
        self.texts.pop(path, None)
        for sources in self.sources_by_root.values():
            sources.parser.forget(path)

    def sources(self, project: Project) -> OverlaySources:
        sources = self.sources_by_root.get(project.root)
        if sources is None:
            sources = self.sources_by_root[project.root] = OverlaySources(project.session.overrides.cache_dir,
                                                                          self.texts)
        return sources

    # ---------------------------------------------------------------- analysis
    def analyze(self, path: str) -> list[Analysis]:
        """Re-analyse every program of `path`'s project that loads it (all of them on first sight); returns
        the new analyses."""
        project = self.project_of(path)
        open_paths = [p for p in self.texts if self.project_of(p) is project]
        entries = project.entries(open_paths)
        todo = [e for e in entries if e not in project.analyses or path in project.analyses[e].files or e == path]
        done = []
        for entry in todo:
            analysis = self.analyze_program(project, entry)
            with self.lock:
                project.analyses[entry] = analysis
                if analysis.index is not None:
                    project.good[entry] = analysis
            done.append(analysis)
        return done

    def analyze_program(self, project: Project, entry: str, sources: OverlaySources | None = None) -> Analysis:
        index = ProgramIndex()
        from ..engine import analyze
        program, diags = analyze(project.session, entry, sources=sources or self.sources(project), index=index,
                                 link=False)
        return Analysis(entry, program.modules, diags, index if index.occurrences else None)

    def analyze_text(self, path: str, text: str) -> Analysis | None:
        """An analysis of the program of `path` as if the document held `text`, kept nowhere (completion
        tries what the user is about to type); None when no program loads `path`."""
        project = self.project_of(path)
        known = self.analyses_of(path, good=False)
        entry = known[0].entry if known else path
        texts = dict(self.texts)
        texts[path] = text
        # the open documents' kept chunks serve this parse too: only the items the text changes are parsed
        sources = OverlaySources(project.session.overrides.cache_dir, texts, self.sources(project).parser)
        return self.analyze_program(project, entry, sources)

    # ---------------------------------------------------------------- queries
    def analyses_of(self, path: str, good: bool = True) -> list[Analysis]:
        """The analyses that load `path`, the entry program first; with `good`, the last ones with an index."""
        project = self.project_of(path)
        with self.lock:
            table = project.good if good else project.analyses
            found = [a for a in table.values() if path in a.files]
        found.sort(key=lambda a: (a.entry.endswith(("_test.sg", "_eval.sg")) and a.entry != path, a.entry != path))
        return found

    def diagnostics_for(self, path: str) -> list[Diagnostic]:
        """The diagnostics of `path` over every program that loads it, each once (as `sage check` lists them)."""
        unique: dict[tuple, Diagnostic] = {}
        for analysis in self.analyses_of(path, good=False):
            for d in analysis.diagnostics:
                if d.file and os.path.abspath(d.file) == path:
                    unique.setdefault((d.span, d.code, d.message), d)
        return list(unique.values())

    def all_analyses(self, path: str) -> list[Analysis]:
        project = self.project_of(path)
        with self.lock:
            return list(project.good.values())
