"""The `sage` command: argument parsing and dispatch (SPEC §10.2).

Each subcommand imports what it needs only when it runs, so `sage version` and `sage run` stay fast: the
commonest line, `sage run [PATH] [-- ARGS]`, is read without argparse (`plain_run`); every other line goes
through the argparse parser of `arguments.py`, which also gives every usage error and help text.
No Python traceback reaches the user: an unexpected exception prints `internal error: …` and exits 1.
"""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

def main(argv: list[str] | None = None) -> int:
    """Run the `sage` line `argv`; None: this process's own command line (the process is the command)."""
    args_list = sys.argv[1:] if argv is None else argv
    args = plain_run(args_list)
    parser = None
    if args is None:
        from .arguments import USAGE_EXIT, build_parser, command_of
        parser = build_parser(command_of(args_list))
    try:
        if parser is not None:
            from .arguments import take_color_options
            args_list, color = take_color_options(parser, args_list)
            args_list, program_args = _take_program_arguments(args_list)
            args = parser.parse_args(args_list)
            args.color = color or args.color
            args.program_args = program_args
        args.whole_process = argv is None
        from ..render import choose_color
        choose_color(args.color)
        if args.version or args.command == "version":
            return _version()
        if args.command is None:
            parser.print_help(sys.stderr)
            return USAGE_EXIT
        if args.command == "run" and args.resume is not None and args.program_args:
            parser.error("--resume runs with the arguments the run recorded: it takes no `-- ARGS`")
        handler = {"run": _run, "check": _check, "test": _test, "tools": _tools, "runs": _runs,
                   "fmt": _fmt, "worker": _worker, "new": _new, "explain": _explain, "lsp": _lsp, "serve": _serve,
                   "trace": _trace, "eval": _eval, "ui": _ui}[args.command]
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


def plain_run(argv: list[str]) -> SimpleNamespace | None:
    """The arguments of `sage run [PATH] [-- ARGS]` with no option, as argparse would give them, or None for
    any other line. Building the argparse parser (and importing argparse, gettext, locale and shutil) costs a
    plain run more than checking its program; a line with an option, or anything argparse might refuse, is
    left to argparse."""
    line, program_args = _take_program_arguments(argv)
    if line[:1] != ["run"] or len(line) > 2 or any(arg.startswith("-") for arg in line):
        return None
    return SimpleNamespace(command="run", path=line[1] if len(line) == 2 else None, trace=False, trace_file=None,
                           resume=None, no_journal=False, usage=False, version=False, color="auto",
                           program_args=program_args, record=None, replay=None)


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

    from ..version import __version__
    print(f"sagepy {__version__} (Python {platform.python_version()})")
    return 0


def _run(args: argparse.Namespace | SimpleNamespace) -> int:
    if args.whole_process:
        # loading and compiling make long-lived objects only (modules, the parser, ASTs, closures): the
        # collector would walk them again and again for no garbage; cli/run turns it back on before the
        # program runs
        import gc
        gc.disable()
    from .project_entry import open_entry
    opened = open_entry(args.path)
    if isinstance(opened, int):
        return opened
    session, entry = opened
    from .run import run_entry
    _progress()
    return run_entry(session, entry, trace_file=args.trace_file, trace_stderr=args.trace,
                     program_args=args.program_args, resume=args.resume, journal=not args.no_journal,
                     whole_process=args.whole_process, usage=args.usage, cassette=(args.record, args.replay))


def _eval(args: argparse.Namespace) -> int:
    from .eval import run_eval_command
    return run_eval_command(args)


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


def _ui(args: argparse.Namespace) -> int:
    from .ui import run_ui_command
    return run_ui_command(args)


def _explain(args: argparse.Namespace) -> int:
    from .explain import run_explain_command
    return run_explain_command(args)


def _serve(args: argparse.Namespace) -> int:
    from .serve import run_serve
    return run_serve(args)


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


if __name__ == "__main__":
    sys.exit(main())
