"""A queued run that needs a person (SPEC §14.2, §17.3, §17.4): the worker's run pauses (`run <id>: paused`),
`sage runs approve` queues it again, and a worker finishes it, with the approved call made once."""
from __future__ import annotations

from pathlib import Path

from people_harness import project, runs, sage

PROGRAM = """\
agent Main {
    use Shell;
    on start {
        try Shell.run("echo refund >> ledger.txt");
        let who = try ask("Who approved the refund?");
        print("refunded, approved by {who}");
    }
}
run Main;
"""


def test_worker_pauses_approve_requeues_worker_finishes(tmp_path: Path) -> None:
    root = project(tmp_path, '[persistence]\n\n[approvals]\ncalls = "all"\nShell = "destructive"\n',
                   {"main.sg": PROGRAM})
    submitted = sage(root, "runs", "submit")
    assert submitted.returncode == 0, submitted.stderr
    rid = submitted.stdout.strip()

    first = sage(root, "worker", "--drain")
    assert first.returncode == 0, first.stderr
    assert f"run {rid}: paused" in first.stderr.splitlines()
    assert "paused: " not in first.stderr   # the run's own lines are stored with the run, not printed
    code, out, _ = runs(root, "list")
    assert "  paused  5  main.sg" in out
    assert not (root / "ledger.txt").exists()

    code, out, err = runs(root, "approve", rid, "Main:1")
    assert code == 0, err
    assert out == f"approved Main:1 of run {rid}; the run is queued again for a worker\n"
    assert "  queued  " in runs(root, "list")[1]

    second = sage(root, "worker", "--drain")
    assert second.returncode == 0, second.stderr
    assert f"run {rid}: resumed" in second.stderr.splitlines()   # queued again, with a journal: it carries on
    assert f"run {rid}: paused" in second.stderr.splitlines()   # now at the question
    assert (root / "ledger.txt").read_text() == "refund\n"
    code, out, err = runs(root, "answer", rid, "Main:3", "Ada")
    assert out == f"answered Main:3 of run {rid}; the run is queued again for a worker\n", err

    third = sage(root, "worker", "--drain")
    assert third.returncode == 0, third.stderr
    assert f"run {rid}: completed (exit 0)" in third.stderr.splitlines()
    assert (root / "ledger.txt").read_text() == "refund\n"   # the approved call ran once
    logs = sage(root, "runs", "logs", rid)
    assert "refunded, approved by Ada" in logs.stdout
    assert "needs approval (Main step 1)" in logs.stderr


def test_a_paused_run_answered_from_another_checkout_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    toml = '[persistence]\nbackend = "postgres"\n\n[approvals]\ncalls = "all"\nShell = "destructive"\n'
    files = {"main.sg": PROGRAM}
    first = project(tmp_path / "a", toml, files)
    second = project(tmp_path / "b", toml, files)
    for root in (first, second):   # runs are keyed by the project's name, the same in both checkouts
        grove = root / "grove.toml"
        grove.write_text(grove.read_text().replace("[project]\n", '[project]\nname = "refunds"\n'))
    paused = sage(first, "run", SAGE_STATE_URL=pg_url)
    assert paused.returncode == 5, paused.stderr
    rid = next(line.split()[-1] for line in paused.stderr.splitlines() if line.startswith("run id: "))
    approved = sage(second, "runs", "approve", rid, "Main:1", SAGE_STATE_URL=pg_url)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout == f"approved Main:1 of run {rid}; continue with `sage run --resume {rid}`\n"
    asked = sage(second, "run", "--resume", rid, SAGE_STATE_URL=pg_url)
    assert asked.returncode == 5, asked.stderr
    assert f"paused: question for a person (Main step 3): Who approved the refund?; answer with 'sage runs " \
           f"answer {rid} Main:3 TEXT', then resume" in asked.stderr
    assert sage(first, "runs", "answer", rid, "Main:3", "Grace", SAGE_STATE_URL=pg_url).returncode == 0
    done = sage(first, "run", "--resume", rid, SAGE_STATE_URL=pg_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "refunded, approved by Grace\n"
    assert (second / "ledger.txt").read_text() == "refund\n" and not (first / "ledger.txt").exists()
    shown = sage(second, "runs", "show", rid, SAGE_STATE_URL=pg_url).stdout
    assert "  1 approval Shell.run read_only done {\"approved\": true" in shown
    assert '  3 io ask read_only done "Grace"' in shown
