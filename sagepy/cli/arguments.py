"""The argument parser of the `sage` line (SPEC §10.2).

Every subcommand is listed, but only the arguments of the one that runs are added, so that building the parser
imports no other subcommand's module. `sage run PATH` never builds it at all (see `main.plain_run`).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

USAGE_EXIT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 2 with the usage on stderr
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(USAGE_EXIT)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the `sage` line. Every subcommand is listed, but only `command`'s own arguments are added
    (a subcommand module is imported only for the command that runs); `command` None adds them all."""
    parser = _Parser(prog="sage", description="Run, check and test Sage programs.")
    parser.add_argument("--version", action="store_true", help="print the sagepy version and exit")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour and styles: auto (on a terminal, unless NO_COLOR; FORCE_COLOR forces them), "
                        "always or never; accepted anywhere on the line")
    parser.add_argument("--no-color", action="store_const", const="never", dest="color",
                        help="the same as --color never")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (help_text, description, add_arguments) in _COMMANDS.items():
        subparser = sub.add_parser(name, help=help_text, description=description)
        if command is None or command == name:
            add_arguments(subparser)
    return parser


def _run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("path", nargs="?", metavar="PATH")
    run.add_argument("--trace", action="store_true", help="write trace events to stderr")
    run.add_argument("--trace-file", metavar="F", help="append trace events to F")
    run.add_argument("--usage", action="store_true",
                     help="print the run's model turns, tokens and cost on stderr at the end")
    journaling = run.add_mutually_exclusive_group()
    journaling.add_argument("--resume", metavar="RUN_ID", help="resume a durable run (`last`: the newest one)")
    journaling.add_argument("--no-journal", action="store_true",
                            help="run without journaling, also in a project with [persistence]")
    recording = run.add_mutually_exclusive_group()
    recording.add_argument("--record", metavar="FILE",
                           help="write the run's model turns and tool calls to FILE (a cassette)")
    recording.add_argument("--replay", metavar="FILE",
                           help="answer the run's model turns and tool calls from the cassette FILE")


def _check_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("path", nargs="?", metavar="PATH")
    check.add_argument("--verify-tools", action="store_true", help="compare tool declarations with live servers")
    check.add_argument("--format", choices=["text", "json", "github"], default="text", help="diagnostic output format")


def _fmt_arguments(fmt: argparse.ArgumentParser) -> None:
    fmt.add_argument("paths", nargs="*", metavar="PATH")
    fmt.add_argument("--check", action="store_true", help="rewrite nothing; list the files that would change")
    fmt.add_argument("--diff", action="store_true", help="rewrite nothing; print a diff of each file that would change")
    fmt.add_argument("--stdin", action="store_true", help="format standard input to standard output")


def _test_arguments(test: argparse.ArgumentParser) -> None:
    from .test import add_arguments
    add_arguments(test)


def _eval_arguments(evals: argparse.ArgumentParser) -> None:
    from .eval import add_arguments
    add_arguments(evals)


def _tools_arguments(tools: argparse.ArgumentParser) -> None:
    from .tools import add_arguments
    add_arguments(tools)


def _runs_arguments(runs: argparse.ArgumentParser) -> None:
    from .runs import add_arguments
    add_arguments(runs)


def _worker_arguments(worker: argparse.ArgumentParser) -> None:
    from .worker import add_arguments
    add_arguments(worker)


def _trace_arguments(trace: argparse.ArgumentParser) -> None:
    from .trace import add_arguments
    add_arguments(trace)


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    from .serve import add_arguments
    add_arguments(serve)


def _ui_arguments(ui: argparse.ArgumentParser) -> None:
    from .ui import add_arguments
    add_arguments(ui)


def _explain_arguments(explain: argparse.ArgumentParser) -> None:
    from .explain import add_arguments
    add_arguments(explain)


def _new_arguments(new: argparse.ArgumentParser) -> None:
    new.add_argument("name", metavar="NAME")


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


# name -> (help, description, what adds its arguments)
_COMMANDS: dict[str, tuple[str, str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": ("check and run a program", "Load, check and run the entry file's `run` declaration. PATH is a .sg "
            "file or a project directory (default: .).", _run_arguments),
    "check": ("check a program without running it", "Report every error in the program and its test files.",
              _check_arguments),
    "fmt": ("format Sage source in the canonical layout",
            "Rewrite .sg files (the project's, or PATHs) in the one canonical layout.", _fmt_arguments),
    "test": ("run the tests of *_test.sg files", "Discover and run `test` blocks in *_test.sg files.",
             _test_arguments),
    "eval": ("run the evals of *_eval.sg files", "Run each `eval` block over its dataset against the model and "
             "report its scores.", _eval_arguments),
    "tools": ("list, inspect, generate and verify MCP servers", "Work with the MCP servers configured in grove.toml.",
              _tools_arguments),
    "runs": ("list, show, resolve, prune and answer durable runs",
             "The durable runs of the project (grove.toml with [persistence]).", _runs_arguments),
    "worker": ("execute queued and interrupted runs", "Claim the project's queued runs (`sage runs submit`) and "
               "interrupted ones, and execute each in a process of its own.", _worker_arguments),
    "ui": ("serve the web console of runs, people and evals",
           "Serve a web console for the project's durable runs, the approvals and questions they wait on, "
           "and its eval reports; prints the URL with its access token.", _ui_arguments),
    "trace": ("view a trace file as an HTML timeline", "Work with trace files written by `sage run --trace-file`.",
              _trace_arguments),
    "explain": ("explain an error code", "Print the explanation of an error code, with a wrong and a fixed example.",
                _explain_arguments),
    "new": ("create a new project", "Create a project skeleton in NAME/ (NAME `.`: in the current directory, which "
            "must be empty).", _new_arguments),
    "serve": ("serve the program's #[mcp_tool] agents as an MCP server",
              "Serve the agents marked #[mcp_tool = \"name\"] as MCP tools, over stdio (the default) or streamable "
              "HTTP. PATH is a .sg file or a project directory (default: .).", _serve_arguments),
    "lsp": ("run the language server on stdin/stdout",
            "Serve the Language Server Protocol on stdin/stdout for an editor.", _no_arguments),
    "version": ("print the sagepy version", "Print the sagepy and Python versions.", _no_arguments),
}


def command_of(argv: list[str]) -> str | None:
    """The subcommand the line names: its first word that is not an option (nor `--color`'s value)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return None
        if arg == "--color":
            i += 2
            continue
        if not arg.startswith("-"):
            return arg
        i += 1
    return None


def take_color_options(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], str | None]:
    """`--color X`, `--color=X` and `--no-color` wherever they stand before `--` (SPEC §10.2: before or after
    the subcommand); the last one wins. The rest of the line is left for argparse."""
    rest: list[str] = []
    color = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == "--no-color":
            color = "never"
        elif arg == "--color" or arg.startswith("--color="):
            if arg == "--color":
                if i + 1 >= len(argv):
                    parser.error("argument --color: expected one argument")
                i += 1
                value = argv[i]
            else:
                value = arg.split("=", 1)[1]
            if value not in ("auto", "always", "never"):
                parser.error(f"argument --color: invalid choice: '{value}' (choose from 'auto', 'always', 'never')")
            color = value
        else:
            rest.append(arg)
        i += 1
    return rest, color
