"""The `[approvals]` policy at check time (SPEC §17.1, §11): invalid values are E090 pointing into grove.toml,
a key that names no tool of the program is W085 (it may be a dynamic connection's name), and patterns match
as SPEC says."""
from __future__ import annotations

from pathlib import Path

from people_harness import project, sage

from sagepy.approval_policy import ApprovalPolicy, Rule, pattern

PROGRAM = """\
tool Tracker {
    fn search(q: String) -> String
}
agent Main {
    on start {
        print("hi");
    }
}
run Main;
"""


def test_invalid_values_are_e090(tmp_path: Path) -> None:
    root = project(tmp_path, """\
        [approvals]
        calls = "some"
        prompt = true
        Fs = "sometimes"
        Shell = []
        Http = ["get", 3]
        """, {"main.sg": PROGRAM})
    r = sage(root, "check")
    assert r.returncode == 1
    err = r.stderr
    assert 'grove.toml: [approvals] calls must be one of "model", "all", found "some"' in err
    assert 'grove.toml: [approvals] prompt must be one of "auto", "never", found a boolean' in err
    assert ('grove.toml: [approvals] Fs must be "destructive", "always" or an array of function names, '
            'found "sometimes"') in err
    assert "[approvals] Shell must be" in err and "found an empty array" in err
    assert "[approvals] Http must be" in err and "found an array with an element that is not a function name" in err
    assert err.count("error[E090]") == 5
    assert "--> grove.toml:6:1" in err   # the Fs line
    assert "check failed: 5 errors" in err


def test_unknown_keys_are_w085(tmp_path: Path) -> None:
    root = project(tmp_path, """\
        [approvals]
        Tracker = "always"
        Fs = ["write"]
        Billing = "destructive"
        github = ["delete_*"]
        calls = "all"

        [tools.Billing]
        command = "billing-server"
        """, {"main.sg": PROGRAM})
    r = sage(root, "check")
    assert r.returncode == 0, r.stderr
    assert ("warning[W085]: [approvals] github names no tool of this program; it applies only to a dynamic "
            "connection of that name") in r.stderr
    assert "--> grove.toml:7:1" in r.stderr
    assert r.stderr.count("W085") == 1
    assert "check passed: 1 file, 2 warnings" in r.stdout   # W084 for Tracker too


def test_matching() -> None:
    assert pattern("delete_*").fullmatch("delete_")
    assert pattern("delete_*").fullmatch("delete_repo")
    assert not pattern("delete_*").fullmatch("undelete_repo")
    assert pattern("*.*").fullmatch("a.b") and not pattern("*.*").fullmatch("ab")
    assert pattern("a*b*c").fullmatch("abc") and pattern("a*b*c").fullmatch("aXXbYc")
    assert not pattern("get").fullmatch("get_all")
    policy = ApprovalPolicy()
    policy.rules = {"Fs": Rule("names", (pattern("w*"),)), "Shell": Rule("destructive"), "gh": Rule("always")}
    asked = []

    def safety() -> str:
        asked.append(1)
        return "destructive"
    assert not policy.needs(("Fs",), "write", "program", safety)   # calls = "model"
    assert policy.needs(("Fs",), "write", "model", safety)
    assert not policy.needs(("Fs",), "read", "model", safety)
    assert asked == []   # the class is looked up only for a "destructive" rule
    assert policy.needs(("Shell",), "run", "model", safety) and asked == [1]
    assert policy.needs(("other", "gh"), "anything", "model", safety)
    policy.calls = "all"
    assert policy.needs(("Fs",), "write", "program", safety)
