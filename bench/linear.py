"""Work that must grow linearly with n (issues 18 and 28): checking a template of n interpolations, loops of n
`xs = push(xs, i)`, `xs = concat(xs, [i])`, `map_set(m, k, v)` and one `unique` of n values, and whole
`sage check` runs (parse, check and the report) of long files: one handler of n `let x<i> = x<i-1> + 1;`
lines, n one-line `fn` declarations, one line holding n unterminated interpolations (n E007 diagnostics on
that line), and one string literal of 1,000·n characters.

For each case the script times sizes 0, n and 2n and prints the ratio (t(2n) - t(0)) / (t(n) - t(0)): about 2
for linear work, about 4 for quadratic. Templates are parsed and checked in-process (`parse_source` + the checker, no start-up
in the figure); the loops run as Sage programs that time themselves with `now_ms()` around the loop, so only
the loop is measured; the `sage check` cases are timed by the CPU time (user + system) of the child process,
which a loaded machine disturbs less than the wall clock, with the AST cache off. Medians of `--runs` rounds;
nothing is asserted.

    python bench/linear.py [--runs N] [--n N] [--loop-n N] [--lines N] [--repo PATH]

`--repo` measures another checkout of sagepy (e.g. one from before a change) with the same cases.
"""
from __future__ import annotations

import argparse
import os
import resource
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


# Long files for whole `sage check` runs: the text of size n, and the exit code `sage check` must give (the E007
# line fails at every size: n + 1 diagnostics).
CHECK_SHAPES = {
    "check: let chain": (lambda n: "agent Main {\n    on start {\n        let x0 = 0;\n"
                         + "".join(f"        let x{i} = x{i - 1} + 1;\n" for i in range(1, n + 1))
                         + f"        print(x{n});\n    }}\n}}\nrun Main;\n", 0),
    "check: fn decls": (lambda n: "".join(f"fn f{i}() -> Int {{ return {i}; }}\n" for i in range(n))
                        + "agent Main {\n    on start {\n        print(1);\n    }\n}\nrun Main;\n", 0),
    "check: E007 line": (lambda n: 'agent Main {\n    on start {\n        print("{"' + ' + "{' * n + ');\n'
                         "    }\n}\nrun Main;\n", 1),
    "check: long string": (lambda n: 'agent Main {\n    on start {\n        let s = "' + "a" * (1000 * n)
                           + '";\n        print(str_len(s));\n    }\n}\nrun Main;\n', 0),
}


def run_ms(command: list[str], cwd: Path, env: dict) -> int:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return int(result.stdout.split()[0])


def check_cpu_ms(command: list[str], cwd: Path, env: dict, exit_code: int) -> int:
    """The CPU time of one `sage check` child, which must end with `exit_code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != exit_code:
        raise SystemExit(f"failed (exit {result.returncode}): {' '.join(command)}\n{result.stderr[-2000:]}")
    return int(1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=20000, help="interpolations of the template cases")
    parser.add_argument("--loop-n", type=int, default=200000, help="iterations of the loop cases")
    parser.add_argument("--lines", type=int, default=10000, help="lines (or diagnostics) of the sage check cases")
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
    checks: dict[str, tuple[list[list[str]], int]] = {}
    for label, (source, exit_code) in CHECK_SHAPES.items():
        sizes = []
        for k in (0, 1, 2):
            path = work / f"{label.split()[-1]}{k}.sg"
            path.write_text(source(args.lines * k), encoding="utf-8")
            sizes.append([sys.executable, "-m", "sagepy", "check", str(path)])
        checks[label] = (sizes, exit_code)
    print(f"sagepy at {repo}; n = {args.n} interpolations, {args.loop_n} iterations, {args.lines} lines; "
          f"medians of {args.runs} runs (ms)")
    print(f"{'case':<20} {'t(0)':>8} {'t(n)':>8} {'t(2n)':>8} {'ratio':>6}")
    measures = {label: (lambda c: run_ms(c, work, env)) for label in cases}
    for label, (commands, exit_code) in checks.items():
        cases[label] = commands
        measures[label] = lambda c, e=exit_code: check_cpu_ms(c, work, env, e)
    for label, commands in cases.items():
        times: list[list[int]] = [[], [], []]
        for _ in range(args.runs):
            for k, command in enumerate(commands):
                times[k].append(measures[label](command))
        base, one, two = (statistics.median(t) for t in times)
        ratio = (two - base) / max(one - base, 1)
        print(f"{label:<20} {base:>8.0f} {one:>8.0f} {two:>8.0f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
