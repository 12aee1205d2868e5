"""Work that must grow linearly with n (issue 18): checking a template of n interpolations, and loops of n
`xs = push(xs, i)`, `xs = concat(xs, [i])`, `map_set(m, k, v)` and one `unique` of n values.

For each case the script times sizes 0, n and 2n and prints the ratio (t(2n) - t(0)) / (t(n) - t(0)): about 2
for linear work, about 4 for quadratic. Templates are parsed and checked in-process (`parse_source` + the checker, no start-up
in the figure); the loops run as Sage programs that time themselves with `now_ms()` around the loop, so only
the loop is measured. Medians of `--runs` rounds; nothing is asserted.

    python bench/linear.py [--runs N] [--n N] [--loop-n N] [--repo PATH]

`--repo` measures another checkout of sagepy (e.g. one from before a change) with the same cases.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LOOPS = {
    "push": ("let xs: List<Int> = [];", "xs = push(xs, i);", "len(xs)"),
    "concat": ("let xs: List<Int> = [];", "xs = concat(xs, [i]);", "len(xs)"),
    "map_set": ("let m: Map<String, Int> = {};", 'map_set(m, "k{i}", i);', "len(m)"),
    "unique": ("let xs = range(0, N);", "", "len(unique(concat(xs, xs)))"),
}

LOOP_PROGRAM = """\
agent Main {{
    on start {{
        {setup}
        let started = now_ms();
        for i in range(0, {n}) {{
            {step}
        }}
        let size = {size};
        print("{{now_ms() - started}} {{size}}");
    }}
}}
run Main;
"""

TEMPLATE_CHECK = """\
import sys, time
sys.path.insert(0, sys.argv[1])
from sagepy.syntax.parser import parse_source
from sagepy.loader import load_program
from sagepy.check import check_program
path = sys.argv[2]
started = time.perf_counter()
program = load_program(path)
assert not program.diagnostics, program.diagnostics
assert not [d for d in check_program(program, tools={{}}, test_file=False) if d.severity == "error"]
print(int((time.perf_counter() - started) * 1000))
"""


def template_source(n: int, part: str) -> str:
    return f'agent Main {{\n    on start {{\n        let x = 1;\n        print("{part * n}");\n    }}\n}}\nrun Main;\n'


def run_ms(command: list[str], cwd: Path, env: dict) -> int:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return int(result.stdout.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=20000, help="interpolations of the template cases")
    parser.add_argument("--loop-n", type=int, default=200000, help="iterations of the loop cases")
    parser.add_argument("--repo", type=Path, default=REPO)
    args = parser.parse_args()
    repo = args.repo.resolve()
    work = Path(tempfile.mkdtemp(prefix="sage-linear-"))
    env = dict(os.environ, PYTHONPATH=str(repo), SAGE_CACHE_DIR=str(work / "cache"), SAGE_NO_CACHE="1")
    (work / "check.py").write_text(TEMPLATE_CHECK.format(), encoding="utf-8")
    cases: dict[str, list[list[str]]] = {}
    for label, part in (("template {x}", "{x}"), ("template {x + 1}", "{x + 1}")):
        sizes = []
        for k in (0, 1, 2):
            path = work / f"t{k}-{len(part)}.sg"
            path.write_text(template_source(args.n * k, part), encoding="utf-8")
            sizes.append([sys.executable, str(work / "check.py"), str(repo), str(path)])
        cases[label] = sizes
    for label, (setup, step, size) in LOOPS.items():
        sizes = []
        for k in (0, 1, 2):
            n = args.loop_n * k
            path = work / f"{label}{k}.sg"
            path.write_text(LOOP_PROGRAM.format(setup=setup.replace("N", str(n)), n=n if step else 0, step=step,
                                                size=size), encoding="utf-8")
            sizes.append([sys.executable, "-m", "sagepy", "run", str(path)])
        cases[label] = sizes
    print(f"sagepy at {repo}; n = {args.n} interpolations, {args.loop_n} iterations; medians of {args.runs} runs (ms)")
    print(f"{'case':<18} {'t(0)':>8} {'t(n)':>8} {'t(2n)':>8} {'ratio':>6}")
    for label, commands in cases.items():
        times: list[list[int]] = [[], [], []]
        for _ in range(args.runs):
            for k, command in enumerate(commands):
                times[k].append(run_ms(command, work, env))
        base, one, two = (statistics.median(t) for t in times)
        ratio = (two - base) / max(one - base, 1)
        print(f"{label:<18} {base:>8.0f} {one:>8.0f} {two:>8.0f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
