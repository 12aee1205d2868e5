"""LLM request overhead: sequential `divine` turns from Sage against a plain `httpx.Client` sending the same
conversation to the same local chat-completions server.

The server (this script run with `--serve`, in its own process) answers every request at once with a fixed
completion, so what is timed is the client side: building and sending the request, reading and decoding the
answer. Each round runs the baseline (this script with `--baseline URL`: one `httpx.Client` posting TURNS
requests, timed with `perf_counter()` after a warm-up request), then the Sage program (`now_ms()` around
TURNS `divine` calls after a warm-up call); the median of the per-round ratios is reported. The target is
issue 15's bound for a model's tool loop: at most 1.3x a plain httpx client driving the same conversation.

Each round also runs the program in a project whose grove.toml configures a rate limit, a concurrency limit,
budgets and prices that the run never reaches (issue 35): every request then checks the budgets, takes from
the process's token buckets and is priced. Its target is 1.05x the same program without them (usage is
counted in both).

    python bench/llm.py [--runs N] [--turns N]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, require_success, sage_command, timed_run

TARGET = 1.3
MODEL = "bench-model"
PROMPT = "Answer in one line. " * 20
LIMITS_TARGET = 1.05
LIMITS = f"""\
[project]
entry = "main.sg"

[llm]
model = "{MODEL}"
requests_per_minute = 1000000
tokens_per_minute = 1000000000
max_concurrent_requests = 64
max_tokens_per_run = 1000000000
max_cost_per_run = 1000000

[llm.prices."{MODEL}"]
input_per_mtok = 2.5
output_per_mtok = 10
"""
REPLY = {"id": "bench", "object": "chat.completion", "model": MODEL,
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 200}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 50}}

PROGRAM = """\
agent Main {{
    on start {{
        let warm = try divine("warm-up");
        let t0 = now_ms();
        for i in range(0, {turns}) {{
            let answer = try divine("turn {{i}}: {prompt}");
        }}
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""


def serve() -> None:
    """The chat-completions server: prints its base URL, then answers until stdin closes."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = json.dumps(REPLY).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True   # headers and body go out in separate writes

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdin.read()


def baseline(url: str, turns: int) -> None:
    """The plain client: one `httpx.Client`, the bodies `divine` sends; prints its milliseconds."""
    import httpx

    headers = {"Authorization": "Bearer bench-key"}
    with httpx.Client(timeout=120) as client:
        def turn(prompt: str) -> str:
            body = {"model": MODEL, "messages": [{"role": "user", "content": prompt}]}
            response = client.post(url + "/chat/completions", json=body, headers=headers)
            response.raise_for_status()
            return response.json()["choices"][0]["message"]["content"]

        turn("warm-up")
        started = time.perf_counter()
        for i in range(turns):
            turn(f"turn {i}: {PROMPT}")
        print(f"{(time.perf_counter() - started) * 1000:.1f}")


def program_ms(label: str, command: list[str], env: dict[str, str]) -> float:
    _, result = timed_run(command, env)
    require_success(label, result)
    return float(result.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="rounds to time (default 9)")
    parser.add_argument("--turns", type=int, default=50, help="requests per round (default 50)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.baseline:
        baseline(args.baseline, args.turns)
        return

    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-llm-"))
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        env = bench_env(scratch / "cache")
        env.update(SAGE_LLM_URL=url, SAGE_API_KEY="bench-key", SAGE_MODEL=MODEL)
        program = scratch / "main.sg"
        program.write_text(PROGRAM.format(turns=args.turns, prompt=PROMPT), encoding="utf-8")
        limited = scratch / "limited"
        limited.mkdir()
        (limited / "grove.toml").write_text(LIMITS, encoding="utf-8")
        (limited / "main.sg").write_text(program.read_text(encoding="utf-8"), encoding="utf-8")
        run = [*sage_command(), "run", str(program)]
        run_limited = [*sage_command(), "run", str(limited)]
        plain = [sys.executable, __file__, "--baseline", url, "--turns", str(args.turns)]
        program_ms("sage run (warm-up)", run, env)
        program_ms("sage run with limits (warm-up)", run_limited, env)
        rounds = [(program_ms("httpx baseline", plain, env), program_ms("sage run", run, env),
                   program_ms("sage run with limits", run_limited, env)) for _ in range(args.runs)]
        pairs = [(r[0], r[1]) for r in rounds]
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)

    plain_ms = statistics.median(p[0] for p in pairs)
    sage_ms = statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[1] / p[0] for p in pairs)
    print(f"sage command: {' '.join(sage_command())}")
    print(f"{args.runs} interleaved rounds (httpx, then sagepy) of {args.turns} turns; medians in ms, "
          "ratio = median of per-round ratios")
    print(f"{'case':<14}{'httpx ms':>10}{'sage ms':>10}{'ratio':>9}{'target':>10}")
    verdict = "  ok" if ratio <= TARGET else "  over"
    print(f"{'divine turns':<14}{plain_ms:>10.1f}{sage_ms:>10.1f}{ratio:>8.2f}x{'<= ' + format(TARGET, 'g') + 'x':>10}"
          f"{verdict}")
    print("per-round ratios: " + " ".join(f"{p[1] / p[0]:.2f}" for p in pairs))
    limited_ms = statistics.median(r[2] for r in rounds)
    limits_ratio = statistics.median(r[2] / r[1] for r in rounds)
    verdict = "  ok" if limits_ratio <= LIMITS_TARGET else "  over"
    print(f"{'case':<14}{'sage ms':>10}{'limits ms':>10}{'ratio':>9}{'target':>10}")
    print(f"{'limits+budget':<14}{sage_ms:>10.1f}{limited_ms:>10.1f}{limits_ratio:>8.2f}x"
          f"{'<= ' + format(LIMITS_TARGET, 'g') + 'x':>10}{verdict}")
    print("per-round ratios: " + " ".join(f"{r[2] / r[1]:.2f}" for r in rounds))


if __name__ == "__main__":
    main()
