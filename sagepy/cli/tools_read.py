"""`sage tools read NAME URI` and `sage tools prompt NAME PROMPT [k=v …]` (SPEC §8.11): a configured server's
resource, or one of its prompts rendered, printed as the builtins `mcp_read_resource` and `mcp_get_prompt`
return them; a failure is `error: <the builtin's error display>` on stderr, exit 1.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..mcp.pool import ConnectionPool
    from ..settings import Settings


def add_arguments(sub: Any) -> None:
    """The `read` and `prompt` subcommands of `sage tools`."""
    read = sub.add_parser("read", help="print a resource of a server",
                          description="Connect to the configured server NAME and print the text of the "
                                      "resource URI.")
    read.add_argument("name", metavar="NAME", help="a [tools.NAME] entry of grove.toml")
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    prompt = sub.add_parser("prompt", help="print a prompt of a server, rendered",
                            description="Connect to the configured server NAME and print its prompt PROMPT "
                                        "rendered with the k=v arguments (values are strings as written).")
    prompt.add_argument("name", metavar="NAME", help="a [tools.NAME] entry of grove.toml")
    prompt.add_argument("prompt", metavar="PROMPT", help="the prompt's name")
    prompt.add_argument("pairs", nargs="*", metavar="k=v", help="an argument of the prompt")


def run_read(args: argparse.Namespace, settings: Settings) -> int:
    return _with_server(args, settings, lambda manager, name: manager.read_resource(name, args.uri))


def run_prompt(args: argparse.Namespace, settings: Settings) -> int:
    arguments = {}
    for pair in args.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            sys.stderr.write("usage: sage tools prompt NAME PROMPT [k=v …]\n"
                             f"sage tools prompt: error: arguments are k=v, got '{pair}'\n")
            return 2
        arguments[key] = value
    text = json.dumps(arguments, ensure_ascii=False)
    return _with_server(args, settings, lambda manager, name: manager.get_prompt(name, args.prompt, text))


def _with_server(args: argparse.Namespace, settings: Settings, action: Callable[[ConnectionPool, str], str]) -> int:
    from ..mcp.elicitation import TerminalElicitation
    from ..mcp.pool import ConnectionPool
    from ..mcp.failures import McpFailure
    from .tools_target import report
    report(settings.tool_diagnostics)
    # NAME is matched as the builtins match it (the exact key, else the one case-insensitive match).
    manager = ConnectionPool(settings.root, settings.tools.servers, settings.mcp, elicitation=TerminalElicitation())
    try:
        text = action(manager, args.name)
    except McpFailure as failure:
        sys.stderr.write(f"error: {failure.display()}\n")
        return 1
    finally:
        manager.close_all()
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
