"""The client under test of the official MCP conformance suite: `sage` itself, as a new user runs it.

The suite starts a scenario's server, then runs `client.py <server-url>` with MCP_CONFORMANCE_SCENARIO (and,
for the scenarios with credentials, MCP_CONFORMANCE_CONTEXT) set. This adapter writes a scratch project
whose grove.toml has one `[tools.Conformance]` entry for that URL, with the keys the scenario calls for, and
runs one `sage tools inspect` or `sage tools call` in it; its exit code is sage's.

Two scenarios pass only when the client *refuses* (a protected resource that names another server, a
scope step-up that can never succeed). For those the adapter exits 0 exactly when sage refused with an
`MCP auth error`, as the suite's own runner of a whole suite judges (it ignores the exit code, while its
single-scenario runner counts every non-zero exit as a failure).

Secrets from the context go to sage through environment variables named by the grove.toml keys, never into
the file. The browser of the authorisation-code flow is tests/mcp/servers/oauth_open.py (SAGE_OAUTH_OPEN),
which follows the authorisation URL: the suite's authorisation servers approve at once.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OPENER = os.path.join(HERE, os.pardir, "mcp", "servers", "oauth_open.py")
# The Client ID Metadata Document URL the basic-cimd scenario's authorisation server expects as client_id
# (CIMD_CLIENT_METADATA_URL in the suite's src/scenarios/client/auth/basic-cimd.ts).
CIMD_URL = "https://conformance-test.local/client-metadata.json"

INSPECT = ["tools", "inspect", "Conformance"]
CALL_TEST_TOOL = ["tools", "call", "Conformance.test-tool"]
# How long one sage command may take: less than the suite's client timeout (tests/conformance sets 60 s).
SAGE_TIMEOUT_S = 50
# The scenarios where the right answer is a refusal.
REFUSALS = ("auth/resource-mismatch", "auth/scope-retry-limit")


def _oauth(scenario: str, context: dict, env: dict) -> list[str]:
    """The [tools.Conformance] keys of an auth/* scenario (secrets go into `env`)."""
    keys = ['auth = "oauth"']
    if "client_id" in context:
        env["CONFORMANCE_CLIENT_ID"] = context["client_id"]
        keys.append('client_id_env = "CONFORMANCE_CLIENT_ID"')
    if "client_secret" in context:
        env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        keys.append('client_secret_env = "CONFORMANCE_CLIENT_SECRET"')
    if "private_key_pem" in context:
        env["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
        keys.append('private_key_file = "$CONFORMANCE_PRIVATE_KEY"')
        if context.get("signing_algorithm"):
            keys.append(f"signing_algorithm = {json.dumps(context['signing_algorithm'])}")
    if scenario.startswith("auth/client-credentials-"):
        keys.append('grant = "client_credentials"')
    if scenario == "auth/basic-cimd":
        keys.append(f"client_metadata_url = {json.dumps(CIMD_URL)}")
    return keys


# scenario -> (extra [tools.Conformance] keys, sage command); auth/* scenarios not listed call test-tool.
SCENARIOS: dict[str, tuple[list[str], list[str]]] = {
    "initialize": ([], INSPECT),
    "tools_call": ([], ["tools", "call", "Conformance.add_numbers", "a=2", "b=3"]),
    "elicitation-sep1034-client-defaults": (['elicitation = "defaults"'],
                                            ["tools", "call", "Conformance.test_client_elicitation_defaults"]),
    "sse-retry": ([], ["tools", "call", "Conformance.test_reconnection"]),
    # The client-credentials scenarios' servers offer no tool to call: listing them is the test.
    "auth/client-credentials-basic": ([], INSPECT),
    "auth/client-credentials-jwt": ([], INSPECT),
}


def plan(scenario: str, context: dict, env: dict) -> tuple[list[str], list[str]]:
    """The grove.toml keys and the sage command of a scenario. Raises KeyError for an unknown scenario."""
    if scenario in SCENARIOS:
        keys, command = SCENARIOS[scenario]
    elif scenario.startswith("auth/"):
        keys, command = [], CALL_TEST_TOOL
    else:
        raise KeyError(scenario)
    if scenario.startswith("auth/"):
        keys = keys + _oauth(scenario, context, env)
    return keys, command


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    env = dict(os.environ)
    env["SAGE_OAUTH_OPEN"] = f"{shlex.quote(sys.executable)} {shlex.quote(OPENER)}"
    try:
        keys, command = plan(scenario, context, env)
    except KeyError:
        sys.stderr.write(f"client.py: no mapping for scenario '{scenario}'\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="sage-conformance-") as project:
        with open(os.path.join(project, "grove.toml"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(['[project]', 'name = "conformance"', "", "[tools.Conformance]",
                                f"url = {json.dumps(url)}", *keys]) + "\n")
        try:
            result = subprocess.run([sys.executable, "-m", "sagepy", *command], cwd=project, env=env,
                                    stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                    timeout=SAGE_TIMEOUT_S)
        except subprocess.TimeoutExpired as expired:
            # Said here, and within the suite's own client timeout: the runner would otherwise wait for
            # a sage it cannot kill (it stops only this script) and report nothing.
            sys.stderr.write(f"{expired.stderr or ''}client.py: sage did not finish within {SAGE_TIMEOUT_S} s\n")
            return 1
    sys.stderr.write(result.stderr)
    if scenario in REFUSALS:
        refused = result.returncode == 1 and "error: MCP auth error: " in result.stderr
        sys.stderr.write(f"client.py: sage {'refused' if refused else 'did not refuse'}, as the scenario "
                         f"{'expects' if refused else 'requires'}\n")
        return 0 if refused else 1
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
