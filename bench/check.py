"""Cost of `sage check` on a 5,000-line program, as a ratio to `sage run examples/hello.sg`.

The program is generated: copies of one unit (a record, two enums, functions with `match` over variants,
tuples and Results, closures, and an agent) with numbered names, and an entry agent that summons a few of
the agents. Before timing, the script verifies that it checks clean (exit 0, no diagnostics) and runs.

Three commands run in turn in every round (interleaved, so machine noise hits all of them alike):
  hello   `sage run examples/hello.sg` with a warm AST cache, the floor of any sage command;
  warm    `sage check` of the program with its AST cache already populated;
  cold    `sage check` with a fresh, empty SAGE_CACHE_DIR (the 5,000 lines are parsed).
The medians and their ratios to hello are printed; target: warm <= 3.5x.

    python bench/check.py [--runs N] [--lines N]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from timing import REPO, bench_env, median_ms, require_success, sage_command, timed_run

HELLO = REPO / "examples" / "hello.sg"
WARM_TARGET = 3.5

# One unit of the generated program; `{n}` numbers every name. Doubled braces are literal braces.
UNIT = """\
record Item{n} {{
    id: Int,
    name: String,
    tags: List<String>,
    weight: Float,
}}

enum Shape{n} {{
    Circle{n}(Float),
    Rect{n}((Float, Float)),
    Named{n}(String),
    Empty{n},
}}

enum Event{n} {{
    Added{n}(Item{n}),
    Removed{n}(Int),
    Cleared{n},
}}

fn area{n}(s: Shape{n}) -> Float {{
    return match s {{
        Circle{n}(r) => 3.14159 * r * r,
        Rect{n}((w, h)) => w * h,
        Named{n}(_) => 1.0,
        Empty{n} => 0.0,
    }};
}}

fn describe{n}(e: Event{n}) -> String {{
    match e {{
        Added{n}(item) => "added {{item.name}} ({{len(item.tags)}} tags)",
        Removed{n}(id) => "removed #{{id}}",
        Cleared{n} => "cleared",
    }}
}}

fn total_weight{n}(items: List<Item{n}>) -> Float {{
    let heavy = filter(items, |i: Item{n}| i.weight > 1.5);
    return reduce(heavy, 0.0, |acc: Float, i: Item{n}| acc + i.weight);
}}

fn make_items{n}(count: Int) -> List<Item{n}> {{
    let out: List<Item{n}> = [];
    for k in range(0, count) {{
        let tags = match k % 2 == 0 {{
            true => ["even"],
            false => ["odd", "x"],
        }};
        out = push(out, Item{n} {{ id: k, name: "item{{k}}", tags: tags, weight: int_to_float(k) * 0.5 }});
    }}
    return out;
}}

fn classify{n}(value: Int) -> Result<String, String> {{
    if value < 0 {{
        return Err("negative: {{value}}");
    }}
    let label = match value % 3 {{
        0 => "fizz",
        1 => "one",
        _ => "other",
    }};
    return Ok(label);
}}

agent Worker{n} {{
    size: Int

    on start {{
        let items = make_items{n}(self.size);
        let shapes = [Circle{n}(1.0), Rect{n}((2.0, 3.0)), Named{n}("n"), Empty{n}];
        let areas = sum_floats(map(shapes, area{n}));
        let events = [Added{n}(unwrap(first(items))), Removed{n}(3), Cleared{n}];
        let text = join(map(events, describe{n}), "; ");
        let c = match classify{n}(self.size) {{
            Ok(s) => s,
            Err(m) => m,
        }};
        yield(str_len(text) + str_len(c) + float_to_int(areas + total_weight{n}(items)));
    }}

    on error(e) {{
        yield(-1);
    }}
}}

"""

MAIN = """\
agent Main {{
    on start {{
        let total = 0;
{summons}        print(total);
        yield(0);
    }}
}}

run Main;
"""


def program(units: int) -> str:
    """`units` copies of UNIT, then an entry agent that summons about five of their agents."""
    summoned = range(0, units, max(1, units // 5))
    main = MAIN.format(summons="".join(
        f"        total = total + try await summon Worker{n} {{ size: 4 }};\n" for n in summoned))
    return "".join(UNIT.format(n=n) for n in range(units)) + main


def generate(min_lines: int) -> str:
    """The smallest such program of at least `min_lines` lines."""
    units = max(1, min_lines // UNIT.count("\n") - 1)
    while (text := program(units)).count("\n") < min_lines:
        units += 1
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="rounds to time (default 10)")
    parser.add_argument("--lines", type=int, default=5000, help="size of the generated program (default 5000)")
    args = parser.parse_args()

    sage = sage_command()
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-check-"))
    try:
        program = scratch / "big.sg"
        program.write_text(generate(args.lines), encoding="utf-8")
        lines = program.read_text(encoding="utf-8").count("\n")
        check = [*sage, "check", str(program)]
        run_hello = [*sage, "run", str(HELLO)]
        warm_env = bench_env(scratch / "warm-cache")

        _, result = timed_run(check, warm_env)
        require_success("sage check of the generated program", result)
        if result.stdout.strip() != "check passed: 1 file, 0 warnings" or result.stderr:
            raise SystemExit(f"the generated program does not check clean:\n{result.stdout}{result.stderr}")
        _, result = timed_run([*sage, "run", str(program)], warm_env)
        require_success("sage run of the generated program", result)
        _, result = timed_run(run_hello, warm_env)
        require_success("sage run hello (cache warm-up)", result)

        samples: dict[str, list[float]] = {"hello": [], "warm": [], "cold": []}
        for i in range(args.runs):
            seconds, result = timed_run(run_hello, warm_env)
            require_success("sage run hello", result)
            samples["hello"].append(seconds)
            seconds, result = timed_run(check, warm_env)
            require_success("sage check (warm)", result)
            samples["warm"].append(seconds)
            seconds, result = timed_run(check, bench_env(scratch / f"cold-cache-{i}"))
            require_success("sage check (cold)", result)
            samples["cold"].append(seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    base = median_ms(samples["hello"])
    print(f"sage command: {' '.join(sage)}")
    print(f"generated program: {lines} lines, checks clean")
    print(f"{args.runs} interleaved rounds, medians:")
    print(f"{'case':<8}{'median ms':>11}{'ratio':>9}")
    print(f"{'hello':<8}{base:>11.1f}{1.0:>8.1f}x")
    for case in ("warm", "cold"):
        ms = median_ms(samples[case])
        target = f"<= {WARM_TARGET:g}x  {'ok' if ms / base <= WARM_TARGET else 'over'}" if case == "warm" else ""
        print(f"{case:<8}{ms:>11.1f}{ms / base:>8.1f}x  {target}".rstrip())


if __name__ == "__main__":
    main()
