"""The `sage` command: argument parsing and dispatch (SPEC §10.2).

Each subcommand imports what it needs only when it runs, so `sage version` and `sage run` stay fast.
No Python traceback reaches the user: an unexpected exception prints `internal error: …` and exits 1.
"""
from __future__ import annotations

import argparse
import os
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
    journaling = run.add_mutually_exclusive_group()
    journaling.add_argument("--resume", metavar="RUN_ID", help="resume a durable run (`last`: the newest one)")
    journaling.add_argument("--no-journal", action="store_true",
                            help="run without journaling, also in a project with [persistence]")


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
    "tools": ("list, inspect, generate and verify MCP servers", "Work with the MCP servers configured in grove.toml.",
              _tools_arguments),
    "runs": ("list, show, resolve, prune and answer durable runs",
             "The durable runs of the project (grove.toml with [persistence]).", _runs_arguments),
    "worker": ("execute queued and interrupted runs", "Claim the project's queued runs (`sage runs submit`) and "
               "interrupted ones, and execute each in a process of its own.", _worker_arguments),
    "trace": ("view a trace file as an HTML timeline", "Work with trace files written by `sage run --trace-file`.",
              _trace_arguments),
    "explain": ("explain an error code", "Print the explanation of an error code, with a wrong and a fixed example.",
                _explain_arguments),
    "new": ("create a new project", "Create a project skeleton in NAME/ (NAME `.`: in the current directory, which "
            "must be empty).", _new_arguments),
    "lsp": ("run the language server on stdin/stdout",
            "Serve the Language Server Protocol on stdin/stdout for an editor.", _no_arguments),
    "version": ("print the sagepy version", "Print the sagepy and Python versions.", _no_arguments),
}


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_of(args_list))
    try:
        args_list, color = _take_color_options(parser, args_list)
        args_list, program_args = _take_program_arguments(args_list)
        args = parser.parse_args(args_list)
        from ..render import choose_color
        choose_color(color or args.color)
        args.program_args = program_args
        if args.version or args.command == "version":
            return _version()
        if args.command is None:
            parser.print_help(sys.stderr)
            return USAGE_EXIT
        if args.command == "run" and args.resume is not None and program_args:
            parser.error("--resume runs with the arguments the run recorded: it takes no `-- ARGS`")
        handler = {"run": _run, "check": _check, "test": _test, "tools": _tools, "runs": _runs,
                   "fmt": _fmt, "worker": _worker, "new": _new, "explain": _explain, "lsp": _lsp,
                   "trace": _trace}[args.command]
        return handler(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # the one place a Python exception becomes a user-facing message
        sys.stderr.write(f"internal error: {type(exc).__name__}: {exc}\n"
                         "  = help: this is a bug in sagepy; please report it with the program that caused it\n")
        from ..settings import Overrides
        if Overrides(os.environ).setting("SAGE_DEBUG"):
            raise
        return 1


def _command_of(argv: list[str]) -> str | None:
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


def _take_color_options(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], str | None]:
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


def _take_program_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """`sage run … -- ARGS` and `sage runs submit … -- ARGS`: what follows the first `--` belongs to the
    program (`args()`, SPEC §6.1). Other commands keep their `--` (`sage tools add NAME -- CMD …`)."""
    commands = [a for a in argv[:argv.index("--")] if not a.startswith("-")] if "--" in argv else []
    if commands[:1] != ["run"] and commands[:2] != ["runs", "submit"]:
        return argv, []
    split = argv.index("--")
    return argv[:split], argv[split + 1:]


def _version() -> int:
    import platform

    from .. import __version__
    print(f"sagepy {__version__} (Python {platform.python_version()})")
    return 0


def _run(args: argparse.Namespace) -> int:
    from ..project import ProjectError
    from ..session import Session
    try:
        session, explicit = Session.open(args.path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    entry = explicit or session.entry_file()
    if not os.path.isfile(entry):
        sys.stderr.write(f"error: no entry file found (looked for {_shown(entry)})\n")
        return 1
    from .run import run_entry
    _progress()
    return run_entry(session, entry, trace_file=args.trace_file, trace_stderr=args.trace,
                     program_args=args.program_args, resume=args.resume, journal=not args.no_journal)


def _fmt(args: argparse.Namespace) -> int:
    from .fmt import run_fmt
    return run_fmt(args)


def _check(args: argparse.Namespace) -> int:
    from .check import run_check
    if args.verify_tools:
        _progress()
    return run_check(args)


def _test(args: argparse.Namespace) -> int:
    from .test import run_test_command
    _progress()
    return run_test_command(args)


def _tools(args: argparse.Namespace) -> int:
    from .tools import run_tools_command
    return run_tools_command(args)


def _runs(args: argparse.Namespace) -> int:
    from .runs import run_runs_command
    return run_runs_command(args)


def _worker(args: argparse.Namespace) -> int:
    from .worker import run_worker_command
    return run_worker_command(args)


def _trace(args: argparse.Namespace) -> int:
    from .trace import run_trace_command
    return run_trace_command(args)


def _explain(args: argparse.Namespace) -> int:
    from .explain import run_explain_command
    return run_explain_command(args)


def _lsp(args: argparse.Namespace) -> int:
    from .lsp import run_lsp
    return run_lsp(args)


def _new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .new import create_project
    return create_project(args.name, Path.cwd())


def _progress() -> None:
    """A status line on stderr while servers connect or a model answers, when stderr is a terminal (checked
    here too, so that piped runs do not even import the module)."""
    if sys.stderr.isatty():
        from ..progress import enable
        enable()


def _shown(path: str) -> str:
    from ..diagnostics import display_path
    return display_path(path)


if __name__ == "__main__":
    sys.exit(main())
