"""`sage eval`: the arguments (SPEC §22.1); the command itself is sagepy.evals.command."""
from __future__ import annotations

from typing import Any


def add_arguments(parser: Any) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="an _eval.sg file, or a directory whose _eval.sg files to run (default: .)")
    parser.add_argument("--filter", metavar="TEXT", help="run the evals whose name contains TEXT")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="run each case N times (default 1)")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N",
                        help="run up to N cases at once (default 4)")
    parser.add_argument("--model", metavar="M", help="the model to use where a divine names none")
    parser.add_argument("--limit", type=int, metavar="N", help="read at most N rows of each dataset")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument("--html", metavar="FILE", help="also write the report as a self-contained HTML page")
    parser.add_argument("--baseline", metavar="FILE", help="compare with an earlier --json report")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a score regressed against the baseline")
    parser.add_argument("--fail-under", action="append", nargs="+", metavar="NAME=X",
                        help="exit 1 when the mean of score NAME of an eval is under X")
    cassettes = parser.add_mutually_exclusive_group()
    cassettes.add_argument("--record", metavar="DIR", help="write a cassette per case and repeat under DIR")
    cassettes.add_argument("--replay", metavar="DIR",
                           help="answer every model turn and tool call from the cassettes under DIR")


def run_eval_command(args: Any) -> int:
    from ..evals.command import eval_command
    return eval_command(args)
