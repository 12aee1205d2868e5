"""`sage lsp` latency on a 5,000-line file: didChange -> publishDiagnostics, hover and completion, against
`sage check` of the same file (SPEC §19.2: diagnostics within 0.5 s, requests within 0.2 s).

The program is bench/check.py's generated one, in a project of its own. One server is started over stdio
(pygls's client, as in tests/lsp); each round times `sage check` (warm AST cache), then one edit (a comment
line added or removed inside a function, alternately, so every round analyses a new text) from sending
didChange to receiving its diagnostics, then a hover on a name and a completion of a name prefix on the
analysed text; then an edit that leaves a syntax error in that function (`let = ;`), timed the same way to
its diagnostics, and the edit undone. Medians are printed, and their ratios to `sage check`.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from check import generate
from timing import REPO, bench_env, require_success, sage_command, timed_run

sys.path.insert(0, str(REPO / "tests" / "lsp"))
from client import SageClient  # noqa: E402  (the tests' client: pygls's LanguageClient over stdio)

TARGET_DIAGNOSTICS_S = 0.5
TARGET_REQUEST_S = 0.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="rounds to time (default 10)")
    parser.add_argument("--lines", type=int, default=5000, help="size of the generated file (default 5000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "grove.toml").write_text('[project]\nname = "bench"\nentry = "main.sg"\n')
        text = generate(args.lines)
        (root / "main.sg").write_text(text)
        env = bench_env(Path(tmp) / "cache")
        check = sage_command() + ["check", str(root / "main.sg")]
        require_success("sage check", timed_run(check, env)[1])
        lines = text.split("\n")
        edit_line = next(i for i, line in enumerate(lines) if line.startswith("fn ")) + 1
        name_line = next(i for i, line in enumerate(lines) if "let " in line and i > len(lines) // 2)
        name_col = lines[name_line].index("let ") + 4
        client = SageClient(root, env)
        try:
            mark = client.mark()
            client.open("main.sg", text)
            client.wait_diagnostics("main.sg", mark, timeout=300)
            checks, diags, broken, hovers, completions = [], [], [], [], []
            for n in range(args.runs):
                checks.append(timed_run(check, env)[0])
                edited = list(lines)
                if n % 2 == 0:
                    edited.insert(edit_line, "    // edited")
                current = "\n".join(edited)
                mark = client.mark()
                start = time.perf_counter()
                client.change("main.sg", current)
                client.wait_diagnostics("main.sg", mark, timeout=300)
                diags.append(client.published[-1][0] - start)
                line = name_line + (1 if n % 2 == 0 else 0)
                start = time.perf_counter()
                hover = client.hover("main.sg", line, name_col)
                hovers.append(time.perf_counter() - start)
                start = time.perf_counter()
                items = client.completion("main.sg", line, name_col + 1)
                completions.append(time.perf_counter() - start)
                if hover is None or not items.items:
                    sys.exit("hover or completion found nothing: the benchmark would time an empty answer")
                mark = client.mark()
                start = time.perf_counter()
                client.change("main.sg", "\n".join(edited[:edit_line] + ["    let = ;"] + edited[edit_line:]))
                found = client.wait_diagnostics("main.sg", mark, timeout=300)
                broken.append(client.published[-1][0] - start)
                if not any(d.code == "E005" for d in found):
                    sys.exit("the syntax error was not reported: the benchmark would time another analysis")
                mark = client.mark()
                client.change("main.sg", current)   # undone, and analysed before the next round starts
                client.wait_diagnostics("main.sg", mark, timeout=300)
        finally:
            client.close()
    check_s = statistics.median(checks)
    rows = [("sage check (whole process)", check_s, None), ("didChange -> publishDiagnostics", statistics.median(diags),
            TARGET_DIAGNOSTICS_S), ("... with a syntax error", statistics.median(broken), TARGET_DIAGNOSTICS_S),
            ("hover", statistics.median(hovers), TARGET_REQUEST_S),
            ("completion", statistics.median(completions), TARGET_REQUEST_S)]
    print(f"{len(lines)} lines, {args.runs} rounds (medians)")
    for label, seconds, target in rows:
        verdict = "" if target is None else f"  target <= {target:.1f} s: {'met' if seconds <= target else 'MISSED'}"
        print(f"  {label:34} {seconds * 1000:8.0f} ms  {seconds / check_s:5.2f}x sage check{verdict}")


if __name__ == "__main__":
    main()
