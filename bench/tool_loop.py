"""The model's tool loop: one `divine(p, tools: [Fs.exists])` whose scripted model asks for TURNS sequential
calls of a fast built-in tool, against a plain `httpx.Client` driving the same conversation with the same
local chat-completions server.

The server (this script run with `--serve`, in its own process) is stateless: it counts the tool messages in
each request and, until there are TURNS of them, answers with one call of `Fs__exists`, then with a final
text. So both clients hold the same growing conversation, send the same tools array and perform the same
TURNS calls (the baseline with `os.path.exists`). Each round runs the baseline (this script with `--baseline
URL`, timed with `perf_counter()` after a warm-up conversation of one turn), then the Sage program (`now_ms()`
around the `divine`, after a warm-up `divine` of one turn); the median of the per-round ratios is reported,
with the per-turn overhead of sagepy over the baseline. The target is issue 15's: at most 1.3x.

    python bench/tool_loop.py [--runs N] [--turns N]
"""
from __future__ import annotations

import argparse
import json
import os
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
PROMPT = "Check whether the file exists, again and again."
TOOL = {"type": "function", "function": {
    "name": "Fs__exists",
    "description": "Whether a file or directory exists. The path is relative to the working directory.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                   "additionalProperties": False},
    "strict": True}}

PROGRAM = """\
agent Main {{
    use Fs;
    on start {{
        let warm = try divine("warm-up", tools: [Fs.exists]);
        let t0 = now_ms();
        let answer = try divine("{prompt}", tools: [Fs.exists], max_steps: {turns});
        print(answer);
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""


def completion(message: dict) -> bytes:
    return json.dumps({"id": "bench", "object": "chat.completion", "model": MODEL,
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 20}}).encode()


def serve(turns: int) -> None:
    """The scripted model: prints its base URL, then answers until stdin closes. The warm-up prompt gets one
    call; any other conversation gets `turns` calls."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True   # headers and body go out in separate writes

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            messages = request["messages"]
            done = sum(1 for m in messages if m["role"] == "tool")
            wanted = 1 if messages[0]["content"] == "warm-up" else turns
            if done < wanted:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{done + 1}", "type": "function",
                     "function": {"name": "Fs__exists", "arguments": json.dumps({"path": f"file{done}.txt"})}}]}
            else:
                message = {"role": "assistant", "content": "checked"}
            body = completion(message)
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


def baseline(url: str) -> None:
    """The plain client: one `httpx.Client` driving the conversation `divine` drives; prints its ms."""
    import httpx

    headers = {"Authorization": "Bearer bench-key"}
    with httpx.Client(timeout=120) as client:
        def conversation(prompt: str) -> str:
            messages: list[dict] = [{"role": "user", "content": prompt}]
            while True:
                body = {"model": MODEL, "messages": messages, "tools": [TOOL], "tool_choice": "auto"}
                response = client.post(url + "/chat/completions", json=body, headers=headers)
                response.raise_for_status()
                message = response.json()["choices"][0]["message"]
                calls = message.get("tool_calls")
                if not calls:
                    return message["content"]
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                for call in calls:
                    path = json.loads(call["function"]["arguments"])["path"]
                    messages.append({"role": "tool", "tool_call_id": call["id"],
                                     "content": "true" if os.path.exists(path) else "false"})

        conversation("warm-up")
        started = time.perf_counter()
        answer = conversation(PROMPT)
        elapsed = (time.perf_counter() - started) * 1000
        print(answer)
        print(f"{elapsed:.1f}")


def program_ms(label: str, command: list[str], env: dict[str, str], cwd: Path) -> float:
    _, result = timed_run(command, env, cwd=cwd)
    require_success(label, result)
    answer, ms = result.stdout.split()[-2:]
    if answer != "checked":   # the conversation did not run its course: its time would mean nothing
        sys.exit(f"{label} ended with {answer!r} instead of the model's final answer")
    return float(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="rounds to time (default 9)")
    parser.add_argument("--turns", type=int, default=50, help="tool calls the model asks for (default 50)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.turns)
        return
    if args.baseline:
        baseline(args.baseline)
        return

    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-tool-loop-"))
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--turns", str(args.turns)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        env = bench_env(scratch / "cache")
        env.update(SAGE_LLM_URL=url, SAGE_API_KEY="bench-key", SAGE_MODEL=MODEL)
        program = scratch / "main.sg"
        program.write_text(PROGRAM.format(turns=args.turns, prompt=PROMPT), encoding="utf-8")
        run = [*sage_command(), "run", str(program)]
        plain = [sys.executable, __file__, "--baseline", url]
        program_ms("sage run (warm-up)", run, env, scratch)
        pairs = [(program_ms("httpx baseline", plain, env, scratch), program_ms("sage run", run, env, scratch))
                 for _ in range(args.runs)]
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)

    plain_ms = statistics.median(p[0] for p in pairs)
    sage_ms = statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[1] / p[0] for p in pairs)
    per_turn = statistics.median((p[1] - p[0]) / (args.turns + 1) for p in pairs)
    print(f"sage command: {' '.join(sage_command())}")
    print(f"{args.runs} interleaved rounds (httpx, then sagepy) of {args.turns} tool calls ({args.turns + 1} model "
          "turns); medians in ms, ratio = median of per-round ratios")
    print(f"{'case':<14}{'httpx ms':>10}{'sage ms':>10}{'ratio':>9}{'target':>10}")
    verdict = "  ok" if ratio <= TARGET else "  over"
    print(f"{'tool loop':<14}{plain_ms:>10.1f}{sage_ms:>10.1f}{ratio:>8.2f}x{'<= ' + format(TARGET, 'g') + 'x':>10}"
          f"{verdict}")
    print(f"overhead per model turn: {per_turn:.2f} ms")
    print("per-round ratios: " + " ".join(f"{p[1] / p[0]:.2f}" for p in pairs))


if __name__ == "__main__":
    main()
