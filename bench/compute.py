"""Interpreter speed: Sage against the same algorithms in plain Python, as a ratio (targets: fib <= 15x,
lists <= 10x).

Workloads:
  fib     recursive fib(25);
  lists   a list of 20,000 ints through map / filter / reduce, then a map updated with map_set 2,000 times.

Each round runs, interleaved: `sage run` of the workload, `sage run` of an empty program, the Python version
as a whole process, and the Python function in-process. Two ratios are printed:
  raw      sage run (workload) / python process (workload): what a user sees, start-up included;
  compute  (sage run workload - sage run empty) / python function: the interpreter's speed alone.
The AST cache is warmed before timing, so parsing is not measured.

    python bench/compute.py [--runs N]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, median_ms, require_success, sage_command, timed_run

TARGETS = {"fib": 15.0, "lists": 10.0}

EMPTY_SG = """\
agent Main {
    on start {
        yield(0);
    }
}

run Main;
"""

FIB_SG = """\
fn fib(n: Int) -> Int {
    if n < 2 {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}

agent Main {
    on start {
        print(fib(25));
        yield(0);
    }
}

run Main;
"""

LISTS_SG = """\
fn work() -> Int {
    let xs = range(0, 20000);
    let squares = map(xs, |x: Int| x * x % 1000);
    let evens = filter(squares, |x: Int| x % 2 == 0);
    let total = reduce(evens, 0, |acc: Int, x: Int| acc + x);
    let buckets: Map<Int, Int> = {};
    for i in range(0, 2000) {
        let k = i % 100;
        map_set(buckets, k, unwrap_or(map_get(buckets, k), 0) + i);
    }
    return total + sum(map_values(buckets)) + len(buckets);
}

agent Main {
    on start {
        print(work());
        yield(0);
    }
}

run Main;
"""

# The Python versions follow the Sage programs step by step (map/filter/reduce with lambdas), written the
# way a Python programmer would (the dict is updated in place).
PYTHON_SOURCE = """\
from functools import reduce


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def lists():
    xs = list(range(0, 20000))
    squares = list(map(lambda x: x * x % 1000, xs))
    evens = list(filter(lambda x: x % 2 == 0, squares))
    total = reduce(lambda acc, x: acc + x, evens, 0)
    buckets = {}
    for i in range(0, 2000):
        k = i % 100
        buckets[k] = buckets.get(k, 0) + i
    return total + sum(buckets.values()) + len(buckets)


if __name__ == "__main__":
    import sys
    print({"fib": lambda: fib(25), "lists": lists}[sys.argv[1]]())
"""

WORKLOADS = {"fib": FIB_SG, "lists": LISTS_SG}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds to time (default 5)")
    args = parser.parse_args()

    python_functions: dict = {}
    exec(compile(PYTHON_SOURCE, "<bench python>", "exec"), python_functions)
    in_process = {"fib": lambda: python_functions["fib"](25), "lists": python_functions["lists"]}

    sage = sage_command()
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-"))
    try:
        env = bench_env(scratch / "cache")
        python_script = scratch / "workloads.py"
        python_script.write_text(PYTHON_SOURCE, encoding="utf-8")
        programs = {"empty": scratch / "empty.sg"}
        programs["empty"].write_text(EMPTY_SG, encoding="utf-8")
        for name, source in WORKLOADS.items():
            programs[name] = scratch / f"{name}.sg"
            programs[name].write_text(source, encoding="utf-8")

        # Warm the AST cache and check that both languages compute the same answers.
        for name, path in programs.items():
            _, result = timed_run([*sage, "run", str(path)], env)
            require_success(f"sage run {name}.sg", result)
            if name in in_process and result.stdout.strip() != str(in_process[name]()):
                sys.exit(f"{name}: Sage printed {result.stdout.strip()!r}, Python computes {in_process[name]()!r}")

        samples: dict[str, list[float]] = {"sage empty": []}
        for name in WORKLOADS:
            for case in ("sage", "python process", "python function"):
                samples[f"{case} {name}"] = []
        for _ in range(args.runs):
            seconds, result = timed_run([*sage, "run", str(programs["empty"])], env)
            require_success("sage run empty.sg", result)
            samples["sage empty"].append(seconds)
            for name in WORKLOADS:
                seconds, result = timed_run([*sage, "run", str(programs[name])], env)
                require_success(f"sage run {name}.sg", result)
                samples[f"sage {name}"].append(seconds)
                seconds, result = timed_run([sys.executable, str(python_script), name], env)
                require_success(f"python {name}", result)
                samples[f"python process {name}"].append(seconds)
                start = time.perf_counter()
                in_process[name]()
                samples[f"python function {name}"].append(time.perf_counter() - start)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    empty = median_ms(samples["sage empty"])
    print(f"sage command: {' '.join(sage)}")
    print(f"{args.runs} interleaved rounds, medians in ms; sage run of an empty program: {empty:.1f} ms")
    print(f"{'workload':<10}{'sage':>9}{'sage-empty':>12}{'py proc':>9}{'py fn':>9}{'raw':>8}{'compute':>9}"
          f"{'target':>9}")
    for name in WORKLOADS:
        sage_ms = median_ms(samples[f"sage {name}"])
        process_ms = median_ms(samples[f"python process {name}"])
        function_ms = median_ms(samples[f"python function {name}"])
        compute_ratio = (sage_ms - empty) / function_ms
        target = TARGETS[name]
        verdict = "ok" if compute_ratio <= target else "over"
        print(f"{name:<10}{sage_ms:>9.1f}{sage_ms - empty:>12.1f}{process_ms:>9.1f}{function_ms:>9.1f}"
              f"{sage_ms / process_ms:>7.1f}x{compute_ratio:>8.1f}x{f'<= {target:g}x':>9}  {verdict}")


if __name__ == "__main__":
    main()
