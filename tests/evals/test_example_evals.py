"""examples/evals: the triage agent's eval runs offline from its committed cassettes with the scores docs/evals.md
shows, and recording it again against the model API test server (answering as the cassettes say a model did)
gives the committed cassettes byte for byte, so they stay those of the program as it is.

Run this file with Python to record the cassettes again after changing the example:
`python tests/evals/test_example_evals.py`.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from conftest import REPO, sage, sage_env
from fake_openai import FakeOpenAI, Request, reply

EXAMPLES = REPO / "examples"
SUMMARY = "Stability: #7 Crash on save\nSpeed: #9 Slow start-up"


def model_answer(request: Request):
    """What the recorded model answered: a grouping of the issues, and the judge's ratings."""
    prompt = request.messages[-1]["content"]
    if prompt.startswith("Group these issues"):
        return reply(SUMMARY, {"prompt_tokens": 31, "completion_tokens": 14})(request)
    rating = "1.0" if prompt.endswith("nothing to triage") else "0.85"
    return reply(rating, {"prompt_tokens": 180, "completion_tokens": 2})(request)


def _copy(tmp_path: Path) -> Path:
    for name in ("evals", "triage"):
        shutil.copytree(EXAMPLES / name, tmp_path / name, ignore=shutil.ignore_patterns(".sage", "__pycache__"))
    return tmp_path / "evals"


def record(target: Path, cwd: Path) -> None:
    with FakeOpenAI() as model:
        model.push(*[model_answer] * 5)
        done = sage("eval", ".", "--record", str(target), "--concurrency", "1", cwd=cwd,
                    env=sage_env(SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-example"))
    if done.returncode != 0:
        raise AssertionError(done.stdout + done.stderr)


def test_the_example_runs_offline_from_its_cassettes(tmp_path: Path) -> None:
    project = _copy(tmp_path)
    done = sage("eval", ".", "--replay", "cassettes", "--fail-under", "mentions=0.6", cwd=project, env=sage_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith('eval "triage summaries" (src/triage_eval.sg: 3 rows x 1 repeat)\n'
                                  "  score       mean   stdev\n"
                                  "  mentions   0.667   0.000\n"
                                  "  nothing    1.000   0.000\n"
                                  "  judged     0.900   0.000\n")
    assert "row 3 (repeat 1): mentions = false\n      value: 'Stability: #7 Crash on save\\nSpeed: #9" in done.stdout
    gated = sage("eval", ".", "--replay", "cassettes", "--fail-under", "mentions=0.9", cwd=project, env=sage_env())
    assert gated.returncode == 1 and 'gate failed: score "mentions"' in gated.stdout


def test_recording_again_gives_the_committed_cassettes(tmp_path: Path) -> None:
    project = _copy(tmp_path)
    record(tmp_path / "again", project)
    committed = sorted(p.relative_to(EXAMPLES / "evals" / "cassettes")
                       for p in (EXAMPLES / "evals" / "cassettes").rglob("*.jsonl"))
    fresh = sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*.jsonl"))
    assert fresh == committed and len(fresh) == 3
    for name in committed:
        assert (tmp_path / "again" / name).read_text() == (EXAMPLES / "evals" / "cassettes" / name).read_text(), name


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        project = _copy(Path(folder))
        shutil.rmtree(EXAMPLES / "evals" / "cassettes", ignore_errors=True)
        record(EXAMPLES / "evals" / "cassettes", project)
    sys.stdout.write(f"recorded {EXAMPLES / 'evals' / 'cassettes'}\n")
