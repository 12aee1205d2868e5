"""CI smoke run of the fuzz harness: a fixed seed, a few hundred inputs, no internal error and no crash.

The long run is by hand: `python -m tests.fuzz --count 100000 --seed N` (tests/fuzz/__main__.py).
"""
from __future__ import annotations

from tests.fuzz.harness import Campaign
from tests.fuzz.pool import Job, Pool
from tests.fuzz.worker import internal_evidence

SMOKE_SEED = 18
SMOKE_COUNT = 200


def test_smoke_seed_has_no_internal_error_or_crash() -> None:
    campaign = Campaign(workers=2, budget=20.0, slow_seconds=float("inf"), findings_dir=None)
    try:
        summary = campaign.run(SMOKE_SEED, SMOKE_COUNT)
    finally:
        campaign.close()
    assert summary.inputs == SMOKE_COUNT
    assert summary.findings("internal") == 0 and summary.findings("crash") == 0, summary.text()


def test_the_classifier_sees_an_internal_error_a_crash_and_a_clean_run() -> None:
    """The harness must be able to fail: a worker killed by a signal is a crash, a program that checks and
    runs is ok, and a coded diagnostic is fine."""
    with Pool(1, budget=20.0) as pool:
        clean = pool.run_one(Job(0, "main.sg", b"agent Main { on start { print(1 + 2); } }\nrun Main;\n"))
        coded = pool.run_one(Job(1, "main.sg", b"agent Main { on start { print(nope); } }\nrun Main;\n"))
        failed = pool.run_one(Job(2, "main.sg", b"agent Main { on start { print(1 / 0); } }\nrun Main;\n"))
        crashed = pool.run_one(Job(3, "main.sg", b"", run=True, crash=True))
    assert (clean.outcome, clean.phase) == ("ok", "run")
    assert coded.outcome == "diagnostic"
    assert failed.outcome == "runtime-error"
    assert crashed.outcome == "crash" and "SIGSEGV" in crashed.detail


def test_internal_error_evidence() -> None:
    assert internal_evidence("", "internal error: ValueError: x\n  = help: this is a bug\n", None) \
        == "internal error: ValueError: x"
    assert internal_evidence("", "error: unhandled error in agent Main#0: Runtime error: internal error: "
                             "ValueError: math domain error\n", None) is not None
    assert internal_evidence("internal error", "error[E010]: undefined name `x`\n", None) is None
    quoted = ("error[E005]: unexpected `/`\n --> main.sg:1:1\n  |\n"
              "1 | / raises E206 (no internal error: ValueError: x).\n")
    assert internal_evidence("", quoted, None) is None   # the input's own text, quoted by a diagnostic
    assert internal_evidence("", "", "Traceback (most recent call last):\nRecursionError\n") is not None


def test_a_refused_format_is_a_finding() -> None:
    from tests.fuzz.worker import _unsafe_format
    assert _unsafe_format("error: internal error: formatting would change main.sg\n") is not None
    assert _unsafe_format("error[E005]: unexpected `(`\n 3 | // internal error: formatting would change\n") is None
