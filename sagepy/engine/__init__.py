"""The engine as a library (SPEC §20): compile a program once, run it many times, each run with a Host.

    import sagepy
    program = sagepy.compile("examples/triage")
    outcome = program.run()
    print(outcome.status, outcome.exit_code)

Every `sage` command is a client of this package.
"""
from .host import Host
from .outcome import RunOutcome
from .program import CheckFailed, Program, analyze, compile

__all__ = ["CheckFailed", "Host", "Program", "RunOutcome", "analyze", "compile"]
