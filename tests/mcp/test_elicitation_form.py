"""The terminal elicitation form validates every answer against its property schema and shows the whole form,
limits included, before asking to accept (SPEC §8.7, issue 17); a server that pushes its questions with
`ctx.elicit` on the modern era gets a hint instead of a bare -32600. Against a real SDK server under `sage run`."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sagepy.mcp.elicitation import field_summary, schema_refusal

REPO = Path(__file__).resolve().parent.parent.parent
BOOKING = REPO / "tests" / "mcp" / "servers" / "booking.py"
PROGRAM = """\
tool Booking { fn book(day: String) -> String }
agent Main {
    use Booking
    on start {
        print(try Booking.book("Friday"));
    }
}
run Main;
"""


def sage_run(root: Path, protocol: str, answers: str, program: str = PROGRAM) -> subprocess.CompletedProcess:
    (root / "grove.toml").write_text(textwrap.dedent(f"""\
        [mcp]
        elicitation = "prompt"
        [tools.Booking]
        command = "{sys.executable}"
        args = ["{BOOKING}"]
        protocol = "{protocol}"
        """), encoding="utf-8")
    (root / "main.sg").write_text(program, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "sagepy", "run", "main.sg"], cwd=root, env=env, input=answers,
                          capture_output=True, text=True, timeout=120)


def test_bad_answers_are_refused_with_the_reason_and_asked_again(tmp_path):
    done = sage_run(tmp_path, "legacy", "a\nx\nAda\nnot-an-email\nada@example.com\n9\n3\n")
    assert (done.returncode, done.stdout) == (0, "booked Ada <ada@example.com> for 3\n"), done.stderr
    err = done.stderr
    overview = ("MCP server 'Booking' asks: Book a table on Friday?\n"
                "  name (required): string, at least 3 characters - Who the table is for\n"
                "  email (required): string, format email\n"
                "  guests: integer, at least 1, at most 4, default 2\n"
                "accept / decline / cancel? [a/d/c] ")
    assert err.startswith(overview), err
    refusals = [line.split(": ", 1)[1] for line in err.splitlines() if line.endswith("; try again")]
    assert refusals == ["  must be at least 3 characters long; try again", "  not a valid email; try again",
                        "  must be at most 4; try again"]


def test_an_empty_answer_takes_the_default(tmp_path):
    done = sage_run(tmp_path, "legacy", "accept\nGrace\ngrace@example.com\n\n")
    assert (done.returncode, done.stdout) == (0, "booked Grace <grace@example.com> for 2\n"), done.stderr


def test_decline_after_seeing_the_form(tmp_path):
    done = sage_run(tmp_path, "legacy", "d\n")
    assert (done.returncode, done.stdout) == (0, "decline\n"), done.stderr
    assert "guests: integer, at least 1, at most 4, default 2\naccept / decline / cancel?" in done.stderr


def test_a_pushed_question_on_the_modern_era_names_the_setting(tmp_path):
    done = sage_run(tmp_path, "auto", "")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[0] == (
        "error: unhandled error in agent Main#0: MCP protocol error: server 'Booking' can only ask questions "
        'over the legacy protocol; set protocol = "legacy" in [tools.Booking]')


def test_a_dynamic_connection_gets_the_same_hint(tmp_path):
    program = f"""\
agent Main {{
    on start {{
        let h = try mcp_connect('{{"command": "{sys.executable}", "args": ["{BOOKING}"]}}');
        print(try mcp_call(h, "book", '{{"day": "Friday"}}'));
    }}
}}
run Main;
"""
    done = sage_run(tmp_path, "auto", "", program)
    assert done.returncode == 1, done.stderr
    assert ("mcp_call 'book' failed: MCP protocol error: server 'mcp:1' can only ask questions over the legacy "
            'protocol; set "protocol": "legacy" in its mcp_connect configuration') in done.stderr, done.stderr


@pytest.mark.parametrize("value, schema, reason", [
    ("not-an-email", {"type": "string", "format": "email"}, "not a valid email"),
    (9, {"type": "integer", "maximum": 4}, "must be at most 4"),
    ("x", {"type": "string", "minLength": 3}, "must be at least 3 characters long"),
    ("2026-02-30", {"type": "string", "format": "date"}, "not a valid date"),
    ("abc", {"type": "string", "pattern": "^[0-9]+$"}, "must match ^[0-9]+$"),
    (0.5, {"type": "number", "exclusiveMinimum": 0.5}, "must be more than 0.5"),
])
def test_schema_refusals(value, schema, reason):
    assert schema_refusal(value, schema) == reason


@pytest.mark.parametrize("value, schema", [
    ("ada@example.com", {"type": "string", "format": "email"}),
    (4, {"type": "integer", "maximum": 4}),
    ("abc", {"type": "string", "minLength": 3}),
    ("x", {"type": "string", "minLength": "three"}),   # a broken schema is left to the server to judge
])
def test_schema_acceptances(value, schema):
    assert schema_refusal(value, schema) is None


def test_field_summaries():
    assert field_summary("size", {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
                         False) == "size: one of Small, Medium"
    assert field_summary("when", {"title": "Arrival", "type": "string", "format": "date"}, True) == \
        "when (Arrival) (required): string, format date"
    assert field_summary("note", {}, False) == "note: any value"
