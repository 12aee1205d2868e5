"""`sage trace view TRACE_FILE [-o OUT]`: write the HTML timeline of a trace file (SPEC §18.2)."""
from __future__ import annotations

import os
import sys
from typing import Any


def add_arguments(parser: Any) -> None:
    sub = parser.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", required=True,
                                parser_class=type(parser))
    view = sub.add_parser("view", help="write the HTML timeline of a trace file",
                          description="Write one self-contained HTML page showing the trace's agents as lanes, "
                          "with their model turns, tool calls and spans as bars. The page needs no network.")
    view.add_argument("trace_file", metavar="TRACE_FILE", help="a file written with --trace-file")
    view.add_argument("-o", "--output", metavar="OUT",
                      help="the page to write (default: TRACE_FILE with .html instead of its suffix)")


def run_trace_command(args: Any) -> int:
    from ..traceview.model import NoEvents, build, read_events
    from ..traceview.render import render
    source = args.trace_file
    try:
        with open(source, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        sys.stderr.write(f"error: cannot read {source}: {exc.strerror or exc}\n")
        return 1
    events, skipped = read_events(text)
    if skipped:
        noun = "line" if skipped == 1 else "lines"
        sys.stderr.write(f"warning: skipped {skipped} {noun} of {source} that are not trace events\n")
    try:
        trace = build(events)
    except NoEvents:
        sys.stderr.write(f"error: {source} holds no trace events\n")
        return 1
    out = args.output or os.path.splitext(source)[0] + ".html"
    page = render(trace, os.path.basename(source))   # the whole page first: never a half-written file
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {out}: {exc.strerror or exc}\n")
        return 1
    print(f"wrote {out}")
    return 0
