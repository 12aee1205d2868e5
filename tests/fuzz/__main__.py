"""`python -m tests.fuzz`: a fuzz campaign by hand; exit 1 when it found internal errors or crashes."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .harness import DEFAULT_FINDINGS_DIR, Campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--count", type=int, default=1000, help="number of inputs (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="campaign seed; input i depends on (seed, i) only")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="seconds an input may take before its worker is killed (default 10)")
    parser.add_argument("--slow", type=float, default=5.0, help="checking slower than this is a finding (s)")
    parser.add_argument("--findings", type=Path, default=DEFAULT_FINDINGS_DIR,
                        help=f"where bad inputs and their reduced forms go (default {DEFAULT_FINDINGS_DIR})")
    parser.add_argument("--reduce-seconds", type=float, default=60.0,
                        help="time to spend reducing each distinct finding (default 60; 0: keep it as found)")
    parser.add_argument("--minutes", type=float, help="stop starting new inputs after this many minutes")
    args = parser.parse_args(argv)

    def progress(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    campaign = Campaign(args.workers, args.budget, args.slow, args.findings, reduce_seconds=args.reduce_seconds,
                        progress=progress)
    started = time.monotonic()
    try:
        summary = campaign.run(args.seed, args.count, args.minutes * 60 if args.minutes else None)
    finally:
        campaign.close()
    print(summary.text())
    print(f"elapsed: {time.monotonic() - started:.0f} s")
    return 1 if summary.findings("internal") or summary.findings("crash") else 0


if __name__ == "__main__":
    sys.exit(main())
