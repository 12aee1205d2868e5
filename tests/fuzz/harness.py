"""The fuzz campaign: inputs from the generator and the mutator, run through a worker pool, classified, bad
ones reduced and written to the findings folder, and a summary.

Outcomes: `ok`, `diagnostic` (a coded checker error), `runtime-error` (the program failed with a Sage error),
`timeout` (the program ran past the budget) are fine; `internal` (a Python exception escaped, or
`internal error` was printed), `crash` (a worker died, e.g. SIGSEGV) and `slow` (checking took longer than
the slow threshold) are findings.
"""
from __future__ import annotations

import hashlib
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from .generate import generate_program
from .mutate import load_corpus, mutate
from .pool import Job, Pool, Result
from .reduce import reduce_input

FINDINGS = ("internal", "crash", "slow")
DEFAULT_FINDINGS_DIR = Path(__file__).resolve().parent / "findings"


def make_inputs(seed: int, count: int) -> Iterator[tuple[str, Job]]:
    """`count` inputs from `seed`, each a pure function of (seed, index): half generated programs, half
    mutated corpus files (whose name keeps a test file a test file)."""
    corpus = load_corpus()
    for index in range(count):
        rng = random.Random(f"{seed}:{index}")
        if rng.random() < 0.5:
            yield "generated", Job(index, "main.sg", generate_program(rng))
        else:
            name, source = rng.choice(corpus)
            _, other = rng.choice(corpus)
            how, mutated = mutate(rng, source, other)
            entry = "main_test.sg" if name.endswith("_test.sg") else "main.sg"
            yield f"{how}({name})", Job(index, entry, mutated)


def signature(result: Result) -> str:
    """What makes two findings the same bug: the outcome, the phase and the error's first line with the
    numbers taken out, or for a traceback the exception line."""
    detail = result.detail.strip().splitlines()
    if result.outcome == "internal" and detail:
        line = detail[-1] if detail[0].startswith("Traceback") else detail[0]
    elif result.outcome == "crash" and detail:
        line = detail[0]
    else:
        line = ""
    line = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    return f"{result.outcome}/{result.phase}: {line[:160]}"


@dataclass
class Summary:
    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    distinct: dict[str, tuple[Result, str, Path | None]] = field(default_factory=dict)
    slowest: Result | None = None
    slowest_origin: str = ""

    def findings(self, kind: str) -> int:
        return self.outcomes[kind]

    def text(self) -> str:
        lines = [f"inputs run: {self.inputs}",
                 "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
                 f"internal errors: {self.outcomes['internal']}, crashes: {self.outcomes['crash']}, "
                 f"slow: {self.outcomes['slow']}"]
        if self.slowest is not None:
            lines.append(f"slowest input: #{self.slowest.job.key} {self.slowest_origin}: "
                         f"{self.slowest.seconds:.2f} s ({self.slowest.outcome})")
        for sig, (result, origin, path) in self.distinct.items():
            where = f" -> {path}" if path else ""
            lines.append(f"  {sig}  [first: #{result.job.key} {origin}]{where}")
        return "\n".join(lines)


class Campaign:
    def __init__(self, workers: int = 1, budget: float = 10.0, slow_seconds: float = 5.0,
                 findings_dir: Path | None = DEFAULT_FINDINGS_DIR, reduce_attempts: int = 1000,
                 reduce_seconds: float = 60.0, progress: Callable[[str], None] | None = None) -> None:
        self.pool = Pool(workers, budget)
        self.slow_seconds = slow_seconds
        self.findings_dir = findings_dir
        self.reduce_attempts = reduce_attempts
        self.reduce_seconds = reduce_seconds
        self.progress = progress

    def close(self) -> None:
        self.pool.close()

    def classify(self, result: Result) -> Result:
        if result.outcome not in FINDINGS and result.check_s > self.slow_seconds:
            result.detail = f"checking took {result.check_s:.1f} s"
            result.outcome, result.phase = "slow", "check"
        return result

    def run(self, seed: int, count: int, seconds: float | None = None) -> Summary:
        """Run `count` inputs of `seed`, or fewer if `seconds` pass first."""
        summary = Summary()
        origins: dict[int, str] = {}
        deadline = None if seconds is None else time.monotonic() + seconds

        def jobs() -> Iterator[Job]:
            for origin, job in make_inputs(seed, count):
                if deadline is not None and time.monotonic() > deadline:
                    return
                origins[job.key] = origin
                yield job

        bad: list[tuple[Result, str]] = []
        for result in self.pool.run(jobs()):
            result = self.classify(result)
            origin = origins.pop(result.job.key)
            summary.inputs += 1
            summary.outcomes[result.outcome] += 1
            if result.outcome != "timeout" and (summary.slowest is None
                                                or result.seconds > summary.slowest.seconds):
                summary.slowest, summary.slowest_origin = result, origin
            if result.outcome in FINDINGS:
                sig = signature(result)
                if sig not in summary.distinct:
                    summary.distinct[sig] = (result, origin, None)
                    bad.append((result, origin))
                    if self.progress:
                        self.progress(f"new finding #{result.job.key} {origin}: {sig}")
            if self.progress and summary.inputs % 1000 == 0:
                self.progress(f"{summary.inputs} inputs, internal {summary.outcomes['internal']}, "
                              f"crash {summary.outcomes['crash']}, slow {summary.outcomes['slow']}")
        if self.findings_dir is not None:
            for result, origin in bad:
                sig = signature(result)
                summary.distinct[sig] = (result, origin, self.record(result, origin, sig))
        return summary

    def same_failure(self, name: str, sig: str) -> Callable[[bytes], bool]:
        def still_fails(source: bytes) -> bool:
            return signature(self.classify(self.pool.run_one(Job(-1, name, source)))) == sig
        return still_fails

    def record(self, result: Result, origin: str, sig: str) -> Path:
        """Write the input, its reduced form and what happened to a folder of the findings directory."""
        assert self.findings_dir is not None
        digest = hashlib.sha256(sig.encode()).hexdigest()[:10]
        folder = self.findings_dir / f"{result.outcome}-{digest}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / result.job.name).write_bytes(result.job.source)
        reduced = result.job.source
        if result.outcome != "slow":  # reducing a slow input costs a budget per attempt
            reduced = reduce_input(result.job.source, self.same_failure(result.job.name, sig),
                                   self.reduce_attempts, self.reduce_seconds)
        (folder / f"reduced_{result.job.name}").write_bytes(reduced)
        (folder / "finding.txt").write_text(
            f"signature: {sig}\norigin: #{result.job.key} {origin}\noutcome: {result.outcome} "
            f"({result.phase}, check {result.check_s:.2f} s, run {result.run_s:.2f} s)\n"
            f"reduced: {len(result.job.source)} -> {len(reduced)} bytes\n\n{result.detail}\n", encoding="utf-8")
        return folder
